import Foundation

/// Sends one event to one target, whichever kind it is.
public struct AlertDelivery: Sendable {
    public var webhook = WebhookSender()
    public var smtp = SMTPSender()

    public init() {}

    public func send(_ event: AlertEvent, to target: AlertTarget) async throws(DeliveryError) {
        switch target {
        case .webhook(let w): try await webhook.send(event, to: w)
        case .email(let e): try await smtp.send(event, to: e)
        }
    }
}
