import Foundation
import JSONFormat

/// A webhook body with `{{field}}` placeholders (docs/alerts.md). Values are inserted
/// JSON-escaped without quotes, so `"text": "{{title}}"` stays valid JSON whatever a report's
/// title holds; `{{event}}` is the whole event object.
public enum WebhookTemplate {
    public static let fields = [
        "id", "rule", "severity", "kind", "fingerprint", "groupKind", "title", "app", "version", "count", "firstSeen",
        "lastSeen", "link", "summary", "message", "event",
    ]

    /// Why a template cannot be used.
    public struct Problem: Error, CustomStringConvertible {
        public var description: String
    }

    /// Checks that every placeholder is known and that a sample renders to valid JSON.
    public static func check(_ template: String) throws(Problem) {
        var rest = Substring(template)
        while let open = rest.range(of: "{{") {
            guard let close = rest[open.upperBound...].range(of: "}}") else { throw Problem(description: "a {{ is never closed") }
            let name = String(rest[open.upperBound..<close.lowerBound]).trimmingCharacters(in: .whitespaces)
            guard fields.contains(name) else {
                throw Problem(description: "unknown placeholder {{\(name)}} (known: \(fields.joined(separator: ", ")))")
            }
            rest = rest[close.upperBound...]
        }
        let sample = AlertEvent(
            id: 1, rule: "r", severity: "info", kind: "new_group", fingerprint: "f", groupKind: "crash", title: "\"<t>\"\n",
            app: "a", version: "1", counts: AlertCounts(total: 1), firstSeen: "", lastSeen: "", link: nil, summary: "s")
        guard (try? JSONSerialization.jsonObject(with: render(template, sample))) != nil else {
            throw Problem(description: "does not render to valid JSON (put string placeholders inside quotes)")
        }
    }

    public static func render(_ template: String, _ event: AlertEvent) -> Data {
        var out = ""
        var rest = Substring(template)
        while let open = rest.range(of: "{{"), let close = rest[open.upperBound...].range(of: "}}") {
            out += rest[..<open.lowerBound]
            let name = rest[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespaces)
            out += value(name, event)
            rest = rest[close.upperBound...]
        }
        out += rest
        return Data(out.utf8)
    }

    static func value(_ name: String, _ event: AlertEvent) -> String {
        switch name {
        case "event": return String(decoding: event.json(), as: UTF8.self)
        case "id": return event.id.map(String.init) ?? ""
        case "count": return String(event.counts.total)
        default: break
        }
        let text: String? =
            switch name {
            case "rule": event.rule
            case "severity": event.severity
            case "kind": event.kind
            case "fingerprint": event.fingerprint
            case "groupKind": event.groupKind
            case "title": event.title
            case "app": event.app
            case "version": event.version
            case "firstSeen": event.firstSeen
            case "lastSeen": event.lastSeen
            case "link": event.link
            case "summary": event.summary
            case "message": event.message
            default: nil
            }
        return jsonEscaped(text ?? "")
    }

    /// The inside of a JSON string literal holding `text`.
    static func jsonEscaped(_ text: String) -> String {
        var json = JSONBytes()
        json.string(text)
        return String(decoding: json.bytes.dropFirst().dropLast(), as: UTF8.self)
    }

    /// The body of a chat tool's incoming webhook: a plain text message (each tool's
    /// documented minimal shape; a keyword-protected DingTalk or Feishu bot needs its keyword
    /// in the text, which the summary's severity tag or a template can carry).
    /// `feishuSignature`: the `timestamp` and `sign` a Feishu bot with signing on expects in the body.
    public static func preset(
        _ preset: WebhookPreset, _ event: AlertEvent, feishuSignature: (timestamp: String, sign: String)? = nil
    ) -> Data {
        let text: JSONValue = .string(event.message)
        var object: [String: JSONValue] =
            switch preset {
            case .slack: ["text": text]
            case .dingtalk: ["msgtype": .string("text"), "text": .object(["content": text])]
            case .feishu: ["msg_type": .string("text"), "content": .object(["text": text])]
            case .wecom: ["msgtype": .string("text"), "text": .object(["content": text])]
            }
        if preset == .feishu, let feishuSignature {
            object["timestamp"] = .string(feishuSignature.timestamp)
            object["sign"] = .string(feishuSignature.sign)
        }
        return JSONValue.object(object).encoded()
    }
}
