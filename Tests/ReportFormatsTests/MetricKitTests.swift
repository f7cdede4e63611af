import Foundation
import ReportFormats
import ReportModel
import TestSupport
import Testing

/// Per diagnostic of a MetricKit payload, in document order: its section, the distinct binaries
/// its frames name, its call stacks and its frames, walked with JSONSerialization.
func metricKitExpectedCounts(_ data: Data) throws -> [(section: String, images: Int, threads: Int, frames: Int)] {
    let payload = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let text = String(decoding: data, as: UTF8.self)
    // Sections in the order the file writes them (a dictionary forgets it).
    let sections = payload.keys.filter { $0.hasSuffix("Diagnostics") }
        .sorted { text.range(of: "\"\($0)\"")!.lowerBound < text.range(of: "\"\($1)\"")!.lowerBound }
    var out: [(String, Int, Int, Int)] = []
    for section in sections {
        for diagnostic in payload[section] as? [[String: Any]] ?? [] {
            let tree = diagnostic["callStackTree"] as? [String: Any] ?? [:]
            let stacks = tree["callStacks"] as? [[String: Any]] ?? []
            var uuids: Set<String> = []
            var frames = 0
            var pending = stacks.flatMap { $0["callStackRootFrames"] as? [[String: Any]] ?? [] }
            while let frame = pending.popLast() {
                frames += 1
                if let uuid = frame["binaryUUID"] as? String { uuids.insert(uuid) }
                pending += frame["subFrames"] as? [[String: Any]] ?? []
            }
            out.append((section, uuids.count, stacks.count, frames))
        }
    }
    return out
}

@Suite struct MetricKitTests {
    static let samples = ["metrickit/xcode-simulated-ios14.json", "metrickit/xcode-simulated-macos13.json", "metrickit/ios-uncaught-exception.json"]

    /// Every payload splits into one document per diagnostic; crashes and hangs parse, with the
    /// counts the JSON holds; the other kinds are refused by name.
    @Test(arguments: samples)
    func payloadsSplitAndCountAsTheJSONSays(_ path: String) throws {
        let data = try wildSample(path)
        let expected = try metricKitExpectedCounts(data)
        #expect(FormatRegistry.standard.detect(data)?.id == "metrickit")
        let parts = try FormatRegistry.standard.detectAndParseAll(data)
        #expect(parts.count == expected.count)
        for (part, want) in zip(parts, expected) {
            switch want.section {
            case "crashDiagnostics", "hangDiagnostics":
                let report = try part.outcome.get()
                #expect(report.images.count == want.images, "\(path) \(want.section)")
                if want.section == "crashDiagnostics" {
                    #expect(report.kind == .crash)
                    #expect(report.threads.count == want.threads)
                    #expect(report.threads.reduce(0) { $0 + $1.frames.count } == want.frames)
                } else {
                    #expect(report.kind == .lag)
                    #expect(report.lag?.profile.count == want.frames)
                }
                // A part re-parses from its own stored bytes to the same report.
                #expect(try FormatRegistry.standard.parse(part.data, format: part.format) == report)
            default:
                guard case .failure(let error) = part.outcome else {
                    Issue.record("\(path): \(want.section) was stored")
                    continue
                }
                #expect(error.description.contains("not a crash or hang"), "\(error)")
            }
        }
    }

    /// Xcode's simulated iOS 14 payload, field by field as the file writes it.
    @Test func simulatedCrashAndHangCarryTheirMetadata() throws {
        let parts = try FormatRegistry.standard.detectAndParseAll(try wildSample("metrickit/xcode-simulated-ios14.json"))
        let crash = try parts[0].outcome.get()
        // "exceptionType" : 1, "signal" : 11, "terminationReason" : "Namespace SIGNAL, Code 0xb"
        #expect(crash.exception?.type == "EXC_BAD_ACCESS")
        #expect(crash.exception?.signal == "SIGSEGV")
        #expect(crash.exception?.message?.split(separator: "\n").first == "Namespace SIGNAL, Code 0xb")
        #expect(crash.exception?.faultAddress == Address(0))  // "0 is not in any region."
        #expect(crash.os == "iPhone OS 14.0.1 (18A393)")
        #expect(crash.platform == "iOS")
        #expect(crash.arch == "arm64")
        #expect(crash.app?.version == "1.0" && crash.app?.build == "1")
        // "binaryUUID" : "CDB53DDB-…", "binaryName" : "testBinaryName", "offsetIntoBinaryTextSegment" : 123, "address" : 74565
        let image = try #require(crash.images.first)
        #expect(image.name == "testBinaryName")
        #expect(image.id?.hex == "cdb53ddb23374933b62f4356e6174af0")
        let frame = try #require(crash.threads.first?.frames.first)
        #expect(frame.address.value == 74565, "the device's address is kept")
        #expect(frame.address.value - image.loadAddress.value == 123, "address − load is the offset")
        #expect(crash.threads.first?.crashed == true)

        let hang = try parts[1].outcome.get()
        #expect(hang.kind == .lag)
        // "sampleCount" : 20, "hangDuration" : "20 secs."
        #expect(hang.lag?.profile == [ProfileNode(depth: 0, count: 20, costTime: 20_000, address: Address(74565))])
    }

    /// The real iOS 14.0.1 payload: the crashed stack is a chain whose root is the top frame and
    /// whose deepest frame is libdyld's `start`; iOS 14.0 wrote load addresses as offsets.
    @Test func realCrashPayloadKeepsItsStacks() throws {
        let report = try FormatRegistry.standard.detectAndParse(try wildSample("metrickit/ios-uncaught-exception.json"))
        let crashed = try #require(report.threads.first { $0.crashed })
        #expect(crashed.index == 0)
        let names = crashed.frames.map { report.images[$0.imageIndex!].name }
        #expect(names.first == "MetricKitTest")
        #expect(names.last == "libdyld.dylib")
        #expect(names.count == 31)
        #expect(report.warnings.contains { $0.contains("iOS 14.0") })
        // Each frame lies at its image's start plus its offset.
        for frame in crashed.frames {
            let image = report.images[frame.imageIndex!]
            #expect(image.contains(frame.address.value))
        }
    }

    /// A hang's call tree (root outermost, sampleCount per node) becomes the lag profile in pre-order.
    @Test func hangTreeBecomesTheProfile() throws {
        let payload = """
            {"timeStampBegin": "2024-05-01 10:00:00", "hangDiagnostics": [{
              "callStackTree": {"callStackPerThread": true, "callStacks": [{"threadAttributed": true, "callStackRootFrames": [
                {"binaryUUID": "AE3C9338-0166-397A-9643-356B14F6EE58", "binaryName": "dyld", "offsetIntoBinaryTextSegment": 100, "sampleCount": 10,
                 "subFrames": [
                   {"binaryUUID": "34769225-FA99-307E-9530-549AE6C3EC6F", "binaryName": "Demo", "offsetIntoBinaryTextSegment": 16384, "sampleCount": 7,
                    "subFrames": [{"binaryUUID": "34769225-FA99-307E-9530-549AE6C3EC6F", "binaryName": "Demo", "offsetIntoBinaryTextSegment": 20000, "sampleCount": 7}]},
                   {"binaryUUID": "34769225-FA99-307E-9530-549AE6C3EC6F", "binaryName": "Demo", "offsetIntoBinaryTextSegment": 24000, "sampleCount": 3}]}]}]},
              "diagnosticMetaData": {"hangDuration": "2 sec", "bundleIdentifier": "com.example.demo", "appVersion": "2.1", "platformArchitecture": "arm64e"}}]}
            """
        let report = try FormatRegistry.standard.detectAndParse(Data(payload.utf8))
        #expect(report.kind == .lag)
        #expect(report.app?.name == "com.example.demo")
        let profile = try #require(report.lag?.profile)
        #expect(profile.map(\.depth) == [0, 1, 2, 1])
        #expect(profile.map(\.count) == [10, 7, 7, 3])
        // 2 s over the root's 10 samples: 200 ms a sample.
        #expect(profile.map(\.costTime) == [2000, 1400, 1400, 600])
        let dyld = try #require(report.images.first { $0.name == "dyld" })
        let demo = try #require(report.images.first { $0.name == "Demo" })
        #expect(profile.map { $0.address!.value } == [dyld.loadAddress.value + 100, demo.loadAddress.value + 16384, demo.loadAddress.value + 20000, demo.loadAddress.value + 24000])
        // Synthetic layout: no two images overlap, and every address is below 2^36 (arm64e masking).
        #expect(!dyld.contains(demo.loadAddress.value) && !demo.contains(dyld.loadAddress.value))
        #expect(profile.allSatisfy { $0.address!.value < 1 << 36 })
    }

    /// A stack deeper than Foundation's decoders may take (two JSON levels per frame) still parses.
    @Test func aDeepStackParsesWithoutRecursion() throws {
        let depth = 5000
        var json = ""
        for i in 0..<depth {
            json += #"{"binaryUUID": "34769225-FA99-307E-9530-549AE6C3EC6F", "binaryName": "Demo", "offsetIntoBinaryTextSegment": \#(i * 4), "sampleCount": 1"#
            json += i == depth - 1 ? "}" : #", "subFrames": ["#
        }
        json += String(repeating: "]}", count: depth - 1)
        let payload = #"{"crashDiagnostics": [{"callStackTree": {"callStacks": [{"threadAttributed": true, "callStackRootFrames": [\#(json)]}]}, "diagnosticMetaData": {"signal": 11}}]}"#
        let report = try FormatRegistry.standard.detectAndParse(Data(payload.utf8))
        #expect(report.threads.first?.frames.count == depth)
        #expect(report.threads.first?.frames.last?.address.value == report.images[0].loadAddress.value + UInt64((depth - 1) * 4))
    }

    @Test func brokenJSONIsAnErrorWithItsPlace() throws {
        let payload = Data("{\"crashDiagnostics\": [{\"callStackTree\": {\"callStacks\": [}]}\n".utf8)
        // Column 57 is the "}" right after "[".
        #expect(throws: ReportParseError.invalidJSON("expected a value", line: 1, column: 57)) {
            try MetricKitFormat().parse(payload)
        }
    }
}
