import Foundation
import ReportModel

/// Renders a symbolicated report in Apple's crash report layout, "symbolicated side by side":
/// header, `Thread N Crashed:` blocks whose frame lines keep `idx  image  0xADDR` and carry
/// `function + offset (file:line)` (one line per inline level, innermost first, same index and
/// address), then `Binary Images:`. Frames that did not resolve keep Apple's `0xLOAD + offset`.
/// Every line goes through `TerminalText.escape`, like the text renderer's.
public enum AppleReportRenderer {
    public static func render(_ report: SymbolicatedReport) -> String {
        var out: [String] = []
        let images = ImagesByName(report.images)
        func field(_ key: String, _ value: String?) {
            guard let value, !value.isEmpty else { return }
            out.append((key + ":").padding(toLength: 23, withPad: " ", startingAt: 0) + value)
        }
        field("Incident Identifier", report.id.map { "stackline-\($0)" })
        field("Process", report.app?.name)
        field("Version", report.app?.version.map { v in report.app?.build.map { "\(v) (\($0))" } ?? v })
        field("Code Type", report.arch?.name)
        field("OS Version", report.os)
        field("Date/Time", report.timestamp)
        field("Report Format", "\(report.format), \(symbolication(report.status))")
        out.append("")
        if let e = report.exception {
            let type = e.type.map { type in e.signal.map { $0 == type ? type : "\(type) (\($0))" } ?? type } ?? e.signal
            field("Exception Type", type)
            field("Exception Codes", e.code)
            if let fault = e.faultAddress, e.code?.contains(hex(fault.value)) != true {
                field("Exception Subtype", "at \(hex(fault.value))")
            }
            field("Exception Message", e.message)
        }
        if let crashed = report.threads.first(where: { $0.crashed }) { field("Crashed Thread", String(crashed.index)) }
        if !report.missingBuildIds.isEmpty {
            field("Missing Debug Files", report.missingBuildIds.map { TextReportRenderer.missingImage($0, in: report) }.joined(separator: ", "))
        }

        let width = max(30, (report.images.map { TerminalText.escape($0.name).count }.max() ?? 0) + 1)
        for thread in report.threads {
            out.append("")
            if thread.index < 0 {
                out.append("Last Exception Backtrace:")
            } else {
                if let name = thread.name { out.append("Thread \(thread.index) name:  \(name)") }
                let part = thread.part.map { " (\($0))" } ?? ""
                out.append("Thread \(thread.index)\(part)\(thread.crashed ? " Crashed" : ""):")
            }
            out += thread.frames.map { frameLine($0, images: images, width: width) }
        }
        if let lag = report.lag {
            for (i, sample) in lag.samples.enumerated() {
                out.append("")
                out.append("Main Thread Sample \(i)\(sample.timestamp.map { " (\($0))" } ?? ""):")
                out += sample.frames.map { frameLine($0, images: images, width: width) }
            }
            if !lag.profile.isEmpty {
                out.append("")
                out.append("Thread Profile:")
            }
            for node in lag.profile {
                let indent = TextReportRenderer.profileIndent(depth: node.node.depth)
                let costs = "count \(node.node.count), \(formatCost(node.node.costTime)) ms"
                guard let level = node.frames.last else {
                    out.append("\(indent)\(node.node.methodId.map { "method #\($0)" } ?? "???")  [\(costs)]")
                    continue
                }
                out.append("\(indent)\(hex(level.address.value)) \(describe(level, images: images))  [\(costs)]")
            }
        }
        out.append("")
        out.append("Binary Images:")
        for image in report.images {
            let end = image.size.map { image.loadAddress.value &+ $0 &- 1 } ?? image.loadAddress.value
            let start = hex(image.loadAddress.value, pad: false).leftPadded(to: 18)
            let endText = hex(end, pad: false).leftPadded(to: 18)
            var line = "\(start) - \(endText) \(image.name)"
            if let arch = image.arch { line += " \(arch)" }
            line += "  <\(image.id?.hex ?? "")>"
            if let path = image.path { line += " \(path)" }
            out.append(line)
        }
        for warning in report.warnings { out.append("warning: \(warning)") }
        return out.map(TerminalText.escape).joined(separator: "\n")
    }

    static func frameLine(_ f: SymbolicatedFrame, images: ImagesByName, width: Int) -> String {
        let image = TerminalText.escape(f.image ?? "???")
        return String(f.index).padding(toLength: 4, withPad: " ", startingAt: 0)
            + image.padding(toLength: width, withPad: " ", startingAt: 0) + "\t" + hex(f.address.value) + " "
            + describe(f, images: images)
    }

    /// The report's images by name, built once per report: unresolved frames (every profile
    /// node of a lag report without its debug file) each look up their image.
    struct ImagesByName {
        private let byName: [String: [BinaryImage]]
        init(_ images: [BinaryImage]) { byName = Dictionary(grouping: images, by: \.name) }
        /// The image of that name containing `address`, else the first of that name.
        func image(named name: String, containing address: UInt64) -> BinaryImage? {
            guard let candidates = byName[name] else { return nil }
            return candidates.first { $0.contains(address) } ?? candidates.first
        }
    }

    /// `function + offset (file:line)`, or Apple's unsymbolicated `0xLOAD + offset`.
    static func describe(_ f: SymbolicatedFrame, images: ImagesByName) -> String {
        if let function = f.function ?? f.symbol {
            var text = function
            if let offset = f.offset, !f.inlined { text += " + \(offset)" }
            if let file = f.file {
                text += " (\((file as NSString).lastPathComponent)\(f.line.map { ":\($0)" } ?? ""))"
            }
            return text
        }
        if let name = f.image, let image = images.image(named: name, containing: f.address.value) {
            return "\(hex(image.loadAddress.value, pad: false)) + \(f.address.value &- image.loadAddress.value)"
        }
        return "0x0 + 0"
    }

    /// How far Stackline got, in words: "symbolicated by Stackline (unsymbolicated)" read oddly.
    static func symbolication(_ status: ReportStatus) -> String {
        switch status {
        case .complete: "symbolicated by Stackline"
        case .partial: "partly symbolicated by Stackline"
        case .unsymbolicated: "not symbolicated (Stackline resolved no frame)"
        }
    }

    static func formatCost(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    static func hex(_ value: UInt64, pad: Bool = true) -> String {
        pad ? TextReportRenderer.hex(Address(value)) : Address(value).description
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
