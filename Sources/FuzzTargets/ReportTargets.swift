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

    /// Detection, splitting and parsing, as `submit` runs them: every part must be a report of
    /// the detected format, or a refusal with a reason.
    static func detectAndParse(_ data: Data) throws(FuzzFailure) -> String {
        if FuzzTarget.validUTF8Only, !FuzzTarget.isValidUTF8(data) { return "skipped: not valid UTF-8" }
        let parts: [ReportPart]
        do { parts = try FormatRegistry.standard.detectAndParseAll(data) } catch {
            return try refusal(error)
        }
        guard let detected = FormatRegistry.standard.detect(data) else {
            throw FuzzFailure("detectAndParseAll returned \(parts.count) parts, detect says none")
        }
        var summaries: [String] = []
        for part in parts {
            guard part.data.count <= data.count else { throw FuzzFailure("a part is larger than its input") }
            switch part.outcome {
            case .failure(let error): summaries.append(try refusal(error))
            case .success(let report):
                guard detected.id == report.format else {
                    throw FuzzFailure("detectAndParseAll returned format '\(report.format)', detect says \(detected.id)")
                }
                summaries.append(try summary(report))
            }
        }
        return summaries.joined(separator: "; ")
    }

    /// The `.ips` fast path may only read what JSONDecoder reads, value for value.
    static func ipsDecodersAgree(_ data: Data) throws(FuzzFailure) -> String {
        if FuzzTarget.validUTF8Only, !FuzzTarget.isValidUTF8(data) { return "skipped: not valid UTF-8" }
        let agreement = AppleIPSFormat.compareDecoders(data)
        if case .disagreement(let what) = agreement { throw FuzzFailure("decoders disagree: \(what)") }
        return "\(agreement)"
    }

    /// The Swift runtime JSON report's fast path may only read what JSONDecoder reads, value for value.
    static func swiftBacktraceDecodersAgree(_ data: Data) throws(FuzzFailure) -> String {
        if FuzzTarget.validUTF8Only, !FuzzTarget.isValidUTF8(data) { return "skipped: not valid UTF-8" }
        let agreement = SwiftBacktraceJSONFormat.compareDecoders(data)
        if case .disagreement(let what) = agreement { throw FuzzFailure("decoders disagree: \(what)") }
        return "\(agreement)"
    }

    /// A refusal must say why: an empty message is no message.
    private static func refusal(_ error: ReportParseError) throws(FuzzFailure) -> String {
        if error.description.isEmpty { throw FuzzFailure("refusal without a message: \(error)") }
        return "refused: \(error.description)"
    }

    private static func summary(_ report: RawReport) throws(FuzzFailure) -> String {
        try checkModel(report)
        let frames = report.threads.map(\.frames.count).saturatingSum()
        return "parsed as \(report.format): \(report.images.count) images, \(report.threads.count) threads, \(frames) frames"
    }

    /// What every consumer of a `RawReport` relies on (`stackline parse` and the
    /// symbolicator index `images` with a frame's `imageIndex`).
    static func checkModel(_ report: RawReport) throws(FuzzFailure) {
        for thread in report.threads {
            for frame in thread.frames {
                if let i = frame.imageIndex, !report.images.indices.contains(i) {
                    throw FuzzFailure("thread \(thread.index): frame imageIndex \(i) outside the \(report.images.count) images")
                }
            }
        }
    }
}
