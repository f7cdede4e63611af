import Foundation
import ReportFormats
import ReportModel

/// The report parsers, each on its own and behind format detection.
enum ReportTargets {
    static func parse(_ data: Data, as format: any ReportFormat) throws(FuzzFailure) -> String {
        if FuzzTarget.validUTF8Only, !FuzzTarget.isValidUTF8(data) { return "skipped: not valid UTF-8" }
        let report: RawReport
        do { report = try format.parse(data) } catch {
            return try refusal(error)
        }
        guard report.format == format.id else {
            throw FuzzFailure("\(format.id) parser returned a report of format '\(report.format)'")
        }
        return try summary(report)
    }

    static func detectAndParse(_ data: Data) throws(FuzzFailure) -> String {
        if FuzzTarget.validUTF8Only, !FuzzTarget.isValidUTF8(data) { return "skipped: not valid UTF-8" }
        let report: RawReport
        do { report = try FormatRegistry.standard.detectAndParse(data) } catch {
            return try refusal(error)
        }
        guard let detected = FormatRegistry.standard.detect(data), detected.id == report.format else {
            throw FuzzFailure("detectAndParse returned format '\(report.format)', detect says \(FormatRegistry.standard.detect(data)?.id ?? "none")")
        }
        return try summary(report)
    }

    /// A refusal must say why: an empty message is no message.
    private static func refusal(_ error: ReportParseError) throws(FuzzFailure) -> String {
        if error.description.isEmpty { throw FuzzFailure("refusal without a message: \(error)") }
        return "refused: \(error.description)"
    }

    private static func summary(_ report: RawReport) throws(FuzzFailure) -> String {
        try checkModel(report)
        let frames = report.threads.reduce(0) { $0 + $1.frames.count }
        return "parsed as \(report.format): \(report.images.count) images, \(report.threads.count) threads, \(frames) frames"
    }

    /// What every consumer of a `RawReport` relies on (`stackline parse` and the
    /// symbolicator index `images` with a frame's `imageIndex`).
    private static func checkModel(_ report: RawReport) throws(FuzzFailure) {
        for thread in report.threads {
            for frame in thread.frames {
                if let i = frame.imageIndex, !report.images.indices.contains(i) {
                    throw FuzzFailure("thread \(thread.index): frame imageIndex \(i) outside the \(report.images.count) images")
                }
            }
        }
    }
}
