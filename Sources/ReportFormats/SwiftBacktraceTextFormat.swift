import Foundation
import ReportModel

/// The Swift runtime backtracer's text report (`SWIFT_BACKTRACE=…,format=text`), symbolicated
/// or not: `*** Program crashed: …`, `Thread N "name" crashed:`, frames `idx [ra] 0x…`, and
/// `Images (N omitted):` lines `base–end buildid name path` (an en dash between the addresses).
///
/// Hand-written line parsing: the runtime documents the layout only by example.
public struct SwiftBacktraceTextFormat: ReportFormat {
    public let id = "swift-backtrace-text"

    public init() {}

    public func matches(_ data: Data) -> Bool {
        ReportText.textHead(data, contains: "*** Program crashed: ", window: 4096)
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        enum Section { case root, thread, images }
        // Regex is not Sendable, so each parse builds its own.
        let crashedLine = #/^\*\*\* Program crashed: (.*?)(?: at 0x([0-9a-fA-F]+))? \*\*\*$/#
        let threadLine = #/^Thread (\d+)(?: "(.*)")?( crashed)?:$/#
        let frameLine = #/^\s*(\d+)((?:\s+\[[a-z]+\])*)\s+0x([0-9a-fA-F]+)(?:\s.*)?$/#
        let imagesLine = #/^Images(?: \((\d+) omitted\))?:$/#
        let imageLine = #/^0x([0-9a-fA-F]+)–0x([0-9a-fA-F]+)\s+(<no build ID>|[0-9a-fA-F]+)\s+(.*)$/#

        var section = Section.root
        var exception: ExceptionInfo?
        var arch: String?
        var os: String?
        var threads: [RawThread] = []
        var images: [BinaryImage] = []
        var warnings: [String] = []

        for (number, raw) in ReportText.lines(data).enumerated() {
            let line = String(raw).trimmingTrailingWhitespace()
            if let m = try? crashedLine.wholeMatch(in: line) {
                exception = ExceptionInfo(
                    type: String(m.1), signal: String(m.1), faultAddress: m.2.flatMap { Address(parsing: $0) })
                continue
            }
            if line.hasPrefix("Platform: ") {
                let platform = line.dropFirst("Platform: ".count)
                arch = platform.split(separator: " ").first.map(String.init)
                os = platform.split(separator: " ", maxSplits: 1).dropFirst().first.map(String.init)
                continue
            }
            if let m = try? threadLine.wholeMatch(in: line), let index = Int(m.1) {
                threads.append(RawThread(index: index, name: m.2.map(String.init), crashed: m.3 != nil, frames: []))
                section = .thread
                continue
            }
            if let m = try? imagesLine.wholeMatch(in: line) {
                if let omitted = m.1.flatMap({ Int($0) }), omitted > 0 {
                    // The runtime lists only images that frames point into; the rest are counted.
                    warnings.append("\(omitted) images not listed by the runtime")
                }
                section = .images
                continue
            }
            if line.hasPrefix("Registers:") || line.hasPrefix("Backtrace took") {
                section = .root
                continue
            }
            switch section {
            case .root:
                continue
            case .thread:
                if line.isEmpty { continue }
                if let m = try? frameLine.wholeMatch(in: line), let address = UInt64(m.3, radix: 16) {
                    let flags = m.2
                    // Symbolicated reports repeat an address once per inline level.
                    if flags.contains("[inlined]") { continue }
                    let kind: FrameKind = flags.contains("[ra]") || flags.contains("[async]") ? .returnAddress : .pc
                    threads[threads.count - 1].frames.append(RawFrame(address: Address(address), kind: kind))
                } else if line.hasSuffix("...") {
                    warnings.append("thread \(threads[threads.count - 1].index): frames omitted by the runtime")
                } else {
                    warnings.append("line \(number + 1): frame not understood: \(line)")
                }
            case .images:
                if line.isEmpty { continue }
                guard let m = try? imageLine.wholeMatch(in: line), let start = UInt64(m.1, radix: 16),
                    let end = UInt64(m.2, radix: 16), end >= start
                else {
                    warnings.append("line \(number + 1): image not understood: \(line)")
                    continue
                }
                // "name   /path": the name is padded; the path is what follows the last run of blanks before "/".
                let rest = String(m.4)
                var name = rest
                var path: String?
                if let slash = rest.range(of: " /") {
                    name = rest[..<slash.lowerBound].trimmingCharacters(in: .whitespaces)
                    path = String(rest[rest.index(after: slash.lowerBound)...])
                }
                let buildID = m.3 == "<no build ID>" ? nil : String(m.3)
                images.append(BinaryImage(
                    name: name, path: path,
                    id: ImageIdentifier.validated(buildID, image: name, byteCounts: ImageIdentifier.elfByteCounts, warnings: &warnings),
                    arch: arch, loadAddress: Address(start), size: end - start))
            }
        }
        guard !threads.isEmpty else {
            throw .invalidReport(format: id, reason: "no \"Thread N crashed:\" block")
        }
        return RawReport(
            format: id, kind: .crash, platform: os.map { $0.hasPrefix("Linux") ? "Linux" : $0 }, arch: arch,
            app: images.first.map { AppInfo(name: $0.name) }, os: os, exception: exception, images: images,
            threads: threads, warnings: warnings)
    }
}
