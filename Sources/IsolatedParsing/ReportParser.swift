import Foundation
import ReportFormats
import ReportModel
import WorkerProtocol

/// Turns untrusted bytes into the summaries intake stores: detection, splitting, each part's
/// parse and its validation. Blocking: `serve` calls it from its blocking-work pool, never from
/// async code or an event loop.
public protocol ReportParser: Sendable {
    func parse(_ input: Data) -> ParseReply
}

/// The parsers run in this process: `stackline submit` (a trap ends only that command) and
/// the parse child itself.
public struct InProcessParser: ReportParser {
    public let registry: FormatRegistry

    public init(registry: FormatRegistry = .standard) { self.registry = registry }

    public func parse(_ input: Data) -> ParseReply {
        let parts: [ReportPart]
        do { parts = try registry.detectAndParseAll(input) } catch { return .refused(ParseRefusal(error.description)) }
        return .parts(parts.map { part in
            ParsedPartSummary(
                data: part.data == input ? nil : part.data, format: part.format,
                outcome: part.outcome.map(ParsedReportSummary.init).mapError { ParseRefusal($0.description) })
        })
    }
}

extension ParsedReportSummary {
    public init(_ report: RawReport) {
        self.init(
            format: report.format, kind: report.kind, app: report.app?.name, version: report.app?.version,
            buildIds: report.referencedBuildIds, device: report.device)
    }
}
