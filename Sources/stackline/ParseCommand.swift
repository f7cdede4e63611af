import ArgumentParser
import Compression
import Foundation
import ReportFormats
import ReportModel

/// `stackline parse`: show what a report file parses to, without symbolicating it.
struct ParseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parse",
        abstract: "Print the raw report a file parses to: format, images, threads, frames, warnings.",
        discussion: """
            Run this first when a report fails: it exits non-zero with the parser's message. \
            Plain or gzip input; - reads stdin.
            """)

    @Argument(help: "A report file, or - for stdin.")
    var input: String

    @Flag(help: "Print JSON: {format, kind, images, threads: [{index, name, crashed, frames: [{address, kind}]}], lag, warnings}.")
    var json = false

    @Flag(help: "Print one line of counts (format, images, threads, frames, warnings) instead of the report.")
    var summary = false

    @Option(help: "Largest accepted report after decompression, in bytes.")
    var maxSize = Zlib.defaultLimit

    func run() throws {
        let report: RawReport
        do {
            let item = ReportInput.expand([input])
            guard item.count == 1 else { throw fail("stackline parse: \(input): give one file, not a directory") }
            let data = try item[0].load(limit: maxSize)
            report = try FormatRegistry.standard.detectAndParse(data)
        } catch let error as SubmitError {
            throw fail("stackline parse: \(error)")
        } catch let error as ReportParseError {
            throw fail("stackline parse: \(input): \(error)")
        }
        if summary {
            let frames = report.threads.reduce(0) { $0 + $1.frames.count }
                + (report.lag?.samples.reduce(0) { $0 + $1.frames.count } ?? 0)
            print("\(report.format): \(report.images.count) images, \(report.threads.count) threads, \(frames) frames, \(report.warnings.count) warnings")
            return
        }
        print(json ? try ParsedReportJSON.render(report) : ParsedReportText.render(report))
    }
}

/// The `parse --json` shape: the raw report with every address absolute.
struct ParsedReportJSON: Encodable {
    struct Frame: Encodable {
        var address: Address
        var kind: FrameKind
        var imageIndex: Int?
        /// The report's address for this frame could not be read (a warning says why).
        var malformed: Bool?
    }
    struct Thread: Encodable {
        var index: Int
        var name: String?
        var crashed: Bool
        var frames: [Frame]
    }
    var format: String
    var kind: ReportKind
    var arch: Arch?
    var app: AppInfo?
    var os: String?
    var exception: ExceptionInfo?
    var images: [BinaryImage]
    var threads: [Thread]
    var lag: LagData?
    var warnings: [String]

    static func render(_ report: RawReport) throws -> String {
        let value = ParsedReportJSON(
            format: report.format, kind: report.kind, arch: report.arch, app: report.app, os: report.os,
            exception: report.exception, images: report.images,
            threads: report.threads.map { thread in
                Thread(
                    index: thread.index, name: thread.name, crashed: thread.crashed,
                    frames: thread.frames.map { Frame(address: $0.address, kind: $0.kind, imageIndex: $0.imageIndex, malformed: $0.malformed) })
            }, lag: report.lag, warnings: report.warnings)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

/// The `parse` text view: one line per image and per frame, every line terminal-safe.
enum ParsedReportText {
    static func render(_ report: RawReport) -> String {
        var out: [String] = []
        out.append("format: \(report.format)  kind: \(report.kind.rawValue)\(report.arch.map { "  arch: \($0)" } ?? "")")
        if let app = report.app, let name = app.name {
            out.append("app: \(name)\(app.version.map { " \($0)" } ?? "")\(app.build.map { " (\($0))" } ?? "")")
        }
        if let os = report.os { out.append("os: \(os)") }
        if let e = report.exception {
            out.append("exception: \([e.type, e.signal, e.code].compactMap { $0 }.joined(separator: " / "))"
                + (e.faultAddress.map { " at \($0)" } ?? ""))
        }
        out.append("images (\(report.images.count)):")
        for (i, image) in report.images.enumerated() {
            let end = image.size.map { " - " + hex(image.loadAddress.value &+ $0) } ?? ""
            var line = "  [\(i)] \(hex(image.loadAddress.value))\(end)  \(image.name)"
            if let arch = image.arch { line += "  \(arch)" }
            line += "  \(image.id?.hex ?? "<no id>")"
            if let vm = image.vmAddress { line += "  vmaddr \(vm)" }
            if let path = image.path { line += "  \(path)" }
            out.append(line)
        }
        let locator = ImageLocator(images: report.images)
        for thread in report.threads {
            let name = thread.name.map { " \"\($0)\"" } ?? ""
            out.append("thread \(thread.index)\(name)\(thread.crashed ? " crashed" : ""):")
            out += frames(thread.frames, report: report, locator: locator)
        }
        if let lag = report.lag {
            for (i, sample) in lag.samples.enumerated() {
                out.append("sample \(i)\(sample.timestamp.map { " at \($0)" } ?? ""):")
                out += frames(sample.frames, report: report, locator: locator)
            }
            if !lag.profile.isEmpty { out.append("profile (\(lag.profile.count) nodes):") }
            for node in lag.profile {
                let indent = "  " + TextReportRenderer.profileIndent(depth: node.depth)
                let what = node.address.map(hex) ?? node.methodId.map { "method #\($0)" } ?? "?"
                out.append("\(indent)\(what)  count \(node.count)  \(node.costTime) ms")
            }
        }
        for warning in report.warnings { out.append("warning: \(warning)") }
        return out.map(TerminalText.escape).joined(separator: "\n")
    }

    static func frames(_ frames: [RawFrame], report: RawReport, locator: ImageLocator) -> [String] {
        frames.enumerated().map { i, frame in
            let image = frame.imageIndex.flatMap { report.images.indices.contains($0) ? report.images[$0].name : nil }
                ?? locator.image(containing: frame.address.value).map { report.images[$0].name } ?? "???"
            return "  \(String(i).padding(toLength: 4, withPad: " ", startingAt: 0))\(hex(frame.address.value))  \(frame.kind == .pc ? "pc" : "ra")  \(image)"
        }
    }

    static func hex(_ value: UInt64) -> String { TextReportRenderer.hex(Address(value)) }

    static func hex(_ address: Address) -> String { TextReportRenderer.hex(address) }
}
