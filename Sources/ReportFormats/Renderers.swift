import Foundation
import ReportModel

/// Renders a symbolicated report as JSON (the `SymbolicatedReport` Codable shape).
public enum JSONReportRenderer {
    public static func render(_ report: SymbolicatedReport) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(report), as: UTF8.self)
    }
}

/// Renders a symbolicated report as text: one line per frame and inline level.
public enum TextReportRenderer {
    public static func render(_ report: SymbolicatedReport) -> String {
        var out: [String] = []
        let id = report.id.map { "Report \($0)" } ?? "Report"
        out.append("\(id)  format: \(report.format)  kind: \(report.kind.rawValue)  status: \(report.status.rawValue)")
        if let app = report.app?.name { out.append("App: \(app)\(report.app?.version.map { " \($0)" } ?? "")") }
        if let os = report.os { out.append("OS: \(os)\(report.arch.map { " (\($0))" } ?? "")") }
        if let e = report.exception {
            var line = "Exception: \(e.type ?? e.signal ?? "unknown")"
            if let fault = e.faultAddress { line += " at \(fault)" }
            if let message = e.message { line += ": \(message)" }
            out.append(line)
        }
        if !report.missingBuildIds.isEmpty {
            out.append("Missing debug files: \(report.missingBuildIds.joined(separator: ", "))")
        }
        for thread in report.threads {
            out.append("")
            let name = thread.name.map { " \"\($0)\"" } ?? ""
            out.append("Thread \(thread.index)\(name)\(thread.crashed ? " crashed" : ""):")
            let imageWidth = max(8, thread.frames.map { ($0.image ?? "???").count }.max() ?? 0)
            for frame in thread.frames { out.append(line(frame, imageWidth: imageWidth)) }
        }
        for warning in report.warnings { out.append("warning: \(warning)") }
        return out.joined(separator: "\n")
    }

    static func line(_ f: SymbolicatedFrame, imageWidth: Int) -> String {
        let index = f.inlined ? "" : String(f.index)
        let image = f.image ?? "???"
        var text = index.padding(toLength: 4, withPad: " ", startingAt: 0)
            + image.padding(toLength: imageWidth + 1, withPad: " ", startingAt: 0)
            + hex(f.address)
        if f.inlined { text += " [inlined]" }
        if let function = f.function ?? f.symbol {
            text += " \(function)"
            if let offset = f.offset, !f.inlined { text += " + \(offset)" }
        } else if f.status != .symbolicated {
            text += " <\(f.status.rawValue)>"
        }
        if let file = f.file {
            text += " at \(file)"
            if let line = f.line {
                text += ":\(line)"
                if let column = f.column, column > 0 { text += ":\(column)" }
            }
        }
        return text
    }

    static func hex(_ a: Address) -> String {
        let s = String(a.value, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 16 - s.count)) + s
    }
}

/// Counts the master logs per job.
public struct ReportCounts: Sendable, Equatable {
    /// Raw frames (inline levels not counted).
    public var frames = 0
    /// Raw frames resolved to a function.
    public var symbolicated = 0
    /// Raw frames whose image's debug file is not in the store.
    public var missing = 0

    public init(_ report: SymbolicatedReport) {
        for thread in report.threads {
            for frame in thread.frames where !frame.inlined {
                frames += 1
                switch frame.status {
                case .symbolicated, .noLineInfo: symbolicated += 1
                case .missingDebugFile: missing += 1
                default: break
                }
            }
        }
    }
}
