import Alerts
import Foundation
import TestSupport
import Testing

/// DingTalk's and Feishu's bot signatures against their documented Python recipes, run by
/// python3's own hmac and base64 (an oracle that shares no code with swift-crypto).
@Suite struct WebhookSigningTests {
    func python(_ script: String) throws -> String {
        let out = try runProcess("/usr/bin/python3", ["-c", script])
        #expect(out.succeeded, "\(out.summary)")
        return out.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func dingtalkSignMatchesTheDocumentedRecipe() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes  // the JSON string is read as a Python literal
        for (secret, ms) in [("SEC000000000000000000000", Int64(1_577_000_000_000)), ("SECabc/+=密", Int64(1_800_000_000_123))] {
            let expected = try python("""
                import base64, hashlib, hmac
                secret = \(String(decoding: try encoder.encode(secret), as: UTF8.self))
                string_to_sign = '{}\\n{}'.format(\(ms), secret)
                print(base64.b64encode(hmac.new(secret.encode('utf-8'), string_to_sign.encode('utf-8'), digestmod=hashlib.sha256).digest()).decode())
                """)
            let signed = WebhookSigning.dingtalk(secret: secret, nowMs: ms)
            #expect(signed.timestamp == String(ms))
            #expect(signed.sign == expected)
        }
    }

    @Test func feishuSignMatchesTheDocumentedRecipe() throws {
        let secret = "demo-secret-of-a-feishu-bot"
        let seconds: Int64 = 1_599_360_473
        let expected = try python("""
            import base64, hashlib, hmac
            string_to_sign = '{}\\n{}'.format(\(seconds), '\(secret)')
            print(base64.b64encode(hmac.new(string_to_sign.encode('utf-8'), digestmod=hashlib.sha256).digest()).decode())
            """)
        #expect(WebhookSigning.feishu(secret: secret, nowSeconds: seconds) == (String(seconds), expected))
    }

    @Test func signingSecretOnlyForDingTalkAndFeishu() throws {
        func parse(_ preset: String) throws(AlertRulesError) -> AlertConfiguration {
            try AlertRulesParser.parse(
                Data(#"{"targets": {"h": {"type": "webhook", "preset": "\#(preset)", "url": "https://x.example/", "secret": "s3cret"}}, "rules": []}"#.utf8),
                file: "r.json")
        }
        #expect(throws: Never.self) { try parse("dingtalk") }
        #expect(throws: Never.self) { try parse("feishu") }
        do {
            _ = try parse("slack")
            Issue.record("a slack target took a signing secret")
        } catch {
            #expect(error.field == "targets.h.secret")
        }
    }
}
