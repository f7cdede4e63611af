import ArgumentParser
import Compression
import Foundation
import JSONFormat
import ReportFormats
import ReportModel
import ReportRendering

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

    @Flag(help: "Print one line of counts (format, images, threads, frames, warnings) instead of the report (with --json, an object of them).")
    var summary = false

    @Option(help: "Largest accepted report after decompression, in bytes.")
    var maxSize = Zlib.defaultLimit

    func run() throws {
        let parts: [ReportPart]
        do {
            let item = ReportInput.expand([input])
            guard item.count == 1 else { throw fail("stackline parse: \(input): give one file, not a directory") }
            let data = try item[0].load(limit: maxSize)
            parts = try FormatRegistry.standard.detectAndParseAll(data)
        } catch let error as SubmitError {
            throw fail("stackline parse: \(error)")
        } catch let error as ReportParseError {
            throw fail("stackline parse: \(input): \(error)")
        }
        // A capture with several crashes prints each (JSON: an array); `submit` stores each.
        var outputs: [String] = []
        var failed = false
        for (n, part) in parts.enumerated() {
            let label = parts.count == 1 ? input : "\(input)#\(n + 1)"
            switch part.outcome {
            case .failure(let error):
                printError("stackline parse: \(label): \(error)")
                failed = true
            case .success(let report):
                let text = try render(report)
                outputs.append(parts.count > 1 && !json ? "=== report \(n + 1) of \(parts.count) ===\n\(text)" : text)
            }
        }
        if json && parts.count > 1 {
            print("[\n" + outputs.joined(separator: ",\n") + "\n]")
        } else {
            for output in outputs { print(output) }
        }
        if failed { throw ExitCode(1) }
    }

    private func render(_ report: RawReport) throws -> String {
        if summary {
            let frames = (report.threads.map(\.frames.count) + (report.lag?.samples.map(\.frames.count) ?? [])).saturatingSum()
            if json {
                return try encodeJSON(ParseSummaryJSON(
                    format: report.format, images: report.images.count, threads: report.threads.count, frames: frames,
                    warnings: report.warnings.count))
            }
            return "\(report.format): \(report.images.count) images, \(report.threads.count) threads, \(frames) frames, \(report.warnings.count) warnings"
        }
        return json ? try ParsedReportJSON.render(report) : ParsedReportText.render(report)
    }
}

/// The `parse --summary --json` shape.
struct ParseSummaryJSON: Encodable {
    var format: String
    var images: Int
    var threads: Int
    var frames: Int
    var warnings: Int
}
