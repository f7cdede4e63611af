import Foundation
import ReportModel

/// What the report page shows: the symbolicated report, its group and what it lacks.
public struct ReportPageModel: Sendable {
    public var id: Int64
    public var report: SymbolicatedReport
    public var groupFingerprint: String?
    public var groupTitle: String?
    /// The group's deciding frames (`image!function`): a hang's key frames are marked.
    public var keyFrames: [String]
    public var missing: [MissingDebugFile]
    /// This server's URL as the browser reached it, for the upload command.
    public var serverURL: String
    /// What each symbol source last said about the build ids not found (joined when read).
    public var sources: [BuildID: [SymbolSourceAnswer]]
    /// Who the report came from (device, OS version, user, session), when known.
    public var origin: ReportOrigin?

    public init(id: Int64, report: SymbolicatedReport, groupFingerprint: String?, groupTitle: String?, keyFrames: [String],
                missing: [MissingDebugFile], serverURL: String, sources: [BuildID: [SymbolSourceAnswer]] = [:],
                origin: ReportOrigin? = nil) {
        self.sources = sources
        self.origin = origin
        self.id = id
        self.report = report
        self.groupFingerprint = groupFingerprint
        self.groupTitle = groupTitle
        self.keyFrames = keyFrames
        self.missing = missing
        self.serverURL = serverURL
    }
}

/// One report: facts, missing debug files, a hang's flame graph, every thread (crashed first).
public enum ReportPage {
    public static func render(_ m: ReportPageModel) -> String {
        let r = m.report
        let kindWord = r.kind == .lag ? "Hang" : "Crash"
        let title = "\(kindWord) report \(m.id)"
        var body = "<h1 data-k=\"report-title\">\(title)</h1>"
        body += ReportView.facts(r, groupFingerprint: m.groupFingerprint, groupTitle: m.groupTitle, origin: m.origin)
        body += "<p><a href=\"/reports/\(m.id)/raw\" data-k=\"download-raw\" download>Download the raw report</a> · "
            + "<a href=\"/reports/\(m.id)/apple.txt\" data-k=\"download-apple\" download>Apple-format text</a> · "
            + "<a href=\"/reports/\(m.id)/text.txt\" download>Plain text</a></p>"
        if let symbols = r.imageSymbols {
            body += ReportView.imageSymbols(symbols, sources: m.sources, serverURL: m.serverURL)
        } else if !m.missing.isEmpty {
            body += "<h2>Missing debug files</h2><table class=\"missing\"><thead><tr><th>Build id</th><th>Image</th></tr></thead><tbody>"
            for file in m.missing {
                body += "<tr><td class=\"mono\" data-k=\"missing:\(file.buildID.hex)\">\(file.buildID.hex)</td>"
                    + "<td>\(HTML.escape(file.imageName ?? ""))</td></tr>"
            }
            body += "</tbody></table>"
            body += "<p>Upload them from the build that made this binary (the command finds the files by build id):</p>"
            body += "<pre class=\"command\" data-k=\"upload-command\">" + HTML.escape(ReportView.uploadCommand(serverURL: m.serverURL)) + "</pre>"
        }
        if let lag = r.lag, !lag.profile.isEmpty || !lag.samples.isEmpty {
            body += ReportView.flame(lag, keyFrames: m.keyFrames)
        }
        body += ReportView.threads(r)
        if let annotations = r.annotations, !annotations.isEmpty {
            body += "<h2>Annotations</h2><table class=\"annotations\"><thead><tr><th>Module</th><th>Key</th><th>Value</th></tr></thead><tbody>"
            for a in annotations {
                body += "<tr><td>\(HTML.escape(a.module ?? "process"))</td><td class=\"mono\">\(HTML.escape(a.key))</td>"
                    + "<td class=\"mono\" data-k=\"annotation:\(HTML.escape(a.key))\">\(HTML.escape(a.value))</td></tr>"
            }
            body += "</tbody></table>"
        }
        if !r.warnings.isEmpty {
            body += "<h2>Warnings</h2><ul>" + r.warnings.map { "<li>\(HTML.escape($0))</li>" }.joined() + "</ul>"
        }
        return Layout.page(title: title, section: .groups, body: body)
    }
}

/// Pieces of a report shared by the report page and a group's representative report.
public enum ReportView {
    /// The command that uploads a build's debug files to this server.
    public static func uploadCommand(serverURL: String) -> String {
        ImageSymbols.uploadCommand(serverURL: serverURL) + " path/to/build/"
    }

    /// Every image a frame falls in: its symbol status, why, what each symbol source said about
    /// an id not found, and the command that fixes it; unused images are only counted. Image
    /// names and every detail come from reports or sources: all escaped.
    static func imageSymbols(_ symbols: [ImageSymbols], sources: [BuildID: [SymbolSourceAnswer]], serverURL: String) -> String {
        let used = symbols.filter { $0.status != .unused }
        var out = "<h2>Debug files</h2>"
        let unused = symbols.count - used.count
        if unused > 0 {
            out += "<p class=\"muted\" data-k=\"images-unused\">\(unused) image\(unused == 1 ? "" : "s") no frame falls in "
                + "\(unused == 1 ? "is" : "are") not listed (unused: never looked up).</p>"
        }
        guard !used.isEmpty else { return out }
        out += "<table class=\"image-symbols\"><thead><tr><th>Image</th><th>Build id</th><th>Status</th><th>Why</th></tr></thead><tbody>"
        for s in used {
            let key = "image:\(s.image)"
            // Hex digits only: nothing to escape.
            let id = s.buildId?.hex ?? ""
            var why = "<span data-k=\"\(key):detail\">\(HTML.escape(s.detail ?? ""))</span>"
            if let searched = s.searched, !searched.isEmpty {
                why += "<div class=\"muted\" data-k=\"\(key):searched\">Searched: \(HTML.escape(searched.joined(separator: ", ")))</div>"
            }
            if let buildId = s.buildId, s.status == .notFound || s.status == .deviceSymbolsOnly {
                let answers = sources[buildId] ?? []
                if answers.isEmpty {
                    why += "<div class=\"muted\" data-k=\"\(key):sources\">No symbol source was asked.</div>"
                } else {
                    why += "<ul class=\"sources\">"
                    for (n, a) in answers.enumerated() {
                        why += "<li data-k=\"\(key):source:\(n)\">\(HTML.escape(a.source)): \(HTML.escape(a.outcome.rawValue)) "
                            + "(\(HTML.escape(a.detail)), \(WebDate.text(a.answeredAt)))</li>"
                    }
                    why += "</ul>"
                }
            }
            if let fix = s.fix(serverURL: serverURL) {
                why += "<pre class=\"command\" data-k=\"\(key):fix\">\(HTML.escape(fix))</pre>"
            }
            out += "<tr data-k=\"\(key)\"><td class=\"mono\" data-k=\"\(key):name\">\(HTML.escape(s.name ?? ""))</td>"
                + "<td class=\"mono\"\(s.status.isFixedByUpload ? " data-k=\"missing:\(id)\"" : "")>\(id)</td>"
                + "<td><span class=\"status \(s.status.rawValue)\" title=\"\(s.status.phrase)\" data-k=\"\(key):status\">\(s.status.rawValue)</span></td>"
                + "<td>\(why)</td></tr>"
        }
        out += "</tbody></table>"
        if used.contains(where: { $0.status.isFixedByUpload }) {
            out += "<p>Or upload a whole build's debug files (the command finds the files by build id):</p>"
            out += "<pre class=\"command\" data-k=\"upload-command\">" + HTML.escape(uploadCommand(serverURL: serverURL)) + "</pre>"
        }
        return out
    }

    static func facts(_ r: SymbolicatedReport, groupFingerprint: String?, groupTitle: String?, origin: ReportOrigin? = nil) -> String {
        var rows: [(String, String)] = []
        if let fp = groupFingerprint {
            rows.append(("Group", "<a href=\"/groups/\(HTML.pathSegment(fp))\" data-k=\"report-group\">\(HTML.escape(groupTitle ?? fp))</a>"))
        }
        rows.append(("App", "<span data-k=\"report-app\">\(HTML.escape(r.app?.name ?? "?"))</span>"
            + (r.app?.version.map { " <span data-k=\"report-version\">\(HTML.escape($0))</span>" } ?? "")
            + (r.app?.build.map { " (\(HTML.escape($0)))" } ?? "")))
        if let os = r.os { rows.append(("OS", HTML.escape(os))) }
        if let origin, !origin.isEmpty {
            if let model = origin.deviceModel { rows.append(("Device", "<span data-k=\"report-device\">\(HTML.escape(model))</span>")) }
            // The OS line above is the report's own words; this is the version searches and facets count by.
            if let os = origin.osVersion { rows.append(("OS version", "<span data-k=\"report-os-version\">\(HTML.escape(os))</span>")) }
            if let user = origin.user { rows.append(("User", "<span class=\"mono\" data-k=\"report-user\">\(HTML.escape(user))</span>")) }
            if let session = origin.session { rows.append(("Session", "<span class=\"mono\" data-k=\"report-session\">\(HTML.escape(session))</span>")) }
        }
        if let arch = r.arch { rows.append(("Arch", HTML.escape("\(arch)"))) }
        if let t = r.timestamp { rows.append(("Time", HTML.escape(t))) }
        if let e = r.exception {
            let parts = [e.type, e.signal, e.code].compactMap { $0 }.filter { !$0.isEmpty }
            if !parts.isEmpty { rows.append(("Exception", HTML.escape(parts.joined(separator: " · ")))) }
            if let message = e.message, !message.isEmpty, message != e.type { rows.append(("Message", HTML.escape(message))) }
        }
        rows.append(("Format", HTML.escape(r.format)))
        rows.append(("Symbolication", "<span class=\"status\" data-k=\"report-status\">\(HTML.escape(r.status.rawValue))</span>"))
        return "<dl class=\"facts\">" + rows.map { "<dt>\($0.0)</dt><dd>\($0.1)</dd>" }.joined() + "</dl>"
    }

    /// Every thread, the crashed one first, each frame with its inline levels, status,
    /// image and `file:line`; in-app frames highlighted.
    public static func threads(_ r: SymbolicatedReport, only limit: Int? = nil) -> String {
        let ordered = r.threads.filter(\.crashed) + r.threads.filter { !$0.crashed }
        // A hang sent as a profile tree alone has no threads: no empty heading then.
        guard !ordered.isEmpty else { return "" }
        var out = "<h2>Threads</h2>"
        for thread in ordered.prefix(limit ?? ordered.count) {
            let name = thread.name.map { " — " + HTML.escape($0) } ?? ""
            out += "<section class=\"thread\(thread.crashed ? " crashed" : "")\" data-k=\"thread:\(thread.index)\">"
            out += "<h3>Thread \(thread.index)\(name)\(thread.crashed ? " <span class=\"badge crash\">crashed</span>" : "")"
                + (thread.part.map { " <span class=\"muted\">(\(HTML.escape($0)))</span>" } ?? "") + "</h3>"
            out += frameTable(thread.frames, key: "frame:\(thread.index)")
            out += "</section>"
        }
        return out
    }

    static func frameTable(_ frames: [SymbolicatedFrame], key: String) -> String {
        var out = "<table class=\"frames\"><thead><tr><th class=\"num\">#</th><th>Image</th><th>Function</th><th>Location</th>"
            + "<th>Status</th></tr></thead><tbody>"
        for (n, f) in frames.enumerated() {
            var classes = ["frame"]
            if f.inApp == true { classes.append("in-app") }
            if f.inlined { classes.append("inlined") }
            let function = f.function ?? f.symbol ?? f.address.description
            let offset = (f.offset.map { " + \($0)" } ?? "")
            var location = ""
            if let file = f.file {
                location = file + (f.line.map { ":\($0)" } ?? "") + (f.column.map { ":\($0)" } ?? "")
            }
            out += "<tr class=\"\(classes.joined(separator: " "))\" data-k=\"\(key):\(n)\">"
                + "<td class=\"num\">\(f.index)</td>"
                + "<td class=\"mono\">\(HTML.escape(f.image ?? "?"))</td>"
                + "<td class=\"fn mono\" data-k=\"\(key):\(n):function\">\(HTML.escape(function))</td>"
                + "<td class=\"mono\"><span data-k=\"\(key):\(n):location\">\(HTML.escape(location))</span>"
                + "<span class=\"muted\">\(HTML.escape(offset))</span></td>"
                + "<td><span class=\"status \(f.status.rawValue)\" data-k=\"\(key):\(n):status\">\(statusText(f.status))</span>"
                // How the server's unwinder found it (native crashes): fixed words, no input.
                + (f.trust.map { " <span class=\"muted\" data-k=\"\(key):\(n):trust\">\($0.rawValue)</span>" } ?? "")
                + "</td></tr>"
        }
        return out + "</tbody></table>"
    }

    static func statusText(_ s: FrameStatus) -> String {
        switch s {
        case .symbolicated: "symbolicated"
        case .noLineInfo: "no line info"
        case .missingDebugFile: "missing debug file"
        case .deviceSymbol: "device symbol"
        case .noSymbol: "no symbol"
        case .outsideAnyImage: "outside any image"
        case .malformed: "malformed"
        }
    }

    /// A hang's flame graph: the profile tree when the report has one, else the samples.
    static func flame(_ lag: SymbolicatedLag, keyFrames: [String]) -> String {
        let fromProfile = !lag.profile.isEmpty
        let nodes = fromProfile
            ? FlameGraph.nodes(profile: lag.profile, keyFrames: keyFrames)
            : FlameGraph.nodes(samples: lag.samples, keyFrames: keyFrames)
        let layout = FlameGraph.layout(nodes)
        var out = "<h2>Flame graph</h2>"
        out += "<p class=\"legend muted\">From the \(fromProfile ? "thread-profile tree (\(lag.profile.count) nodes)" : "\(lag.samples.count) stack samples"); "
            + "root at the top, width = share of samples. <span><i class=\"swatch key\"></i>lag key frame</span>"
            + "<span><i class=\"swatch in-app\"></i>in-app</span><span><i class=\"swatch other\"></i>other</span></p>"
        out += "<div id=\"flame-info\">Hover a frame to see its share.</div>"
        out += "<div class=\"flame-wrap\" data-k=\"flame\" data-source=\"\(fromProfile ? "profile" : "samples")\" data-total=\"\(layout.total)\">"
            + FlameGraph.svg(nodes, layout) + "</div>"
        if layout.omitted > 0 {
            out += "<p class=\"muted\">\(layout.omitted) nodes deeper than \(FlameGraph.maxLevels) levels are not drawn.</p>"
        }
        return out
    }
}
