import Foundation
import ReportModel

/// The `parse` text view: one line per image and per frame, every line terminal-safe.
public enum ParsedReportText {
    public static func render(_ report: RawReport) -> String {
        var out: [String] = []
        out.append("format: \(report.format)  kind: \(report.kind.rawValue)\(report.arch.map { "  arch: \($0)" } ?? "")")
        if let app = report.app, let name = app.name {
            out.append("app: \(name)\(app.version.map { " \($0)" } ?? "")\(app.build.map { " (\($0))" } ?? "")")
        }
        if let os = report.os { out.append("os: \(os)") }
        if let e = report.exception {
            out.append("exception: \(e.summary)")
            out += TextReportRenderer.messageLines(e.message, label: "message:")
        }
        out.append("images (\(report.images.count)):")
        for (i, image) in report.images.enumerated() {
            let end = image.size.map { " - " + hex(image.loadAddress.value &+ $0) } ?? ""
            var line = "  [\(i)] \(hex(image.loadAddress.value))\(end)  \(image.name)"
            if let arch = image.arch { line += "  \(arch)" }
            line += "  \(image.id?.hex ?? "<no id>")"
            if let vm = image.vmAddress { line += "  vmaddr \(vm)" }
            if let path = image.path { line += "  \(path)" }
            out.append(line)
        }
        let locator = ImageLocator(images: report.images)
        for thread in report.threads {
            let name = thread.name.map { " \"\($0)\"" } ?? ""
            let part = thread.part.map { " [\($0)]" } ?? ""
            out.append("thread \(thread.index)\(name)\(part)\(thread.crashed ? " crashed" : ""):")
            out += frames(thread.frames, report: report, locator: locator)
        }
        if let lag = report.lag {
            for (i, sample) in lag.samples.enumerated() {
                out.append("sample \(i)\(sample.timestamp.map { " at \($0)" } ?? ""):")
                out += frames(sample.frames, report: report, locator: locator)
            }
            if !lag.profile.isEmpty { out.append("profile (\(lag.profile.count) nodes):") }
            for node in lag.profile {
                let indent = "  " + TextReportRenderer.profileIndent(depth: node.depth)
                let what = node.address.map(hex) ?? node.methodId.map { "method #\($0)" } ?? "?"
                out.append("\(indent)\(what)  count \(node.count)  \(node.costTime) ms")
            }
        }
        for warning in report.warnings { out.append("warning: \(warning)") }
        return out.map(TerminalText.escape).joined(separator: "\n")
    }

    static func frames(_ frames: [RawFrame], report: RawReport, locator: ImageLocator) -> [String] {
        frames.enumerated().map { i, frame in
            let image = frame.imageIndex.flatMap { report.images.indices.contains($0) ? report.images[$0].name : nil }
                ?? locator.image(containing: frame.address.value).map { report.images[$0].name } ?? "???"
            let device = frame.symbol.map { " \($0)" + (frame.symbolOffset.map { " + \($0)" } ?? "") } ?? ""
            return "  \(String(i).padding(toLength: 4, withPad: " ", startingAt: 0))\(hex(frame.address.value))  \(frame.kind == .pc ? "pc" : "ra")  \(image)\(device)"
        }
    }

    static func hex(_ value: UInt64) -> String { TextReportRenderer.hex(Address(value)) }

    static func hex(_ address: Address) -> String { TextReportRenderer.hex(address) }
}
