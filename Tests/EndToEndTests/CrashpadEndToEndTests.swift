import Foundation
import TestSupport
import Testing

/// Real Crashpad minidumps (issue 34 §1): Debian's Chromium, its renderer crashed by a null
/// write (`chrome://crash`), written by Chromium's own Crashpad handler
/// (scripts/crashpad-dump.py). `stackline serve` reads the dump's Crashpad streams and unwinds
/// it; LLDB reading the same dump with the same files is the independent unwinder, and what
/// Crashpad itself wrote (the report's file name, its settings file's client id, the switches
/// the test passed) is the oracle for the annotations.
@Suite(.serialized) struct CrashpadEndToEndTests {
    static let chromium = "/usr/lib/chromium/chromium"
    /// LLDB finds the dump's bare module names (`libc.so.6`) in these, and reads no debug file
    /// from elsewhere (its inlined frames from libc's separate debug info are no machine frames).
    static let lldbSettings = [
        "symbols.enable-external-lookup false",
        "target.exec-search-paths /usr/lib/chromium /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu",
    ]

    /// Crashes a renderer and returns the dump Crashpad wrote.
    static func crash(in dir: String) throws -> String {
        let out = try runProcess("/usr/bin/python3", [TestPaths.packageRoot + "/scripts/crashpad-dump.py", dir], timeout: 180)
        guard out.status == 0, let path = out.stdout.split(separator: "\n").last.map(String.init) else {
            throw TestSupportError("crashpad-dump.py: \(out.summary)")
        }
        return path
    }

    /// Crashpad's GUID byte order (three little-endian fields, then eight bytes) in text form.
    static func guid(_ b: [UInt8]) -> String {
        let ordered = [b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6]] + b[8..<16]
        let hex = ordered.map { String(format: "%02x", $0) }.joined()
        var out = ""
        for (i, c) in hex.enumerated() {
            if [8, 12, 16, 20].contains(i) { out += "-" }
            out.append(c)
        }
        return out
    }

    /// The report id in the dump's Crashpad stream (type 0x43500001, the id 4 bytes in), read by
    /// the test from the minidump layout.
    static func reportID(_ bytes: [UInt8]) throws -> String {
        func u32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        let streams = u32(8), directory = u32(12)
        let entry = try #require((0..<streams).map { directory + 12 * $0 }.first { u32($0) == 0x4350_0001 })
        let rva = u32(entry + 8)
        return guid(Array(bytes[rva + 4..<rva + 20]))
    }

    /// Every frame of ours is one LLDB found, in its order; or LLDB gave up where we went on.
    static func agrees(_ ours: [UInt64], _ lldb: [UInt64]) -> Bool {
        var rest = lldb[...]
        let subsequence = ours.allSatisfy { address in
            guard let at = rest.firstIndex(of: address) else { return false }
            rest = rest[(at + 1)...]
            return true
        }
        return subsequence || (ours.starts(with: lldb) && !lldb.isEmpty)
    }

    @Test func chromiumsOwnCrashpadDumpIsReadUnwoundAndAnnotated() throws {
        let h = try Harness()
        let crashpadDir = h.dir.file("crashpad-client")
        let path = try Self.crash(in: crashpadDir)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        // The test's reading of Crashpad's GUIDs is checked against Crashpad's own: the report's
        // file name is its id.
        let fileName = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        #expect(try Self.reportID(bytes) == fileName)
        // Crashpad's settings file: magic, version, options, padding, last upload time, then the
        // client id at 24.
        let settings = [UInt8](try Data(contentsOf: URL(fileURLWithPath: crashpadDir + "/crashpad/settings.dat")))
        let clientID = Self.guid(Array(settings[24..<40]))

        let dump = MinidumpEndToEndTests.Dump(program: Self.chromium, path: path)
        let expected = try MinidumpEndToEndTests.lldbFrames(dump, settings: Self.lldbSettings)
        let modules = try MinidumpEndToEndTests.modulesInFrames(dump, settings: Self.lldbSettings)
        #expect(modules.contains(Self.chromium), "\(modules)")
        for file in modules {
            #expect(try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, file]).status == 0, "\(file)")
        }
        let ingest = try h.token("ingest")
        let read = try h.token("read")
        let server = try h.startServer(Harness.nativeDumpServer)
        let test = MinidumpEndToEndTests()
        let posted = try MinidumpEndToEndTests.post(server, Data(bytes), token: ingest)
        let id = try #require(posted.json?["id"] as? Int, "\(posted)")
        let report = try test.processed(server, id, token: read)
        #expect(report["format"] as? String == "minidump")

        // The crash: chrome://crash writes through a null pointer on the renderer's main thread.
        let exception = report["exception"] as? [String: Any]
        #expect(exception?["signal"] as? String == "SIGSEGV")
        #expect(exception?["faultAddress"] as? String == "0x0")
        let threads = MinidumpEndToEndTests.frames(report)
        #expect(threads.count == expected.count, "\(threads.count) threads, LLDB \(expected.count)")
        let crashed = (report["threads"] as? [[String: Any]])?.firstIndex { $0["crashed"] as? Bool == true }
        #expect(crashed == 0)
        // The crashed thread starts where it crashed (the exception stream's context, not the
        // thread list's, which Crashpad takes inside its signal handler) and reaches `_start`
        // as LLDB's walk does.
        #expect(threads.first?.first?.address == expected.first?.first)
        #expect(threads.first?.last?.address == expected.first?.last)
        #expect(threads.first?.last?.function == "_start", "\(threads.first?.map(\.function) ?? [])")
        var same = 0
        for (ours, lldb) in zip(threads, expected) {
            let addresses = ours.map(\.address)
            #expect(addresses.first == lldb.first)
            #expect(Self.agrees(addresses, lldb), "ours \(addresses.map { String($0, radix: 16) }) LLDB \(lldb.map { String($0, radix: 16) })")
            if addresses == lldb { same += 1 }
        }
        #expect(same * 2 >= expected.count, "\(same) of \(expected.count) threads equal LLDB's")

        // The annotations: the handler's process annotations, and the renderer's own.
        let annotations = (report["annotations"] as? [[String: Any]]) ?? []
        func value(_ key: String, module: String?) -> String? {
            annotations.first { $0["key"] as? String == key && $0["module"] as? String == module }?["value"] as? String
        }
        let version = try runProcess(Self.chromium, ["--version"]).stdout.split(separator: " ").first { $0.first?.isNumber == true }.map(String.init)
        #expect(value("ver", module: nil) == version, "\(annotations)")
        #expect(value("ptype", module: "chromium") == "renderer")
        // The renderer's pid: its main thread's id, which the dump's thread list names.
        let pid = try #require(value("pid", module: "chromium"))
        #expect((report["threads"] as? [[String: Any]])?.first?["name"] as? String == "chromium (thread \(pid))")
        let switches = annotations.filter { ($0["key"] as? String)?.hasPrefix("switch-") == true }.compactMap { $0["value"] as? String }
        #expect(switches.contains("--no-sandbox") && switches.contains("--remote-debugging-pipe"), "\(switches)")
        let app = report["app"] as? [String: Any]
        #expect(app?["version"] as? String == version)
        // Shown on the page and in text, escaped as any report text is.
        let page = String(decoding: try server.curl("GET", "/reports/\(id)", token: read).body, as: UTF8.self)
        #expect(page.contains("data-k=\"annotation:ptype\">renderer</td>"))
        let text = String(decoding: try server.curl("GET", "/api/v1/reports/\(id)?format=text", token: read).body, as: UTF8.self)
        #expect(text.contains("[chromium] ptype = renderer"))

        // A second crash from the same Crashpad database is the same installation: the client id
        // is the report's device key, so both count as one user.
        let again = try Self.crash(in: crashpadDir)
        let second = try #require(try MinidumpEndToEndTests.post(server, try Data(contentsOf: URL(fileURLWithPath: again)), token: ingest).json?["id"] as? Int)
        _ = try test.processed(server, second, token: read)
        let search = try server.curl("GET", "/api/v1/reports?where=" + "user=\(clientID)".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!, token: read)
        let found = ((search.json?["reports"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? Int }
        #expect(Set(found) == [id, second], "\(search)")
    }
}
