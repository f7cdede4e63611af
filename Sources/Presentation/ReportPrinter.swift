import APIModel
import Foundation
import JSONFormat
import Storage
import ReportModel
import ReportRendering

/// How `report`, `submit --wait` and `GET /api/v1/reports/{id}` render a result.
public enum ReportOutputFormat: String, CaseIterable, Sendable {
    /// One line per frame and inline level.
    case text
    /// The `SymbolicatedReport` JSON, with the report's group.
    case json
    /// Apple's crash report layout with functions and file:line filled in.
    case apple
}

/// Renders a stored result as text, JSON or an Apple-style crash report.
public enum ReportPrinter {
    public static func decode(_ result: StoredResult) throws -> SymbolicatedReport {
        var report = try JSONDecoder().decode(SymbolicatedReport.self, from: result.symbolicatedJSON)
        report.id = result.reportId
        return report
    }

    /// The group a result was filed under, if it was grouped.
    public static func group(of result: StoredResult, in db: any SQLStore) -> GroupSummary? {
        guard let fingerprint = result.fingerprint else { return nil }
        return (try? db.group(fingerprint: fingerprint, latest: 0))?.summary
    }

    /// What each symbol source last said about the build ids `report` could not find: joined
    /// when a report is read (page, API, `report`), never stored with it.
    public static func sourceAnswers(for report: SymbolicatedReport, in db: any SQLStore) throws -> [BuildID: [SymbolSourceAnswer]] {
        try db.sourceAnswers(buildIds: notFoundIds(report))
    }

    /// The build ids whose images no store held: the ones a symbol source may have been asked about.
    public static func notFoundIds(_ report: SymbolicatedReport) -> [BuildID] {
        (report.imageSymbols ?? []).filter { $0.status == .notFound || $0.status == .deviceSymbolsOnly }.compactMap(\.buildId)
    }

    public static func render(
        _ result: StoredResult, format: ReportOutputFormat, group: GroupSummary?, sources: [BuildID: [SymbolSourceAnswer]] = [:]
    ) throws -> String {
        try render(decode(result), format: format, group: group, sources: sources)
    }

    /// A symbolicated report (stored, or symbolicated on the spot) in `format`; `sources`, the
    /// answers of symbol sources about its ids not found, shows beside those images.
    public static func render(
        _ report: SymbolicatedReport, format: ReportOutputFormat, group: GroupSummary?, sources: [BuildID: [SymbolSourceAnswer]] = [:]
    ) throws -> String {
        switch format {
        case .text:
            let text = TextReportRenderer.render(report, sources: sources)
            guard let group else { return text }
            return text + "\n\n" + TerminalText.escape(
                "Group: \(group.fingerprint)  \(group.title)  (\(group.count) report\(group.count == 1 ? "" : "s"))")
        case .json: return JSONReportRenderer.render(object: .object(try document(report, group: group, sources: sources)))
        case .apple: return AppleReportRenderer.render(report)
        }
    }

    /// The `report --json` document: the report with its group (docs/json.md).
    public static func document(
        _ result: StoredResult, group: GroupSummary?, sources: [BuildID: [SymbolSourceAnswer]] = [:]
    ) throws -> [String: JSONValue] {
        try document(decode(result), group: group, sources: sources)
    }

    /// Each `imageSymbols` entry of a build id not found gets `sources`: every symbol source's
    /// last answer about it (`[]` when none was asked).
    public static func document(
        _ report: SymbolicatedReport, group: GroupSummary?, sources: [BuildID: [SymbolSourceAnswer]] = [:]
    ) throws -> [String: JSONValue] {
        var object = try JSONReportRenderer.object(report)
        if let group { object["group"] = try JSONValue(encoding: GroupJSON(group)) }
        if let symbols = report.imageSymbols, case .array(var entries)? = object["imageSymbols"], entries.count == symbols.count {
            for (i, s) in symbols.enumerated() {
                guard let id = s.buildId, s.status == .notFound || s.status == .deviceSymbolsOnly,
                    case .object(var fields) = entries[i]
                else { continue }
                fields["sources"] = try JSONValue(encoding: sources[id] ?? [])
                entries[i] = .object(fields)
            }
            object["imageSymbols"] = .array(entries)
        }
        return object
    }
}

/// What a report without a result is waiting for, and what to do about it.
public enum JobStateText {
    public static func sentence(reportId: Int64, _ job: JobStatus) -> String {
        switch job.state {
        case .queued:
            "report \(reportId) is queued (no master has processed it yet: run `stackline master`)"
        case .running:
            "report \(reportId) is being symbolicated (attempt \(job.attempts)); try again shortly"
        case .failed:
            "report \(reportId) failed" + (job.lastError.map { ": \($0)" } ?? "")
        case .done:
            "report \(reportId) is done but has no stored result"
        }
    }
}
