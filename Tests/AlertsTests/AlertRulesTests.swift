import Alerts
import Foundation
import ServiceRuntime
import Testing

/// The rules file: what it accepts, and that every refusal names the file and the field.
@Suite struct AlertRulesTests {
    let example = """
        {
          "baseURL": "https://stackline.example.com/",
          "pollSeconds": 2,
          "delivery": {"maxAttempts": 5, "initialBackoffSeconds": 10, "maxBackoffSeconds": 600},
          "targets": {
            "slack": {"type": "webhook", "preset": "slack", "url": "https://hooks.slack.com/services/T000/B000/SECRETKEY"},
            "hook": {"type": "webhook", "url": "http://127.0.0.1:9/x", "headers": {"X-Key": "hunter2"},
                     "template": "{\\"t\\": \\"{{title}}\\", \\"n\\": {{count}}}"},
            "mail": {"type": "email", "host": "smtp.example.com", "starttls": true, "username": "u", "passwordEnv": "SMTP_PW",
                     "from": "stackline@example.com", "to": ["a@example.com", "b@example.com"]}
          },
          "rules": [
            {"name": "new-crash", "kind": "new_group", "severity": "critical", "targets": ["slack", "mail"]},
            {"name": "back", "kind": "regression", "severity": "error", "targets": ["hook"], "minGapReports": 2},
            {"name": "burst", "kind": "spike", "severity": "warning", "targets": ["hook"], "multiplier": 4, "minCount": 7,
             "bucketMinutes": 30, "baselineHours": 24, "groups": "any", "app": "Ledger"},
            {"name": "hangs", "kind": "hang_budget", "severity": "info", "targets": ["hook"], "maxCount": 50}
          ]
        }
        """

    func parse(_ text: String, env: [String: String] = [:]) throws(AlertRulesError) -> AlertConfiguration {
        try AlertRulesParser.parse(Data(text.utf8), file: "rules.json", environment: env)
    }

    func refusal(_ text: String, env: [String: String] = [:]) -> AlertRulesError? {
        do {
            _ = try parse(text, env: env)
            return nil
        } catch { return error }
    }

    @Test func readsEveryRuleKindAndTarget() throws {
        let config = try parse(example, env: ["SMTP_PW": "pw-from-env"])
        #expect(config.baseURL == "https://stackline.example.com")
        #expect(config.pollSeconds == 2)
        #expect(config.delivery.maxAttempts == 5)
        #expect(config.delivery.backoff == Backoff(initialMs: 10_000, maxMs: 600_000, jitter: DeliveryPolicy.jitter))
        #expect(config.rules.map(\.name) == ["new-crash", "back", "burst", "hangs"])
        #expect(config.rules[0].kind == .newGroup)
        #expect(config.rules[0].severity == .critical)
        #expect(config.rules[0].targets == ["slack", "mail"])
        // A rules file from before triage: `regression` with `minGapReports` is the gap rule.
        #expect(config.rules[1].kind == .backAfterGap(minGapReports: 2))
        // 24 hours of 30-minute buckets.
        #expect(config.rules[2].kind == .spike(multiplier: 4, minCount: 7, baselineBuckets: 48, bucketMinutes: 30))
        #expect(config.rules[2].app == "Ledger")
        #expect(config.rules[3].kind == .hangBudget(maxCount: 50))
        #expect(config.rules[3].groupKind == .lag)
        guard case .email(let mail) = config.targets["mail"] else {
            Issue.record("mail is not an email target")
            return
        }
        #expect(mail.password == "pw-from-env")
        #expect(mail.port == 587)
        #expect(mail.to == ["a@example.com", "b@example.com"])
        guard case .webhook(let hook) = config.targets["hook"] else {
            Issue.record("hook is not a webhook")
            return
        }
        #expect(hook.headers == ["X-Key": "hunter2"])
    }

    @Test func defaultsApply() throws {
        let config = try parse("""
            {"targets": {"h": {"type": "webhook", "url": "http://127.0.0.1/"}},
             "rules": [{"name": "s", "kind": "spike", "severity": "info", "targets": ["h"]}]}
            """)
        #expect(config.pollSeconds == 5)
        #expect(config.delivery.maxAttempts == 8)
        // 7 days of hourly buckets, 3×, at least 10 reports.
        #expect(config.rules[0].kind == .spike(multiplier: 3, minCount: 10, baselineBuckets: 168, bucketMinutes: 60))
        #expect(config.rules[0].groupKind == .crash)
    }

    @Test func refusalsNameTheFieldAndTheFile() {
        let target = #""targets": {"h": {"type": "webhook", "url": "http://127.0.0.1/"}}"#
        let cases: [(String, String, String)] = [
            ("{", "", "not valid JSON"),
            ("[]", "", "expected a JSON object"),
            (#"{"rules": []}"#, "targets", "missing"),
            ("{\(target)}", "rules", "missing"),
            ("{\(target), \"rules\": [{\"name\": \"a\", \"kind\": \"newgroup\", \"severity\": \"info\", \"targets\": [\"h\"]}]}",
             "rules[0].kind", "expected new_group"),
            ("{\(target), \"rules\": [{\"name\": \"a\", \"kind\": \"spike\", \"severity\": \"info\", \"targets\": [\"h\"], \"multipler\": 3}]}",
             "rules[0].multipler", "unknown field"),
            ("{\(target), \"rules\": [{\"name\": \"a\", \"kind\": \"spike\", \"severity\": \"info\", \"targets\": [\"h\"], \"multiplier\": \"3\"}]}",
             "rules[0].multiplier", "expected a number"),
            ("{\(target), \"rules\": [{\"name\": \"a\", \"kind\": \"spike\", \"severity\": \"info\", \"targets\": [\"h\"], \"minCount\": 2.5}]}",
             "rules[0].minCount", "whole number"),
            ("{\(target), \"rules\": [{\"name\": \"a\", \"kind\": \"hang_budget\", \"severity\": \"info\", \"targets\": [\"h\"]}]}",
             "rules[0].maxCount", "missing"),
            ("{\(target), \"rules\": [{\"name\": \"a\", \"kind\": \"new_group\", \"severity\": \"loud\", \"targets\": [\"h\"]}]}",
             "rules[0].severity", "expected one of"),
            // 1e308 seconds would trap when made milliseconds in an Int64.
            ("{\(target), \"delivery\": {\"maxBackoffSeconds\": 1e308}, \"rules\": []}", "delivery.maxBackoffSeconds", "at most a week"),
            ("{\(target), \"delivery\": {\"initialBackoffSeconds\": 1e308}, \"rules\": []}", "delivery.initialBackoffSeconds", "to a week"),
            ("{\(target), \"rules\": [{\"name\": \"a\", \"kind\": \"new_group\", \"severity\": \"info\", \"targets\": [\"nope\"]}]}",
             "rules[0].targets[0]", "no target named nope"),
            ("{\(target), \"rules\": [{\"name\": \"a\", \"kind\": \"new_group\", \"severity\": \"info\", \"targets\": [\"h\"]},"
                + " {\"name\": \"a\", \"kind\": \"new_group\", \"severity\": \"info\", \"targets\": [\"h\"]}]}",
             "rules[1].name", "already named"),
            (#"{"targets": {"h": {"type": "webhook", "url": "ftp://x/"}}, "rules": []}"#, "targets.h.url", "http:// or https://"),
            (#"{"targets": {"h": {"type": "pager", "url": "http://x/"}}, "rules": []}"#, "targets.h.type", "webhook or email"),
            (#"{"targets": {"h": {"type": "webhook", "url": "http://x/", "preset": "teams"}}, "rules": []}"#, "targets.h.preset", "slack"),
            (#"{"targets": {"h": {"type": "webhook", "url": "http://x/", "template": "{\"a\": {{nope}}}"}}, "rules": []}"#,
             "targets.h.template", "unknown placeholder"),
            (#"{"targets": {"h": {"type": "webhook", "url": "http://x/", "template": "{\"a\": {{title}}}"}}, "rules": []}"#,
             "targets.h.template", "valid JSON"),
            (#"{"targets": {"h": {"type": "webhook", "url": "http://x/", "headers": {"X-A": "1\r\nX-B: 2"}}}, "rules": []}"#,
             "targets.h.headers.X-A", "not a valid header"),
            (#"{"targets": {"m": {"type": "email", "host": "mx", "from": "a@b", "to": "c@d\r\nBcc: e@f"}}, "rules": []}"#,
             "targets.m.to[0]", "plain address"),
            (#"{"targets": {"m": {"type": "email", "host": "mx.example.com", "from": "a@b", "to": "c@d", "username": "u", "password": "p"}}, "rules": []}"#,
             "targets.m.starttls", "in clear"),
            (#"{"targets": {"m": {"type": "email", "host": "mx", "from": "a@b", "to": "c@d", "username": "u", "passwordEnv": "NOPE"}}, "rules": []}"#,
             "targets.m.passwordEnv", "NOPE is not set"),
        ]
        for (text, field, problem) in cases {
            guard let error = refusal(text) else {
                Issue.record("accepted: \(text)")
                continue
            }
            #expect(error.file == "rules.json")
            #expect(error.field == field, "\(text) -> \(error)")
            #expect(error.problem.contains(problem), "\(text) -> \(error)")
            #expect(error.description.hasPrefix("alert rules rules.json: "))
        }
    }

    @Test func refusalsNeverRepeatASecret() {
        let text = #"{"targets": {"h": {"type": "webhook", "url": "htp://hooks.example.com/SECRETKEY"}}, "rules": []}"#
        let error = refusal(text)
        #expect(error != nil)
        #expect(error?.description.contains("SECRETKEY") == false)
    }

    @Test func scrubRemovesSecrets() throws {
        let config = try parse(example, env: ["SMTP_PW": "pw-from-env"])
        let text = config.scrub("failed https://hooks.slack.com/services/T000/B000/SECRETKEY with hunter2 and pw-from-env")
        #expect(!text.contains("SECRETKEY"))
        #expect(!text.contains("hunter2"))
        #expect(!text.contains("pw-from-env"))
    }

    @Test func missingFileIsNamed() {
        do {
            _ = try AlertRulesParser.load(path: "/nonexistent/rules.json", environment: [:])
            Issue.record("loaded a missing file")
        } catch {
            #expect(error.description == "alert rules /nonexistent/rules.json: cannot read the file")
        }
    }

    /// The example at the top of docs/alerts.md is a file `serve` takes.
    @Test func documentedExampleParses() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let doc = try String(contentsOf: root.appendingPathComponent("docs/alerts.md"), encoding: .utf8)
        let start = try #require(doc.range(of: "```json\n{\n  \"baseURL\""))
        let end = try #require(doc[start.upperBound...].range(of: "\n```"))
        let json = String(doc[doc.index(start.lowerBound, offsetBy: 8)..<end.lowerBound])
        let config = try AlertRulesParser.parse(
            Data(json.utf8), file: "docs/alerts.md", environment: ["SLACK_WEBHOOK_URL": "https://hooks.slack.com/x", "SMTP_PASSWORD": "p"])
        #expect(config.rules.map(\.name) == ["new-crash", "came-back", "back-after-gap", "crash-spike", "anr-budget", "fast-spreading", "unhealthy-release"])
    }

    @Test func shippedExamplesParse() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/alerts")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".json") }
        #expect(files.count >= 4)
        for file in files {
            let config = try AlertRulesParser.load(path: dir.appendingPathComponent(file).path, environment: ["SMTP_PASSWORD": "x", "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T0/B0/x", "FEISHU_BOT_SECRET": "s"])
            #expect(!config.rules.isEmpty, "\(file)")
        }
    }
}
