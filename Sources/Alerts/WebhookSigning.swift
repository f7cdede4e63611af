import Crypto
import Foundation

/// The signatures DingTalk and Feishu custom bots check when their "signing" security is on
/// (加签 / 签名校验): an HMAC-SHA256 over the time and the bot's secret, which the bot
/// refuses after about an hour, so a captured request cannot be replayed later.
public enum WebhookSigning {
    /// DingTalk: `timestamp` (ms) and `sign` = base64(HMAC-SHA256(key: secret, "timestamp\nsecret")),
    /// sent as query parameters.
    public static func dingtalk(secret: String, nowMs: Int64) -> (timestamp: String, sign: String) {
        let timestamp = String(nowMs)
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("\(timestamp)\n\(secret)".utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return (timestamp, Data(mac).base64EncodedString())
    }

    /// Feishu: `timestamp` (s) and `sign` = base64(HMAC-SHA256(key: "timestamp\nsecret", empty message)),
    /// sent in the JSON body.
    public static func feishu(secret: String, nowSeconds: Int64) -> (timestamp: String, sign: String) {
        let timestamp = String(nowSeconds)
        let mac = HMAC<SHA256>.authenticationCode(for: Data(), using: SymmetricKey(data: Data("\(timestamp)\n\(secret)".utf8)))
        return (timestamp, Data(mac).base64EncodedString())
    }

    /// `url` with DingTalk's `timestamp` and `sign` added to its query.
    static func dingtalkURL(_ url: URL, secret: String, nowMs: Int64) -> URL {
        let (timestamp, sign) = dingtalk(secret: secret, nowMs: nowMs)
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        // base64's `+`, `/` and `=` must be escaped in a query; URLComponents leaves `+` alone.
        let escaped = sign.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? sign
        let extra = "timestamp=\(timestamp)&sign=\(escaped)"
        components.percentEncodedQuery = components.percentEncodedQuery.map { $0.isEmpty ? extra : $0 + "&" + extra } ?? extra
        return components.url ?? url
    }
}
