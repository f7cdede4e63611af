import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Why one attempt at a target failed. The text never holds a secret of the rules file
/// (callers scrub it again with `AlertConfiguration.scrub` before logging or storing it).
public struct DeliveryError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// POSTs an event to a webhook through Foundation's URLSession (libcurl underneath on Linux),
/// the client `ServiceClient` already uses: no HTTP stack of our own.
public struct WebhookSender: Sendable {
    public init() {}

    /// The body for `target`: the event JSON, a chat preset (signed for Feishu when it has a
    /// secret), or the rendered template.
    public static func body(_ target: WebhookTarget, _ event: AlertEvent, now: Date = Date()) -> Data {
        switch target.body {
        case .event: event.json()
        case .preset(let preset):
            WebhookTemplate.preset(
                preset, event,
                feishuSignature: target.signingSecret.map { WebhookSigning.feishu(secret: $0, nowSeconds: Int64(now.timeIntervalSince1970)) })
        case .template(let template): WebhookTemplate.render(template, event)
        }
    }

    /// Where the POST goes: the target's URL, with DingTalk's signature when it has a secret.
    static func url(_ target: WebhookTarget, now: Date = Date()) -> URL {
        guard target.body == .preset(.dingtalk), let secret = target.signingSecret else { return target.url }
        return WebhookSigning.dingtalkURL(target.url, secret: secret, nowMs: Int64(now.timeIntervalSince1970 * 1000))
    }

    /// One attempt: any 2xx answer is delivered, anything else is an error.
    public func send(_ event: AlertEvent, to target: WebhookTarget) async throws(DeliveryError) {
        var request = URLRequest(url: Self.url(target), timeoutInterval: target.timeoutSeconds)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("stackline-alerts", forHTTPHeaderField: "User-Agent")
        if let id = event.id { request.setValue(String(id), forHTTPHeaderField: "X-Stackline-Event") }
        for (name, value) in target.headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = Self.body(target, event)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = target.timeoutSeconds
        configuration.timeoutIntervalForResource = target.timeoutSeconds
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let outcome: Result<(Int, Data), DeliveryError> = await withCheckedContinuation { continuation in
            let task = session.dataTask(with: request) { data, response, error in
                if let error {
                    // The error's text can quote the URL: only its code and a fixed description go out.
                    let code = (error as? URLError)?.code.rawValue ?? (error as NSError).code
                    continuation.resume(returning: .failure(DeliveryError("no HTTP answer (\(Self.transportReason(code)))")))
                } else if let http = response as? HTTPURLResponse {
                    continuation.resume(returning: .success((http.statusCode, data ?? Data())))
                } else {
                    continuation.resume(returning: .failure(DeliveryError("no HTTP answer")))
                }
            }
            task.resume()
        }
        let (status, body) = try outcome.get()
        guard (200..<300).contains(status) else {
            // A few bytes of the answer help (Slack says `invalid_token`); they are the receiver's, not ours.
            let excerpt = String(decoding: body.prefix(120), as: UTF8.self)
                .map { $0.isNewline || $0.isASCII && ($0.asciiValue ?? 32) < 32 ? " " : String($0) }.joined()
            throw DeliveryError("HTTP \(status)" + (excerpt.isEmpty ? "" : ": \(excerpt)"))
        }
    }

    static func transportReason(_ code: Int) -> String {
        switch code {
        case URLError.timedOut.rawValue: "timed out"
        case URLError.cannotConnectToHost.rawValue: "connection refused"
        case URLError.cannotFindHost.rawValue, URLError.dnsLookupFailed.rawValue: "host not found"
        case URLError.networkConnectionLost.rawValue: "connection lost"
        case URLError.secureConnectionFailed.rawValue, URLError.serverCertificateUntrusted.rawValue,
            URLError.serverCertificateHasBadDate.rawValue, URLError.serverCertificateHasUnknownRoot.rawValue:
            "TLS failed"
        default: "URL error \(code)"
        }
    }
}
