import Foundation
import JobQueue
import ReportFormats
import ReportModel

/// Renders a stored result as text or JSON.
enum ReportPrinter {
    static func render(_ result: StoredResult, json: Bool) throws -> String {
        var report = try JSONDecoder().decode(SymbolicatedReport.self, from: result.symbolicatedJSON)
        report.id = result.reportId
        return json ? try JSONReportRenderer.render(report) : TextReportRenderer.render(report)
    }
}
