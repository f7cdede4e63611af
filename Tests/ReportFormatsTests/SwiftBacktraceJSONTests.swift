import Foundation
import ReportFormats
import ReportRendering
import ReportModel
import TestSupport
import Testing

/// The runtime's own JSON, decoded generically, for cross-checking the parser.
func runtimeJSON(_ data: Data) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

@Suite(.serialized) struct SwiftBacktraceJSONTests {
    let format = SwiftBacktraceJSONFormat()

    @Test func parsesARealUnsymbolicatedReport() throws {
        let data = try CrashFixture.shared.report(symbolicate: "off")
        #expect(format.matches(data))
        #expect(FormatRegistry.standard.detect(data)?.id == "swift-backtrace-json")
        let report = try format.parse(data)
        #expect(report.format == "swift-backtrace-json")
        #expect(report.kind == .crash)
        #expect(report.arch == "x86_64")

        let binary = try CrashFixture.shared.binary()
        let demo = try #require(report.images.first { $0.path == binary })
        #expect(demo.id?.hex == (try readelfBuildID(binary)))
        #expect(demo.size ?? 0 > 0)
        #expect(report.app?.name == "Demo")

        let crashed = try #require(report.threads.first { $0.crashed })
        #expect(crashed.frames.first?.kind == .pc)
        #expect(crashed.frames.dropFirst().allSatisfy { $0.kind == .returnAddress })
        // lookUp, total, process and main run in the demo binary.
        #expect(crashed.frames.filter { demo.contains($0.address.value) }.count >= 4)

        // Every frame the runtime listed with an address is kept, in order.
        let json = try runtimeJSON(data)
        let threads = try #require(json["threads"] as? [[String: Any]])
        for (thread, parsed) in zip(threads, report.threads) {
            let addresses = (thread["frames"] as? [[String: Any]] ?? []).compactMap { $0["address"] as? String }
            #expect(parsed.frames.map(\.address) == addresses.compactMap { Address(parsing: $0) })
        }
        #expect(report.warnings.contains { $0.contains("truncated") || $0.contains("omitted") || $0.contains("images") })
    }

    @Test func symbolicatedReportParsesToTheSameRawFrames() throws {
        let off = try format.parse(try CrashFixture.shared.report(symbolicate: "off"))
        let fullData = try CrashFixture.shared.report(symbolicate: "full")
        let full = try format.parse(fullData)
        let offThread = try #require(off.threads.first { $0.crashed })
        let fullThread = try #require(full.threads.first { $0.crashed })
        #expect(offThread.frames.count == fullThread.frames.count)
        #expect(offThread.frames.map(\.kind) == fullThread.frames.map(\.kind))

        // ASLR moves images between runs; image-relative addresses must not move.
        func relative(_ report: RawReport, _ thread: RawThread) -> [String] {
            thread.frames.map { frame in
                guard let image = report.images.first(where: { $0.contains(frame.address.value) }) else { return "?" }
                return "\(image.name)+\(frame.address.value - image.loadAddress.value)"
            }
        }
        #expect(relative(off, offThread) == relative(full, fullThread))

        // The runtime's own attribution of each frame to an image agrees with our image ranges.
        let json = try runtimeJSON(fullData)
        let thread = try #require((json["threads"] as? [[String: Any]])?.first { $0["crashed"] as? Bool == true })
        let runtimeImages = (thread["frames"] as? [[String: Any]] ?? [])
            .filter { $0["address"] != nil && $0["inlined"] as? Bool != true }
            .map { $0["image"] as? String ?? "?" }
        let ours = fullThread.frames.map { f in full.images.first { $0.contains(f.address.value) }?.name ?? "?" }
        #expect(ours == runtimeImages)
    }

    @Test func segfaultReportCarriesFaultAddress() throws {
        let report = try format.parse(try CrashFixture.shared.report(symbolicate: "off", mode: "segv"))
        #expect(report.exception?.faultAddress == Address(8))
        #expect(report.threads.contains { $0.crashed })
    }

    @Test func malformedJSONIsReportedWithLineAndColumn() throws {
        let data = try CrashFixture.shared.report(symbolicate: "off")
        var text = String(decoding: data, as: UTF8.self)
        // Break the JSON at the first "frames" array, independently locating line and column.
        let target = try #require(text.range(of: "\"frames\": ["))
        text.replaceSubrange(target, with: "\"frames\": [,")
        let prefix = text[..<target.upperBound]
        let expectedLine = prefix.split(separator: "\n", omittingEmptySubsequences: false).count
        let lastLine = prefix.split(separator: "\n", omittingEmptySubsequences: false).last ?? ""
        let expectedColumn = lastLine.count + 1

        #expect(throws: ReportParseError.self) { try format.parse(Data(text.utf8)) }
        do {
            _ = try FormatRegistry.standard.detectAndParse(Data(text.utf8))
            Issue.record("malformed JSON was accepted")
        } catch {
            guard case .invalidJSON(_, let line, let column) = error else {
                Issue.record("expected invalidJSON, got \(error)")
                return
            }
            #expect(line == expectedLine)
            #expect(column == expectedColumn)
            #expect(error.description.contains("line \(expectedLine), column \(expectedColumn)"))
        }
    }

    @Test func lineAndColumnOnAMultiLineDocument() throws {
        let text = "{\n  \"kind\": \"crashReport\",\n  \"threads\": [1, 2,, 3]\n}"
        do {
            _ = try FormatRegistry.standard.detectAndParse(Data(text.utf8))
            Issue.record("accepted")
        } catch {
            #expect(error == .invalidJSON("Invalid value", line: 3, column: 20))
        }
    }

    @Test func refusesUnrecognisedInput() throws {
        #expect(throws: ReportParseError.formatNotDetected("not a known report format")) {
            try FormatRegistry.standard.detectAndParse(Data("Incident Identifier: nope\n".utf8))
        }
        #expect(throws: ReportParseError.self) {
            try FormatRegistry.standard.detectAndParse(Data("{\"hello\": \"world\"}".utf8))
        }
        #expect(throws: ReportParseError.formatNotDetected("input is empty")) {
            try FormatRegistry.standard.detectAndParse(Data())
        }
    }

    @Test func missingFieldNamesItsPath() throws {
        let data = try CrashFixture.shared.report(symbolicate: "off")
        let text = String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\"baseAddress\"", with: "\"base\"")
        #expect(throws: ReportParseError.invalidReport(format: "swift-backtrace-json", reason: "images[0].baseAddress: missing")) {
            try format.parse(Data(text.utf8))
        }
    }
}

@Suite struct RendererTests {
    func sample() -> SymbolicatedReport {
        SymbolicatedReport(
            id: 7, format: "swift-backtrace-json", kind: .crash, status: .partial,
            // b521f25fdeacf504eca83d97c7308e8fc11be729
            missingBuildIds: [BuildID(bytes: [0xb5, 0x21, 0xf2, 0x5f, 0xde, 0xac, 0xf5, 0x04, 0xec, 0xa8, 0x3d, 0x97, 0xc7, 0x30, 0x8e, 0x8f, 0xc1, 0x1b, 0xe7, 0x29])],
            exception: ExceptionInfo(type: "Illegal instruction", faultAddress: 0x1000),
            threads: [
                SymbolicatedThread(index: 0, name: "main", crashed: true, frames: [
                    SymbolicatedFrame(
                        index: 0, address: 0x7f00_0000_1234, kind: .pc, image: "libswiftCore.so", status: .missingDebugFile),
                    SymbolicatedFrame(
                        index: 1, address: 0x5555_0000_1fa, kind: .returnAddress, image: "Demo", status: .symbolicated,
                        function: "inner()", file: "/src/Demo.swift", line: 3, column: 9, inlined: true),
                    SymbolicatedFrame(
                        index: 1, address: 0x5555_0000_1fa, kind: .returnAddress, image: "Demo", status: .symbolicated,
                        function: "lookUp(_:at:)", offset: 57, file: "/src/Demo.swift", line: 10, column: 24),
                ]),
            ])
    }

    @Test func textHasOneLinePerFrameAndInlineLevel() {
        let lines = TextReportRenderer.render(sample()).split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("Thread 0 \"main\" crashed:") })
        let frameLines = lines.filter { $0.contains("0x00") }
        #expect(frameLines.count == 3)
        #expect(frameLines[0].hasPrefix("0   libswiftCore.so"))
        #expect(frameLines[0].contains("0x00007f0000001234"))
        #expect(frameLines[1].contains("[inlined] inner() at /src/Demo.swift:3:9"))
        #expect(frameLines[2].hasPrefix("1   Demo"))
        #expect(frameLines[2].hasSuffix("lookUp(_:at:) + 57 at /src/Demo.swift:10:24"))
    }

    @Test func jsonHasTheDocumentedKeysAndRoundTrips() throws {
        let text = try JSONReportRenderer.render(sample())
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        for key in ["id", "format", "kind", "status", "missingBuildIds", "threads"] {
            #expect(object[key] != nil, "missing key \(key)")
        }
        let thread = try #require((object["threads"] as? [[String: Any]])?.first)
        for key in ["index", "name", "crashed", "frames"] { #expect(thread[key] != nil, "missing key \(key)") }
        #expect(text.hasPrefix("{\n  \"id\": 7,\n  \"format\": "))
        let decoded = try JSONDecoder().decode(SymbolicatedReport.self, from: Data(text.utf8))
        #expect(decoded == sample())
    }
}
