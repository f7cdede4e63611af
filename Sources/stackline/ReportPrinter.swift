import ArgumentParser
import Foundation
import JobQueue
import ReportModel
import ReportRendering

/// How `report` (and `submit --wait`) print a result.
enum ReportOutputFormat: String, CaseIterable, ExpressibleByArgument {
    /// One line per frame and inline level.
    case text
    /// The `SymbolicatedReport` JSON.
    case json
    /// Apple's crash report layout with functions and file:line filled in.
    case apple
}

/// Renders a stored result as text, JSON or an Apple-style crash report.
enum ReportPrinter {
    static func render(_ result: StoredResult, json: Bool) throws -> String {
        try render(result, format: json ? .json : .text)
    }

    static func render(_ result: StoredResult, format: ReportOutputFormat) throws -> String {
        var report = try JSONDecoder().decode(SymbolicatedReport.self, from: result.symbolicatedJSON)
        report.id = result.reportId
        switch format {
        case .text: return TextReportRenderer.render(report)
        case .json: return try JSONReportRenderer.render(report)
        case .apple: return AppleReportRenderer.render(report)
        }
    }
}
