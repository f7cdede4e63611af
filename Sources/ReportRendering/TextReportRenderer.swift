import Foundation
import ReportModel

/// Renders a symbolicated report as text: one line per frame and inline level. Every line is
/// passed through `TerminalText.escape`, so names from reports cannot drive the terminal or
/// forge lines.
public enum TextReportRenderer {
    /// `sources`: what each symbol source last said about the ids not found, shown under them.
    /// `serverURL` goes into the commands that fix an image (a placeholder when unknown).
    public static func render(
        _ report: SymbolicatedReport, sources: [BuildID: [SymbolSourceAnswer]] = [:], serverURL: String = "<server URL>"
    ) -> String {
        var out: [String] = []
        let id = report.id.map { "Report \($0)" } ?? "Report"
        out.append("\(id)  format: \(report.format)  kind: \(report.kind.rawValue)  status: \(report.status.rawValue)")
        if let app = report.app?.name { out.append("App: \(app)\(report.app?.version.map { " \($0)" } ?? "")") }
        if let os = report.os { out.append("OS: \(os)\(report.arch.map { " (\($0))" } ?? "")") }
        if let e = report.exception {
            out.append("Exception: \(e.summary)")
            out += messageLines(e.message, label: "Message:")
        }
        if let symbols = report.imageSymbols {
            out += symbolLines(symbols, images: report.images, sources: sources, serverURL: serverURL)
        } else if !report.missingBuildIds.isEmpty {
            out.append("Missing debug files (add them with `stackline symbols add`):")
            for id in report.missingBuildIds { out.append("  " + missingImage(id, in: report)) }
        }
        let locator = ImageLocator(images: report.images)
        for thread in report.threads {
            out.append("")
            let name = thread.name.map { " \"\($0)\"" } ?? ""
            let part = thread.part.map { " [\($0)]" } ?? ""
            out.append("Thread \(thread.index)\(name)\(part)\(thread.crashed ? " crashed" : ""):")
            // Frames the symbolicator could not attribute still get the image the report lists.
            let frames = thread.frames.map { frame in
                var f = frame
                if f.image == nil { f.image = locator.image(containing: frame.address.value).map { report.images[$0].name } }
                return f
            }
            let imageWidth = max(8, frames.map { imageColumn($0).count }.max() ?? 0)
            for frame in frames { out.append(line(frame, imageWidth: imageWidth)) }
        }
        if let lag = report.lag { out += lagLines(lag, report: report) }
        out += annotationLines(report.annotations ?? [])
        for warning in report.warnings { out.append("warning: \(warning)") }
        return out.map(TerminalText.escape).joined(separator: "\n")
    }

    /// What the process attached (Crashpad's annotations): process-wide first, then per module.
    static func annotationLines(_ annotations: [ReportAnnotation]) -> [String] {
        guard !annotations.isEmpty else { return [] }
        return ["", "Annotations:"] + annotations.map { a in
            "  " + (a.module.map { "[\($0)] " } ?? "") + "\(a.key) = \(a.value)"
        }
    }

    /// Every image a frame falls in with its symbol status, build id, name and path (what finds
    /// the file) and why, the fix under each that has one, and the symbol sources' answers under
    /// an id not found. Unused images are counted.
    public static func symbolLines(
        _ symbols: [ImageSymbols], images: [BinaryImage], sources: [BuildID: [SymbolSourceAnswer]], serverURL: String
    ) -> [String] {
        let used = symbols.filter { $0.status != .unused }
        guard !symbols.isEmpty else { return [] }
        let unused = symbols.count - used.count
        var out = ["Debug files per image" + (unused > 0 ? " (\(unused) more unused: no frame falls in them):" : ":")]
        let statusWidth = used.map(\.status.rawValue.count).max() ?? 0
        for s in used {
            let path = images.indices.contains(s.image) ? images[s.image].path : nil
            out.append("  " + s.status.rawValue.padding(toLength: statusWidth + 1, withPad: " ", startingAt: 0)
                + [s.buildId?.hex, s.name, path].compactMap { $0 }.map { " " + $0 }.joined(separator: " ")
                + (s.detail.map { ": \($0)" } ?? ""))
            if let fix = s.fix(serverURL: serverURL) { out.append("      fix: \(fix)") }
            guard let id = s.buildId, s.status == .notFound || s.status == .deviceSymbolsOnly, let answers = sources[id] else { continue }
            for a in answers {
                out.append("      source \(a.source): \(a.outcome.rawValue) (\(a.detail)) at \(a.answeredAt.formatted(.iso8601))")
            }
        }
        return out
    }

    /// Profile trees are indented two spaces per level down to this depth. Deeper nodes keep
    /// that indentation and print their depth instead, so the output grows linearly with the
    /// number of nodes whatever depth a report claims.
    public static let maxProfileIndent = 32

    /// The indentation of a profile node at `depth`: `depth` × two spaces up to
    /// `maxProfileIndent`, beyond that (or for a negative depth) the cap and `[depth N] `.
    public static func profileIndent(depth: Int) -> String {
        if (0...maxProfileIndent).contains(depth) { return String(repeating: "  ", count: depth) }
        return String(repeating: "  ", count: depth < 0 ? 0 : maxProfileIndent) + "[depth \(depth)] "
    }

    /// Lag reports: each main-thread sample like a thread, then the profile tree indented by depth.
    static func lagLines(_ lag: SymbolicatedLag, report: SymbolicatedReport) -> [String] {
        var out: [String] = []
        let all = lag.samples.flatMap(\.frames) + lag.profile.flatMap(\.frames)
        let imageWidth = max(8, all.map { imageColumn($0).count }.max() ?? 0)
        for (i, sample) in lag.samples.enumerated() {
            out.append("")
            out.append("Sample \(i)\(sample.timestamp.map { " at \($0)" } ?? ""):")
            for frame in sample.frames { out.append(line(frame, imageWidth: imageWidth)) }
        }
        if !lag.profile.isEmpty {
            out.append("")
            out.append("Thread profile (depth, count, cost):")
        }
        for node in lag.profile {
            let indent = profileIndent(depth: node.node.depth)
            let costs = "[\(node.node.count)x, \(node.node.costTime) ms]"
            guard !node.frames.isEmpty else {
                out.append("\(indent)\(node.node.methodId.map { "method #\($0)" } ?? "???") \(costs)")
                continue
            }
            for frame in node.frames {
                out.append(indent + line(frame, imageWidth: imageWidth).drop { $0 != " " }.drop { $0 == " " } + " " + costs)
            }
        }
        return out
    }

    static func line(_ f: SymbolicatedFrame, imageWidth: Int) -> String {
        let index = f.inlined ? "" : String(f.index)
        let image = imageColumn(f)
        var text = index.padding(toLength: 4, withPad: " ", startingAt: 0)
            + image.padding(toLength: imageWidth + 1, withPad: " ", startingAt: 0)
            + hex(f.address)
        if f.inlined { text += " [inlined]" }
        if let function = f.function ?? f.symbol {
            text += " \(function)"
            if let offset = f.offset, !f.inlined { text += " + \(offset)" }
            // Provenance: this name is the device's, not a debug file's.
            if f.status == .deviceSymbol { text += " <deviceSymbol>" }
        } else if f.status != .symbolicated {
            // What a later lookup needs: the image and the offset into it.
            if let image = f.image, let offset = f.imageOffset { text += " \(image) + 0x\(String(offset.value, radix: 16))" }
            text += " <\(f.status.rawValue)>"
        }
        if let file = f.file {
            text += " at \(file)"
            if let line = f.line {
                text += ":\(line)"
                if let column = f.column, column > 0 { text += ":\(column)" }
            }
        }
        // How the server's unwinder found an unwound frame, as Breakpad's stackwalker says it.
        if let trust = f.trust, !f.inlined { text += " (found by \(trust.rawValue))" }
        return text
    }

    /// A crash message under its label on one line: its own line breaks print escaped (`\n`), so
    /// a message can never add lines that pass for lines of the report.
    public static func messageLines(_ message: String?, label: String) -> [String] {
        guard let message = message?.trimmingCharacters(in: .whitespacesAndNewlines), !message.isEmpty else { return [] }
        return ["\(label) \(message)"]
    }

    /// `ID  NAME  PATH` for a missing debug file: the image the report gives that id, so the
    /// reader knows which file to find.
    public static func missingImage(_ id: BuildID, in report: SymbolicatedReport) -> String {
        guard let image = report.images.first(where: { $0.id == id }) else { return id.hex }
        return "\(id)  \(image.name)" + (image.path.map { "  \($0)" } ?? "")
    }

    /// The image name as printed, escaped before the column width is measured.
    static func imageColumn(_ f: SymbolicatedFrame) -> String { TerminalText.escape(f.image ?? "???") }

    /// `0x` and 16 hex digits, the width of every address column.
    public static func hex(_ a: Address) -> String {
        let s = String(a.value, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 16 - s.count)) + s
    }
}
