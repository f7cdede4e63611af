import ServiceRuntime
import Testing
import WorkerProtocol

/// `StacklineEnvironment` reads each variable as its documentation says: the expected values are
/// the dictionaries the tests write.
@Suite struct StacklineEnvironmentTests {
    @Test func everyVariableLandsInItsField() throws {
        let given = [
            "STACKLINE_DB": "/d.sqlite", "STACKLINE_SYMBOLS": "/s", "STACKLINE_WORKER": "/w", "STACKLINE_GROUPING_RULES": "/g.json",
            "STACKLINE_ALERTS": "/a.json", "STACKLINE_SERVER": "https://m:8080", "STACKLINE_TOKEN": "t0k",
            "STACKLINE_MAX_FRAME_BYTES": "4096", "STACKLINE_UNZIP_MAX_BYTES": "5", "STACKLINE_SYMBOLS_MAX_UPLOAD_BYTES": "6",
            "TMPDIR": "/scratch", "STACKLINE_TEST_HOOKS": "1", "STACKLINE_FUZZ_TARGET": "zip", "STACKLINE_FUZZ_VALID_UTF8_ONLY": "1",
            "SMTP_PASSWORD": "secret",
        ]
        let e = StacklineEnvironment(given)
        #expect(e.database == "/d.sqlite" && e.symbols == "/s" && e.worker == "/w" && e.groupingRules == "/g.json")
        #expect(e.alerts == "/a.json" && e.server == "https://m:8080" && e.token == "t0k")
        #expect(e.maxFrameBytes == "4096" && e.unpackMaxBytes == "5" && e.uploadMaxBytes == "6")
        #expect(e.temporaryDirectory == "/scratch" && e.testHooks && e.fuzzTarget == "zip" && e.fuzzValidUTF8Only)
        #expect(e.variables == given, "alert rules name their own variables: the whole environment is kept")
        #expect(try e.maxFrame() == 4096)
        #expect(given[StacklineEnvironment.groupingRulesVariable] == e.groupingRules)
    }

    @Test func emptyAndMissingValuesTakeTheDefaults() throws {
        for given in [[:], ["STACKLINE_DB": "", "STACKLINE_SYMBOLS": "", "TMPDIR": "", "STACKLINE_MAX_FRAME_BYTES": "", "STACKLINE_TOKEN": ""]] {
            let e = StacklineEnvironment(given)
            #expect(e.database == nil && e.symbols == nil && e.token == nil && e.maxFrameBytes == nil)
            #expect(e.temporaryDirectory == "/tmp")
            #expect(!e.testHooks && !e.fuzzValidUTF8Only)
            #expect(try e.maxFrame() == Framing.defaultMaxFrame)
        }
        // Only "1" turns a switch on.
        #expect(!StacklineEnvironment(["STACKLINE_TEST_HOOKS": "yes", "STACKLINE_FUZZ_VALID_UTF8_ONLY": "true"]).testHooks)
    }

    @Test func anUnusableFrameLimitIsNamed() throws {
        for bad in ["lots", "0", "1023", "4294967296", "-1"] {
            #expect(throws: FrameLimitError.self) { try StacklineEnvironment(["STACKLINE_MAX_FRAME_BYTES": bad]).maxFrame() }
            do {
                _ = try StacklineEnvironment(["STACKLINE_MAX_FRAME_BYTES": bad]).maxFrame()
            } catch {
                #expect(error.description.hasPrefix("STACKLINE_MAX_FRAME_BYTES=\(bad) is not a whole number of bytes"))
            }
        }
        #expect(try StacklineEnvironment(["STACKLINE_MAX_FRAME_BYTES": "1024"]).maxFrame() == 1024)
    }
}
