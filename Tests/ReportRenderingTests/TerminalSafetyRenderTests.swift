import Foundation
import ReportRendering
import ReportModel
import TestSupport
import Testing

/// A symbolicated report whose every string field is `text`: crash threads, lag samples and a
/// three-level profile tree, so each renderer prints every field at least once.
private func report(every text: String) -> SymbolicatedReport {
    func frame(_ index: Int, _ address: UInt64, inlined: Bool = false) -> SymbolicatedFrame {
        SymbolicatedFrame(
            index: index, address: Address(address), kind: index == 0 ? .pc : .returnAddress, image: text,
            imageOffset: Address(address - 0x1000), status: .symbolicated, symbol: text, function: text,
            offset: inlined ? nil : 4, file: "/src/" + text, line: 7, column: 3, inlined: inlined, inApp: true)
    }
    let frames = [frame(0, 0x1010, inlined: true), frame(0, 0x1010), frame(1, 0x1020)]
    // Unresolved frames take the Apple renderer's `0xLOAD + offset` path, found by image name.
    var unresolved = frame(2, 0x1030)
    unresolved.function = nil
    unresolved.symbol = nil
    unresolved.file = nil
    unresolved.status = .missingDebugFile
    return SymbolicatedReport(
        // A build id is hex by type: the missing line's image name and path carry the text.
        id: 7, format: "kscrash", kind: .lag, status: .partial, missingBuildIds: [BuildID(bytes: [0xab, 0x12])],
        app: AppInfo(name: text, version: text, build: text), os: text, arch: Arch(text), timestamp: text,
        exception: ExceptionInfo(type: text, signal: text, code: text, faultAddress: Address(0x10), message: text),
        images: [BinaryImage(name: text, path: text, id: BuildID(bytes: [0xab, 0x12]), arch: Arch(text), loadAddress: Address(0x1000), size: 0x1000)],
        // The symbol section prints the image's name, its reason and the stores searched.
        imageSymbols: [ImageSymbols(image: 0, name: text, buildId: BuildID(bytes: [0xab, 0x12]), status: .notFound, detail: text, searched: [text])],
        threads: [
            SymbolicatedThread(index: -1, name: text, crashed: false, frames: frames),
            SymbolicatedThread(index: 0, name: text, crashed: true, frames: frames + [unresolved]),
        ],
        lag: SymbolicatedLag(
            samples: [SymbolicatedSample(timestamp: text, frames: frames)],
            profile: [0, 1, 2].map { SymbolicatedProfileNode(node: ProfileNode(depth: $0, count: 3, costTime: 40), frames: [$0 == 2 ? unresolved : frames[1]]) }
                + [SymbolicatedProfileNode(node: ProfileNode(depth: 1, count: 1, costTime: 5, methodId: 9), frames: [])]),
        warnings: [text])
}

@Suite struct TerminalTextTests {
    @Test func escapesEveryControlAndBidiCharacterVisibly() {
        #expect(TerminalText.escape(HostileText.value) == HostileText.escaped)
        #expect(HostileText.problem(in: HostileText.escaped) == nil)
        // Idempotent: renderers escape values, then whole lines.
        #expect(TerminalText.escape(HostileText.escaped) == HostileText.escaped)
        let unsafe: [ClosedRange<UInt32>] = [0x00...0x08, 0x0A...0x1F, 0x7F...0x9F, 0x2028...0x202E, 0x2066...0x2069]
        for range in unsafe {
            for value in range {
                let scalar = Unicode.Scalar(value)!
                let escaped = TerminalText.escape("a" + String(Character(scalar)) + "b")
                #expect(HostileText.problem(in: escaped) == nil, "U+\(String(value, radix: 16))")
                let expected = value == 0x0A ? #"\n"# : value == 0x0D ? #"\r"# : "\\u{\(String(value, radix: 16))}"
                #expect(escaped == "a" + expected + "b")
            }
        }
    }

    @Test func leavesPrintableTextAlone() {
        for text in ["", "plain", "tab\tstays", #"C:\Users\x"#, "naïve 日本語 🙂", "\u{A0}\u{2027}\u{202F}\u{2065}\u{206A}~ "] {
            #expect(TerminalText.escape(text) == text)
        }
    }

    /// Each renderer prints every field of a hostile report escaped, one line per line of a
    /// benign report of the same shape.
    @Test func renderersEscapeEveryField() throws {
        let renderers: [(String, (SymbolicatedReport) throws -> String)] = [
            ("text", { TextReportRenderer.render($0) }), ("apple", AppleReportRenderer.render),
        ]
        for (name, render) in renderers {
            let hostile = try render(report(every: HostileText.value))
            let benign = try render(report(every: "benign"))
            #expect(HostileText.problem(in: hostile) == nil, "\(name): \(HostileText.problem(in: hostile) ?? "")")
            #expect(hostile.contains(HostileText.escaped), "\(name) shows the value, escaped")
            #expect(
                hostile.split(separator: "\n", omittingEmptySubsequences: false).count
                    == benign.split(separator: "\n", omittingEmptySubsequences: false).count, "\(name): line structure")
        }
        // JSON keeps the exact value.
        let json = try JSONReportRenderer.render(report(every: HostileText.value))
        let decoded = try JSONDecoder().decode(SymbolicatedReport.self, from: Data(json.utf8))
        #expect(decoded.threads[1].name == HostileText.value)
    }
}

@Suite struct ProfileRenderingScaleTests {
    /// A chain: node i at depth i, the shape that made indentation quadratic.
    static func chain(_ count: Int) -> SymbolicatedReport {
        let frame = SymbolicatedFrame(
            index: 0, address: Address(0x1010), kind: .pc, image: "App", imageOffset: Address(0x10),
            status: .missingDebugFile)
        let profile = (0..<count).map {
            SymbolicatedProfileNode(node: ProfileNode(depth: $0, count: 1, costTime: 1), frames: [frame])
        }
        return SymbolicatedReport(
            format: "sdk-lag", kind: .lag, status: .unsymbolicated, missingBuildIds: [],
            images: [BinaryImage(name: "App", loadAddress: Address(0x1000), size: 0x1000)], threads: [],
            lag: SymbolicatedLag(profile: profile))
    }

    @Test func aDeepChainRendersInSpaceLinearInItsNodes() throws {
        let nodes = 200_000
        let report = Self.chain(nodes)
        for (name, output) in [("text", TextReportRenderer.render(report)), ("apple", AppleReportRenderer.render(report))] {
            #expect(output.utf8.count < 200 * nodes, "\(name): \(output.utf8.count) bytes")
            let lines = output.split(separator: "\n")
            // The deepest node still says how deep it is.
            #expect(lines.last { $0.contains("[depth \(nodes - 1)]") } != nil, "\(name)")
            let indents = lines.map { $0.prefix { $0 == " " }.count }
            #expect(indents.max() == 2 * TextReportRenderer.maxProfileIndent, "\(name)")
        }
    }

    @Test func absurdDepthsRenderWithoutAllocatingThem() throws {
        var report = Self.chain(1)
        for depth in [4_294_967_296, Int.max, -5] {
            report.lag!.profile[0].node.depth = depth
            for output in [TextReportRenderer.render(report), AppleReportRenderer.render(report)] {
                #expect(output.utf8.count < 2_000)
                #expect(output.contains("[depth \(depth)]"))
            }
        }
    }
}
