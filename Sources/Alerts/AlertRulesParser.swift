import Foundation
import JSONFormat
import ServiceRuntime

/// Reads a rules file (JSON, docs/alerts.md) into an `AlertConfiguration`. Every field is
/// checked, unknown fields included (a misspelt `multipler` must not silently mean the
/// default), and an error names the file and the field's JSON path.
public enum AlertRulesParser {
    /// Reads and checks `path`. `environment` (the program's, as its entry point read it)
    /// supplies `urlEnv` / `passwordEnv` values.
    public static func load(path: String, environment: [String: String]) throws(AlertRulesError) -> AlertConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AlertRulesError(file: path, field: "", problem: "cannot read the file")
        }
        return try parse(data, file: path, environment: environment)
    }

    /// Checks `data`; `file` only names it in errors.
    public static func parse(
        _ data: Data, file: String, environment: [String: String] = [:]
    ) throws(AlertRulesError) -> AlertConfiguration {
        let root: JSONValue
        do { root = try JSONDecoder().decode(JSONValue.self, from: data) } catch {
            throw AlertRulesError(file: file, field: "", problem: "not valid JSON (\(describe(error)))")
        }
        let reader = FieldReader(file: file, environment: environment)
        return try reader.configuration(root)
    }
}

/// Walks the JSON with the path of the value at hand, for errors.
private struct FieldReader {
    let file: String
    let environment: [String: String]

    func fail(_ field: String, _ problem: String) -> AlertRulesError {
        AlertRulesError(file: file, field: field, problem: problem)
    }

    func object(_ value: JSONValue?, _ field: String, allowed: Set<String>) throws(AlertRulesError) -> [String: JSONValue] {
        guard case .object(let object) = value else { throw fail(field, "expected a JSON object") }
        if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            let prefix = field.isEmpty ? "" : field + "."
            throw fail(prefix + unknown, "unknown field (expected one of: \(allowed.sorted().joined(separator: ", ")))")
        }
        return object
    }

    func string(_ object: [String: JSONValue], _ key: String, _ field: String) throws(AlertRulesError) -> String? {
        guard let value = object[key] else { return nil }
        guard case .string(let text) = value else { throw fail(field, "expected a string") }
        return text
    }

    func requiredString(_ object: [String: JSONValue], _ key: String, _ field: String) throws(AlertRulesError) -> String {
        guard let text = try string(object, key, field) else { throw fail(field, "missing") }
        guard !text.isEmpty else { throw fail(field, "must not be empty") }
        return text
    }

    func number(_ object: [String: JSONValue], _ key: String, _ field: String) throws(AlertRulesError) -> Double? {
        guard let value = object[key] else { return nil }
        guard let n = value.numberValue, n.isFinite else { throw fail(field, "expected a number") }
        return n
    }

    func integer(_ object: [String: JSONValue], _ key: String, _ field: String, min: Int) throws(AlertRulesError) -> Int? {
        guard let n = try number(object, key, field) else { return nil }
        guard n == n.rounded(), n >= Double(min), n <= 1e12 else { throw fail(field, "expected a whole number of at least \(min)") }
        return Int(n)
    }

    func bool(_ object: [String: JSONValue], _ key: String, _ field: String) throws(AlertRulesError) -> Bool? {
        guard let value = object[key] else { return nil }
        guard case .bool(let b) = value else { throw fail(field, "expected true or false") }
        return b
    }

    /// A value given inline (`key`) or by environment variable (`key + "Env"`), not both.
    func secret(_ object: [String: JSONValue], _ key: String, _ field: String) throws(AlertRulesError) -> String? {
        let inline = try string(object, key, field + "." + key)
        let envField = field + "." + key + "Env"
        guard let name = try string(object, key + "Env", envField) else { return inline }
        guard inline == nil else { throw fail(envField, "give \(key) or \(key)Env, not both") }
        guard let value = environment[name], !value.isEmpty else {
            throw fail(envField, "the environment variable \(name) is not set")
        }
        return value
    }

    func httpURL(_ text: String, _ field: String) throws(AlertRulesError) -> URL {
        // The URL may hold a key: the message never repeats it.
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.host != nil
        else { throw fail(field, "expected an http:// or https:// URL") }
        return url
    }

    func configuration(_ root: JSONValue) throws(AlertRulesError) -> AlertConfiguration {
        let top = try object(root, "", allowed: ["baseURL", "pollSeconds", "delivery", "targets", "rules"])
        var baseURL: String?
        if let text = try string(top, "baseURL", "baseURL") {
            _ = try httpURL(text, "baseURL")
            baseURL = text.hasSuffix("/") ? String(text.dropLast()) : text
        }
        let poll = try number(top, "pollSeconds", "pollSeconds") ?? 5
        guard poll >= 0.05, poll <= 3600 else { throw fail("pollSeconds", "expected a number of seconds from 0.05 to 3600") }
        let delivery = try deliveryPolicy(top["delivery"])
        guard let targetsValue = top["targets"] else { throw fail("targets", "missing") }
        guard case .object(let targetObjects) = targetsValue else { throw fail("targets", "expected a JSON object of named targets") }
        var targets: [String: AlertTarget] = [:]
        for name in targetObjects.keys.sorted() {
            let field = "targets.\(name)"
            guard Self.isName(name) else { throw fail(field, "a target name is letters, digits, '.', '_' or '-'") }
            targets[name] = try target(targetObjects[name], field)
        }
        guard let rulesValue = top["rules"] else { throw fail("rules", "missing") }
        guard case .array(let ruleList) = rulesValue else { throw fail("rules", "expected a JSON array of rules") }
        var rules: [AlertRule] = []
        for (i, value) in ruleList.enumerated() {
            let rule = try rule(value, "rules[\(i)]", targets: targets)
            guard !rules.contains(where: { $0.name == rule.name }) else {
                throw fail("rules[\(i)].name", "another rule is already named \(rule.name)")
            }
            rules.append(rule)
        }
        return AlertConfiguration(baseURL: baseURL, pollSeconds: poll, delivery: delivery, targets: targets, rules: rules)
    }

    static func isName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 100
            && name.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || "._-".unicodeScalars.contains($0) }
    }

    func deliveryPolicy(_ value: JSONValue?) throws(AlertRulesError) -> DeliveryPolicy {
        guard let value else { return DeliveryPolicy(maxAttempts: 8, backoff: Backoff(initialMs: 30_000, maxMs: 3_600_000, jitter: DeliveryPolicy.jitter)) }
        let o = try object(value, "delivery", allowed: ["maxAttempts", "initialBackoffSeconds", "maxBackoffSeconds"])
        let attempts = try integer(o, "maxAttempts", "delivery.maxAttempts", min: 1) ?? 8
        let initial = try number(o, "initialBackoffSeconds", "delivery.initialBackoffSeconds") ?? 30
        guard initial >= 0.01, initial <= 604_800 else {
            throw fail("delivery.initialBackoffSeconds", "expected 0.01 seconds to a week (604800)")
        }
        let maximum = try number(o, "maxBackoffSeconds", "delivery.maxBackoffSeconds") ?? max(3600, initial)
        guard maximum >= initial else { throw fail("delivery.maxBackoffSeconds", "must not be less than initialBackoffSeconds") }
        // Milliseconds in an Int64 below: a larger number (JSON allows 1e308) would trap.
        guard maximum <= 604_800 else { throw fail("delivery.maxBackoffSeconds", "expected at most a week (604800 seconds)") }
        return DeliveryPolicy(maxAttempts: attempts, backoff: Backoff(initialMs: Int64(initial * 1000), maxMs: Int64(maximum * 1000), jitter: DeliveryPolicy.jitter))
    }

    func target(_ value: JSONValue?, _ field: String) throws(AlertRulesError) -> AlertTarget {
        guard case .object(let o) = value else { throw fail(field, "expected a JSON object") }
        switch try requiredString(o, "type", field + ".type") {
        case "webhook": return .webhook(try webhook(.object(o), field))
        case "email": return .email(try email(.object(o), field))
        default: throw fail(field + ".type", "expected webhook or email")
        }
    }

    func webhook(_ value: JSONValue, _ field: String) throws(AlertRulesError) -> WebhookTarget {
        let o = try object(
            value, field, allowed: ["type", "url", "urlEnv", "headers", "preset", "template", "timeoutSeconds", "secret", "secretEnv"])
        guard let urlText = try secret(o, "url", field) else { throw fail(field + ".url", "missing") }
        let url = try httpURL(urlText, field + ".url")
        var headers: [String: String] = [:]
        if let h = o["headers"] {
            guard case .object(let pairs) = h else { throw fail(field + ".headers", "expected a JSON object of header names and values") }
            for (name, value) in pairs {
                guard case .string(let text) = value else { throw fail(field + ".headers.\(name)", "expected a string") }
                // A header name or value with a line break would smuggle a second header.
                guard !name.isEmpty, name.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != ":" }),
                    !text.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" })
                else { throw fail(field + ".headers.\(name)", "not a valid header name or value") }
                headers[name] = text
            }
        }
        let presetName = try string(o, "preset", field + ".preset")
        let template = try string(o, "template", field + ".template")
        let body: WebhookBody
        switch (presetName, template) {
        case (.some, .some): throw fail(field + ".template", "give preset or template, not both")
        case (.some(let name), nil):
            guard let preset = WebhookPreset(rawValue: name) else {
                throw fail(field + ".preset", "expected one of: \(WebhookPreset.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            body = .preset(preset)
        case (nil, .some(let text)):
            do { try WebhookTemplate.check(text) } catch { throw fail(field + ".template", error.description) }
            body = .template(text)
        case (nil, nil): body = .event
        }
        let timeout = try number(o, "timeoutSeconds", field + ".timeoutSeconds") ?? 10
        guard timeout > 0, timeout <= 600 else { throw fail(field + ".timeoutSeconds", "expected 0 to 600 seconds") }
        let secret = try self.secret(o, "secret", field)
        if secret != nil, body != .preset(.dingtalk), body != .preset(.feishu) {
            throw fail(field + (o["secret"] != nil ? ".secret" : ".secretEnv"), "a signing secret is for the dingtalk and feishu presets")
        }
        return WebhookTarget(url: url, headers: headers, body: body, timeoutSeconds: timeout, signingSecret: secret)
    }

    func email(_ value: JSONValue, _ field: String) throws(AlertRulesError) -> EmailTarget {
        let o = try object(
            value, field,
            allowed: [
                "type", "host", "port", "starttls", "caFile", "username", "password", "passwordEnv", "from", "to", "heloName",
                "timeoutSeconds",
            ])
        let host = try requiredString(o, "host", field + ".host")
        guard host.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else { throw fail(field + ".host", "not a host name or address") }
        let startTLS = try bool(o, "starttls", field + ".starttls") ?? false
        let port = try integer(o, "port", field + ".port", min: 1) ?? (startTLS ? 587 : 25)
        let caFile = try string(o, "caFile", field + ".caFile")
        if let caFile {
            guard startTLS else { throw fail(field + ".caFile", "only used with starttls") }
            guard FileManager.default.isReadableFile(atPath: caFile) else { throw fail(field + ".caFile", "cannot read \(caFile)") }
        }
        guard port <= 65535 else { throw fail(field + ".port", "expected a port from 1 to 65535") }
        let username = try string(o, "username", field + ".username")
        let password = try secret(o, "password", field)
        guard (username == nil) == (password == nil) else { throw fail(field + ".username", "username and password go together") }
        let loopback = ["localhost", "127.0.0.1", "::1"].contains(host.lowercased())
        guard password == nil || startTLS || loopback else {
            throw fail(field + ".starttls", "a password would cross the network in clear: set starttls to true")
        }
        let from = try requiredString(o, "from", field + ".from")
        try checkAddress(from, field + ".from")
        guard let toValue = o["to"] else { throw fail(field + ".to", "missing") }
        let to: [String]
        if case .string(let one) = toValue { to = [one] } else if let texts = toValue.strings {
            to = texts
        } else { throw fail(field + ".to", "expected an address or an array of addresses") }
        guard !to.isEmpty else { throw fail(field + ".to", "must name at least one address") }
        for (i, address) in to.enumerated() { try checkAddress(address, field + ".to[\(i)]") }
        let helo = try string(o, "heloName", field + ".heloName") ?? "stackline"
        guard Self.isName(helo) else { throw fail(field + ".heloName", "expected a host name") }
        let timeout = try number(o, "timeoutSeconds", field + ".timeoutSeconds") ?? 30
        guard timeout > 0, timeout <= 600 else { throw fail(field + ".timeoutSeconds", "expected 0 to 600 seconds") }
        return EmailTarget(
            host: host, port: port, startTLS: startTLS, caFile: caFile, username: username, password: password, from: from, to: to,
            heloName: helo, timeoutSeconds: timeout)
    }

    /// A bare address (`ops@example.com`): it goes into SMTP commands and mail headers as is,
    /// so blanks, line breaks and angle brackets are refused.
    func checkAddress(_ address: String, _ field: String) throws(AlertRulesError) {
        let parts = address.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty,
            address.allSatisfy({ $0.isASCII && !$0.isWhitespace && !"<>,;\"()".contains($0) && $0.asciiValue.map { $0 >= 0x21 && $0 < 0x7F } == true })
        else { throw fail(field, "expected a plain address such as ops@example.com") }
    }

    func rule(_ value: JSONValue, _ field: String, targets: [String: AlertTarget]) throws(AlertRulesError) -> AlertRule {
        guard case .object(let o) = value else { throw fail(field, "expected a JSON object") }
        let kindName = try requiredString(o, "kind", field + ".kind")
        var allowed: Set<String> = ["name", "kind", "severity", "targets", "app", "groups"]
        switch kindName {
        case "new_group": break
        // `regression` with `minGapReports` is a rules file from before triage: that rule is now `back_after_gap`.
        case "regression", "back_after_gap": allowed.insert("minGapReports")
        case "spike": allowed.formUnion(["multiplier", "minCount", "baselineHours", "bucketMinutes"])
        case "hang_budget": allowed.insert("maxCount")
        case "velocity": allowed.formUnion(["usersPercent", "minUsers", "windowMinutes"])
        case "release_health": allowed.formUnion(["crashFreeSessions", "crashFreeUsers", "minSessions"])
        default:
            throw fail(field + ".kind", "expected new_group, regression, back_after_gap, spike, hang_budget, velocity or release_health")
        }
        _ = try object(value, field, allowed: allowed)
        let name = try requiredString(o, "name", field + ".name")
        guard Self.isName(name) else { throw fail(field + ".name", "a rule name is letters, digits, '.', '_' or '-'") }
        let severityName = try requiredString(o, "severity", field + ".severity")
        guard let severity = AlertSeverity(rawValue: severityName) else {
            throw fail(field + ".severity", "expected one of: \(AlertSeverity.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard let names = o["targets"]?.strings, !names.isEmpty else {
            throw fail(field + ".targets", "expected a non-empty array of target names")
        }
        for (i, target) in names.enumerated() where targets[target] == nil {
            throw fail(field + ".targets[\(i)]", "no target named \(target) in targets")
        }
        let app = try string(o, "app", field + ".app")
        var groups = AlertGroupKind.crash
        if let text = try string(o, "groups", field + ".groups") {
            guard let kind = AlertGroupKind(rawValue: text) else { throw fail(field + ".groups", "expected crash, lag or any") }
            groups = kind
        }
        let kind: AlertRuleKind
        switch kindName {
        case "regression" where o["minGapReports"] == nil:
            kind = .regression
        case "regression", "back_after_gap":
            kind = .backAfterGap(minGapReports: try integer(o, "minGapReports", field + ".minGapReports", min: 1) ?? 1)
        case "spike":
            let multiplier = try number(o, "multiplier", field + ".multiplier") ?? 3
            guard multiplier >= 1 else { throw fail(field + ".multiplier", "expected a number of at least 1") }
            let minCount = try integer(o, "minCount", field + ".minCount", min: 1) ?? 10
            let bucket = try integer(o, "bucketMinutes", field + ".bucketMinutes", min: 1) ?? 60
            guard bucket <= 24 * 60 else { throw fail(field + ".bucketMinutes", "at most 1440") }
            let hours = try integer(o, "baselineHours", field + ".baselineHours", min: 1) ?? 168
            guard hours <= 24 * 90 else { throw fail(field + ".baselineHours", "at most 2160 (90 days)") }
            let buckets = max(1, hours * 60 / bucket)
            kind = .spike(multiplier: multiplier, minCount: minCount, baselineBuckets: buckets, bucketMinutes: bucket)
        case "hang_budget":
            guard let maxCount = try integer(o, "maxCount", field + ".maxCount", min: 0) else { throw fail(field + ".maxCount", "missing") }
            guard o["groups"] == nil || groups == .lag else { throw fail(field + ".groups", "a hang budget counts lag groups only") }
            groups = .lag
            kind = .hangBudget(maxCount: maxCount)
        case "velocity":
            let percent = try number(o, "usersPercent", field + ".usersPercent") ?? 1
            guard percent > 0 && percent <= 100 else { throw fail(field + ".usersPercent", "expected a percentage above 0, at most 100") }
            let minUsers = try integer(o, "minUsers", field + ".minUsers", min: 1) ?? 25
            let window = try integer(o, "windowMinutes", field + ".windowMinutes", min: 1) ?? 30
            guard window <= 24 * 60 else { throw fail(field + ".windowMinutes", "at most 1440") }
            kind = .velocity(usersPercent: percent, minUsers: minUsers, windowMinutes: window)
        case "release_health":
            var targets: [Double?] = []
            for key in ["crashFreeSessions", "crashFreeUsers"] {
                let target = try number(o, key, field + "." + key)
                if let target, !(target > 0 && target <= 1) { throw fail(field + "." + key, "expected a fraction above 0, at most 1 (0.99 for 99%)") }
                targets.append(target)
            }
            guard targets.contains(where: { $0 != nil }) else {
                throw fail(field, "a release_health rule needs crashFreeSessions, crashFreeUsers or both")
            }
            let minSessions = try integer(o, "minSessions", field + ".minSessions", min: 1) ?? 100
            kind = .releaseHealth(crashFreeSessions: targets[0], crashFreeUsers: targets[1], minSessions: minSessions)
        default:
            kind = .newGroup
        }
        return AlertRule(name: name, kind: kind, severity: severity, targets: names, app: app, groupKind: groups)
    }
}

/// A decoding error in one line, without Foundation's coding-path dump.
private func describe(_ error: Error) -> String {
    if case DecodingError.dataCorrupted(let context) = error {
        return context.underlyingError.map { ($0 as NSError).localizedDescription } ?? context.debugDescription
    }
    return "\(error)"
}
