import Compression
import Foundation
import Grouping
import IsolatedParsing
import Storage
import APIModel
import JSONFormat
import Presentation
import ReportFormats
import ReportModel
import ReportRendering
import SDKProtocol
import Symbolication
import SymbolStore
import WebView
import WorkerProtocol

/// What `stackline serve` does with bytes from the internet, end to end, and then every view of
/// the stored result (issue 28: "fuzz what the server runs"):
///
/// 1. the body as `BodyReader.readReport` takes it: inflated when it starts with the gzip magic
///    (`Zlib.inflateUntrusted`: bounded in size and ratio);
/// 2. as `POST /api/v1/reports` takes it: `ReportIntake.prepare`'s parse as `serve` runs it, in
///    a parse child: the request frame, `InProcessParser` (detection, splitting, each part's
///    parse and the limit and tree validation of `FormatRegistry.checked`), the reply frame
///    read back (`ParseReply(frame:)`); and, when the body is an SDK batch, as
///    `POST /api/v1/ingest` takes it: `SDKBatch(decoding:)`, each record's payload through
///    `PayloadDecoder` (encrypted ones with a fixed key), then the same intake;
/// 3. for each report that parsed, what a worker without debug files makes of it: the stored
///    part parsed again by its format (`FormatRegistry.parse(_:format:)`, as `JobRunner.handle`
///    does; its summary must be the one intake stored), the `Symbolicator` over an empty store, the `Grouper` with the standard rules, the
///    `CompressedResult` the reply carries (checked `isIntact` as the master does, and decoded
///    back as the pages decode it);
/// 4. every view of that stored result: the report page, the group page (with the report as
///    its representative), the groups page, the hang flame graph inside both, the text and
///    Apple renderings, the JSON answers (`/api/v1/reports/{id}`, `/api/v1/groups/{fp}`) and
///    `stackline parse`'s text and JSON of the raw report.
///
/// Checks besides not crashing: the stored result decodes to the report the worker made; every
/// page is markup of the templates only (tags and attributes the WebView writes, one script:
/// web.js), so report text cannot inject a tag or an event handler; text renderings hold no
/// terminal control characters; JSON answers are JSON; and nothing any view writes is more
/// than `maxGrowth` times the bytes that came in.
enum IntakeToPageTarget {
    /// The inflated-body bound: the server's is 64 MiB (`--max-report-size`); a fuzz input
    /// needs no more than this to reach every parser path, and the run stays under its 1 GiB.
    static let inflatedLimit = 4 << 20

    /// The key encrypted SDK records are decrypted with (the seeds' encrypted payloads use it).
    static let namespaceKey = try? NamespaceKey(bytes: Data((0..<16).map { UInt8($0) }))

    /// Output bytes allowed per input byte, plus `outputSlack`: a frame of a few input bytes
    /// becomes a table row of a few hundred on the pages (see the seeds' ratios in the replay).
    static let maxGrowth = 1_000
    static let outputSlack = 1 << 20

    /// The worker's symbolicator over an empty store: every image's debug file is missing, as
    /// on a server that has none uploaded. One per process, as a worker keeps one.
    nonisolated(unsafe) static let symbolicator: Symbolicator = {
        let root = Scratch.shared.path + "/empty-store"
        try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        return Symbolicator(stores: [SymbolStoreDirectory(root: root)])
    }()

    static let grouper = Grouper(rules: .standard)

    static func run(_ input: Data) throws(FuzzFailure) -> String {
        if FuzzTarget.validUTF8Only, !Zlib.isGzip(input), !FuzzTarget.isValidUTF8(input) { return "skipped: not valid UTF-8" }
        // BodyReader.readReport: a body starting with the gzip magic is inflated, under the limit
        // and the ratio no report reaches.
        var body = input
        var outcomes: [String] = []
        if Zlib.isGzip(input) {
            do { body = try Zlib.inflateUntrusted(input, limit: inflatedLimit) } catch {
                return "gzip refused: \(error)"
            }
            if FuzzTarget.validUTF8Only, !FuzzTarget.isValidUTF8(body) { return "skipped: inflated body is not valid UTF-8" }
            outcomes.append("inflated \(input.count) to \(body.count) bytes")
        }
        let budget = input.count
        outcomes.append("reports: " + (try intake(body, inputSize: budget)))
        // POST /api/v1/ingest: the same body as an SDK batch.
        if let batch = try? SDKBatch(decoding: body) {
            var records: [String] = []
            for index in batch.processingOrder {
                guard case .record(let record) = batch.entries[index] else {
                    records.append("record \(index): refused")
                    continue
                }
                guard record.monitorClass.becomesReport, let payload = record.payload, !payload.isEmpty else {
                    records.append("record \(index): not stored")
                    continue
                }
                let key = record.encrypted ? namespaceKey : nil
                let data: Data
                do { data = try PayloadDecoder.decode(payload, decryptingWith: key, limit: inflatedLimit) } catch {
                    records.append("record \(index): payload refused: \(error)")
                    continue
                }
                if FuzzTarget.validUTF8Only, !FuzzTarget.isValidUTF8(data) {
                    records.append("record \(index): skipped, not valid UTF-8")
                    continue
                }
                records.append("record \(index): " + (try intake(data, inputSize: budget, app: record.meta.appName, version: record.meta.appVersion)))
            }
            outcomes.append("sdk batch of \(batch.entries.count): " + records.joined(separator: "; "))
        }
        return outcomes.joined(separator: " | ")
    }

    /// `ReportIntake.prepare` as `serve` runs it: the input sent to a parse child in a request
    /// frame, parsed there (`InProcessParser`, what `ParseService` runs), the reply frame read
    /// back; then the worker and the pages for each report the reply says was parsed.
    private static func intake(_ data: Data, inputSize: Int, app: String? = nil, version: String? = nil) throws(FuzzFailure) -> String {
        let reply: ParseReply
        do {
            let request = try ParseRequest.encodedFrame(data)
            let input = try ParseRequest.input(frame: request)
            guard input == data else { throw FuzzFailure("parse request: the frame carries other bytes than the input") }
            // ParseService: a reply over the frame limit becomes a refusal.
            var frame: Data
            do { frame = try InProcessParser().parse(input).encodedFrame() } catch {
                frame = try ParseReply.refused(ParseRefusal("the parsed reports do not fit in one reply frame: \(error)")).encodedFrame()
            }
            reply = try ParseReply(frame: frame)
        } catch let failure as FuzzFailure {
            throw failure
        } catch {
            return "refused: input over the frame limit: \(error)"
        }
        let parts: [ParsedPartSummary]
        switch reply {
        case .refused(let refusal):
            if refusal.description.isEmpty { throw FuzzFailure("refusal without a message") }
            return "refused: \(refusal.description)"
        case .parts(let parsed):
            parts = parsed
        }
        var summaries: [String] = []
        for (n, part) in parts.enumerated() {
            switch part.outcome {
            case .failure(let refusal):
                if refusal.description.isEmpty { throw FuzzFailure("part \(n): refusal without a message") }
                summaries.append("refused: \(refusal.description)")
            case .success(let accepted):
                // What intake stores: the part's bytes (nil: the whole input), its format, and
                // the app and version the report names, else the sender's.
                let stored = part.data ?? data
                guard stored.count <= data.count else { throw FuzzFailure("part \(n) is larger than its input") }
                let facts = StoredFacts(app: accepted.app ?? app, version: accepted.version ?? version)
                // The worker parses the stored part by its format (JobRunner.handle): what intake
                // accepted and validated must be what the worker gets.
                let raw: RawReport
                do { raw = try FormatRegistry.standard.parse(stored, format: part.format) } catch {
                    throw FuzzFailure("worker: intake accepted a \(part.format) report that the worker's parse refuses: \(error)")
                }
                guard ParsedReportSummary(raw) == accepted else {
                    throw FuzzFailure("worker: the \(part.format) report the worker parses is not the one intake accepted (\(ParsedReportSummary(raw)) against \(accepted))")
                }
                summaries.append(try showStored(raw, facts: facts, inputSize: inputSize, reportId: Int64(n + 1)))
            }
        }
        return summaries.joined(separator: "; ")
    }

    /// The columns of `reports` the group queries read (NewReport's app and version).
    struct StoredFacts {
        var app: String?
        var version: String?
    }

    /// The worker's processing of one stored report, the master's check of the result, and every view of it.
    private static func showStored(_ raw: RawReport, facts: StoredFacts, inputSize: Int, reportId: Int64) throws(FuzzFailure) -> String {
        try ReportTargets.checkModel(raw)
        var views = Views(inputSize: inputSize)
        // `stackline parse` (and the replies that show the parsed report).
        try views.text("parse text", ParsedReportText.render(raw))
        do { try views.json("parse json", ParsedReportJSON.render(raw)) } catch let failure as FuzzFailure { throw failure } catch {
            throw FuzzFailure("parse json: cannot encode a parsed report: \(error)")
        }

        // The worker (JobRunner.handle): symbolicate, group, encode the result.
        var worked = symbolicator.symbolicate(raw)
        let key = grouper.group(&worked)
        worked.id = reportId
        let result: CompressedResult
        do { result = try CompressedResult(worked) } catch {
            throw FuzzFailure("worker: cannot encode the report: \(error)")
        }
        guard result.size <= Framing.maxFrame else {
            // The worker answers permanentError: nothing is stored, no page shows it.
            return "parsed as \(raw.format), result of \(result.size) bytes over the frame limit"
        }
        // The master stores only what inflates to its stated size; the pages decode what it stored.
        guard result.isIntact else { throw FuzzFailure("master: the worker's result is not intact") }
        var report: SymbolicatedReport
        do { report = try result.report() } catch {
            throw FuzzFailure("pages: the stored result does not decode: \(error)")
        }
        report.id = reportId
        guard report == worked else { throw FuzzFailure("pages: the stored result decodes to another report than the worker made") }
        try views.bounded("result json", result.size)

        // The group the master files it under, as the group queries read it back.
        let summary = try groupSummary(key, facts: facts, reportId: reportId)
        let groupJSON = GroupJSON(summary)
        let missing = result.missing

        // Pages: /reports/ID, /groups/FP (this report as the representative), / (the groups list).
        try views.html("report page", ReportPage.render(ReportPageModel(
            id: reportId, report: report, groupFingerprint: key.fingerprint, groupTitle: key.title, keyFrames: key.frames,
            missing: missing, serverURL: "http://127.0.0.1:8080",
            // What intake stored from the report itself, as the page reads it back.
            origin: ReportOrigin(deviceModel: raw.device?.model, osVersion: raw.device?.osVersion, user: raw.device?.id))))
        let appVersions = summary.versions
        let history = VersionHistory.analyse(groupVersions: summary.versions, appVersions: appVersions, firstVersion: facts.version ?? "")
        try views.html("group page", GroupPage.render(GroupPageModel(
            group: groupJSON, frames: summary.frames, latestReportIds: [reportId], representativeReportId: reportId,
            representative: report, history: history, appVersions: appVersions.keys.sorted(by: VersionOrder.less))))
        try views.html("groups page", GroupsPage.render(GroupsPageModel(
            groups: [groupJSON], trends: [summary.fingerprint: [0, 1]], trendDays: 2, filter: GroupsFilterForm(), page: 1,
            hasNextPage: false)))

        // /api/v1/reports/ID?format=text|apple|json, /reports/ID/{text,apple}.txt, /api/v1/groups/FP.
        do {
            try views.text("text", ReportPrinter.render(report, format: .text, group: summary))
            try views.text("apple", ReportPrinter.render(report, format: .apple, group: summary))
            try views.json("report json", JSONReportRenderer.render(object: ReportPrinter.document(report, group: summary)))
            try views.json("group json", String(decoding: JSONStyle.document.encode(groupJSON), as: UTF8.self))
        } catch let failure as FuzzFailure { throw failure } catch {
            throw FuzzFailure("a rendering threw: \(error)")
        }
        return "parsed as \(raw.format): \(report.status.rawValue), group \(key.fingerprint.prefix(8)), \(views.written) bytes of views"
    }

    /// The group row as the master's ledger writes it and `db.group(fingerprint:)` reads it
    /// (one report): `GroupSummary` has no public initializer, and decoding is how it is made.
    private static func groupSummary(_ key: GroupKey, facts: StoredFacts, reportId: Int64) throws(FuzzFailure) -> GroupSummary {
        var row: [String: JSONValue] = [
            "fingerprint": .string(key.fingerprint), "kind": .string(key.kind.rawValue), "title": .string(key.title),
            "count": .integer(1), "firstSeen": .integer(0), "lastSeen": .integer(0),
            "versions": .object([facts.version ?? "": .integer(1)]), "rulesVersion": .integer(Int64(key.rulesVersion)),
            "representativeReportId": .integer(reportId), "frames": .array(key.frames.map(JSONValue.string)),
            "users": .integer(1), "sessions": .integer(1),
            "triage": .object(["state": .string("open"), "ignoreReportsSeen": .integer(0)]),
        ]
        if let app = facts.app { row["app"] = .string(app) }
        do {
            return try JSONDecoder().decode(GroupSummary.self, from: JSONValue.object(row).encoded())
        } catch {
            throw FuzzFailure("harness: cannot make the group row: \(error)")
        }
    }

    /// Checks each view as it is written and counts their bytes.
    struct Views {
        let inputSize: Int
        var written = 0

        var limit: Int { inputSize * IntakeToPageTarget.maxGrowth + IntakeToPageTarget.outputSlack }

        mutating func bounded(_ name: String, _ size: Int) throws(FuzzFailure) {
            guard size <= limit else {
                throw FuzzFailure("\(name): \(size) bytes from \(inputSize) bytes of input (more than \(IntakeToPageTarget.maxGrowth)× + \(IntakeToPageTarget.outputSlack))")
            }
            written += size
        }

        mutating func html(_ name: String, _ page: String) throws(FuzzFailure) {
            try bounded(name, page.utf8.count)
            try Markup.check(page, name: name)
        }

        /// Every line passed through `TerminalText.escape`: no control character but the line breaks.
        mutating func text(_ name: String, _ text: String) throws(FuzzFailure) {
            try bounded(name, text.utf8.count)
            if let bad = text.unicodeScalars.first(where: { $0 != "\n" && TerminalText.isUnsafe($0) }) {
                throw FuzzFailure("\(name): unescaped control character U+\(String(bad.value, radix: 16, uppercase: true))")
            }
        }

        mutating func json(_ name: String, _ text: String) throws(FuzzFailure) {
            try bounded(name, text.utf8.count)
            guard (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) != nil else {
                throw FuzzFailure("\(name): the answer is not JSON")
            }
        }
    }
}

/// A page is markup of the templates only: every `<` opens a tag the WebView writes, with
/// attributes it writes, each value quoted, and the one script is the layout's web.js. Report
/// text is escaped (`HTML.escape`), so a tag or attribute of its own means it was not.
enum Markup {
    static let tags: Set<String> = [
        "!doctype", "html", "head", "meta", "title", "link", "script", "body", "header", "nav", "main", "form", "button",
        "h1", "h2", "h3", "p", "a", "span", "dl", "dt", "dd", "table", "thead", "tbody", "tr", "th", "td", "section",
        "ol", "ul", "li", "code", "pre", "div", "svg", "rect", "g", "text", "i", "label", "input", "select", "option",
    ]
    static let attributes: Set<String> = [
        "class", "id", "href", "src", "rel", "lang", "charset", "name", "content", "type", "value", "method", "action",
        "placeholder", "role", "aria-label", "xmlns", "viewbox", "x", "y", "width", "height", "defer", "download",
        "selected", "for", "autocomplete", "required", "title",
    ]

    static func check(_ page: String, name: String) throws(FuzzFailure) {
        let b = Array(page.utf8)
        var i = 0
        var scripts = 0
        func fail(_ what: String) -> FuzzFailure {
            let at = String(decoding: b[max(0, i - 60)..<min(b.count, i + 60)], as: UTF8.self)
            return FuzzFailure("\(name): \(what) near …\(at)…")
        }
        func isNameByte(_ c: UInt8) -> Bool {
            (c >= 0x61 && c <= 0x7A) || (c >= 0x41 && c <= 0x5A) || (c >= 0x30 && c <= 0x39) || c == 0x2D || c == 0x21
        }
        func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x0A || c == 0x09 || c == 0x0D }
        while i < b.count {
            guard b[i] == UInt8(ascii: "<") else {
                if b[i] == UInt8(ascii: ">") { throw fail("a '>' outside a tag") }
                i += 1
                continue
            }
            i += 1
            let closing = i < b.count && b[i] == UInt8(ascii: "/")
            if closing { i += 1 }
            let start = i
            while i < b.count, isNameByte(b[i]) { i += 1 }
            let tag = String(decoding: b[start..<i], as: UTF8.self).lowercased()
            guard tags.contains(tag) else { throw fail("tag <\(tag)> the templates do not write") }
            if tag == "!doctype" {
                while i < b.count, b[i] != UInt8(ascii: ">") { i += 1 }
                i += 1
                continue
            }
            var attributes: [String: String] = [:]
            while true {
                while i < b.count, isSpace(b[i]) { i += 1 }
                guard i < b.count else { throw fail("unterminated tag <\(tag)>") }
                if b[i] == UInt8(ascii: ">") { i += 1; break }
                let nameStart = i
                while i < b.count, isNameByte(b[i]) { i += 1 }
                let attribute = String(decoding: b[nameStart..<i], as: UTF8.self).lowercased()
                guard !attribute.isEmpty else { throw fail("a stray byte in tag <\(tag)>") }
                guard attributes[attribute] == nil else { throw fail("attribute \(attribute) twice in <\(tag)>") }
                guard self.attributes.contains(attribute) || (attribute.hasPrefix("data-") && attribute.count > 5) else {
                    throw fail("attribute \(attribute) the templates do not write")
                }
                var value = ""
                if i < b.count, b[i] == UInt8(ascii: "=") {
                    i += 1
                    guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw fail("unquoted value of \(attribute)") }
                    i += 1
                    let valueStart = i
                    while i < b.count, b[i] != UInt8(ascii: "\"") {
                        if b[i] == UInt8(ascii: "<") || b[i] == UInt8(ascii: ">") { throw fail("'<' or '>' in the value of \(attribute)") }
                        i += 1
                    }
                    guard i < b.count else { throw fail("unterminated value of \(attribute)") }
                    value = String(decoding: b[valueStart..<i], as: UTF8.self)
                    i += 1
                }
                attributes[attribute] = value
            }
            if tag == "a", let href = attributes["href"], !(href.hasPrefix("/") || href.hasPrefix("?") || href.hasPrefix("#")) {
                throw fail("a link to \(href)")
            }
            if tag == "script", !closing {
                scripts += 1
                guard attributes["src"] == "/static/web.js", scripts == 1 else { throw fail("a script that is not the layout's") }
            }
        }
        guard scripts == 1 else { throw FuzzFailure("\(name): \(scripts) scripts, the layout has one") }
    }
}
