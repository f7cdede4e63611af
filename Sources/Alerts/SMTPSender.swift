import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// Sends an event as a mail through an SMTP relay.
///
/// Hand-written on SwiftNIO (already linked by the server) because no SMTP package resolves
/// here, and the part of SMTP an alert needs is small: EHLO, optional STARTTLS (swift-nio-ssl,
/// also already linked, added to the live connection), AUTH PLAIN, MAIL/RCPT/DATA, QUIT. The
/// body is base64 text, so no line of it can end the DATA section or exceed a length limit,
/// and the subject is an RFC 2047 encoded word, so nothing from a report reaches a header raw.
public struct SMTPSender: Sendable {
    public init() {}

    public func send(_ event: AlertEvent, to target: EmailTarget, now: Date = Date()) async throws(DeliveryError) {
        do {
            try await converse(message: Self.message(event, target, now: now), target)
        } catch let error as DeliveryError {
            throw error
        } catch is NIOConnectionError {
            throw DeliveryError("cannot connect to \(target.host):\(target.port)")
        } catch let error as NIOSSLError {
            throw DeliveryError("TLS failed (\(error))")
        } catch let error as IOError {
            throw DeliveryError("connection failed (\(error.description))")
        } catch is ChannelError {
            throw DeliveryError("connection failed or timed out")
        } catch {
            throw DeliveryError("SMTP failed (\(type(of: error)))")
        }
    }

    private func converse(message: String, _ target: EmailTarget) async throws {
        let (stream, continuation) = AsyncThrowingStream<SMTPReply, Error>.makeStream()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.milliseconds(Int64(target.timeoutSeconds * 1000)))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(SMTPReplyHandler(continuation: continuation))
                }
            }
            .connect(host: target.host, port: target.port).get()
        // One deadline for the whole conversation: closing the channel ends the reply stream,
        // which fails the step that waits.
        let deadline = channel.eventLoop.scheduleTask(in: .milliseconds(Int64(target.timeoutSeconds * 1000))) {
            channel.close(promise: nil)
        }
        defer {
            deadline.cancel()
            channel.close(promise: nil)
        }
        var replies = stream.makeAsyncIterator()
        func reply(_ step: String, _ accepted: ClosedRange<Int>) async throws -> SMTPReply {
            guard let reply = try await replies.next() else { throw DeliveryError("SMTP server closed the connection or timed out at \(step)") }
            guard accepted.contains(reply.code) else {
                throw DeliveryError("SMTP server refused \(step): \(reply.code) \(reply.text.prefix(200))")
            }
            return reply
        }
        func command(_ line: String, _ step: String, _ accepted: ClosedRange<Int>) async throws -> SMTPReply {
            do { try await channel.writeAndFlush(channel.allocator.buffer(string: line + "\r\n")).get() } catch {
                // Why a write failed (a refused TLS handshake, a reset) is what ended the reply stream.
                _ = try await replies.next()
                throw error
            }
            return try await reply(step, accepted)
        }
        _ = try await reply("the greeting", 220...220)
        var hello = try await command("EHLO \(target.heloName)", "EHLO", 250...250)
        if target.startTLS {
            guard hello.offers("STARTTLS") else { throw DeliveryError("the SMTP server does not offer STARTTLS") }
            _ = try await command("STARTTLS", "STARTTLS", 220...220)
            let host = target.host
            var tls = TLSConfiguration.makeClientConfiguration()
            if let caFile = target.caFile { tls.trustRoots = .file(caFile) }
            try await channel.eventLoop.submit { [tls] in
                // Verified against the host name, or the address when the host is one (its IP SAN).
                let context = try NIOSSLContext(configuration: tls)
                let isAddress = host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." }
                let tls = try NIOSSLClientHandler(context: context, serverHostname: isAddress ? nil : host)
                try channel.pipeline.syncOperations.addHandler(tls, position: .first)
            }.get()
            // RFC 3207: everything learnt before TLS is forgotten; ask again.
            hello = try await command("EHLO \(target.heloName)", "EHLO after STARTTLS", 250...250)
        }
        if let username = target.username, let password = target.password {
            guard hello.offers("AUTH") else { throw DeliveryError("the SMTP server does not offer AUTH") }
            let token = Data("\u{0}\(username)\u{0}\(password)".utf8).base64EncodedString()
            // The reply to a refused AUTH never echoes the credentials.
            _ = try await command("AUTH PLAIN \(token)", "AUTH PLAIN", 235...235)
        }
        _ = try await command("MAIL FROM:<\(target.from)>", "MAIL FROM", 250...250)
        for address in target.to {
            _ = try await command("RCPT TO:<\(address)>", "RCPT TO", 250...251)
        }
        _ = try await command("DATA", "DATA", 354...354)
        _ = try await command(message + "\r\n.", "the message", 250...250)
        _ = try? await command("QUIT", "QUIT", 221...221)
    }

    /// The whole message, CRLF line ends, without the final dot line.
    static func message(_ event: AlertEvent, _ target: EmailTarget, now: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        let id = event.id.map(String.init) ?? "test"
        let headers = [
            "From: Stackline <\(target.from)>",
            "To: " + target.to.joined(separator: ", "),
            "Subject: " + encodedWords("[Stackline] [\(event.severity.uppercased())] \(event.summary)"),
            "Date: " + formatter.string(from: now),
            "Message-ID: <stackline-alert-\(id)-\(UInt64(now.timeIntervalSince1970 * 1000))@\(target.heloName)>",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: base64",
            "X-Stackline-Event: \(id)",
            "X-Stackline-Rule: \(event.rule)",
            "X-Stackline-Severity: \(event.severity)",
        ]
        let body = Data(text(event).utf8).base64EncodedString(options: [.lineLength76Characters, .endLineWithCarriageReturn, .endLineWithLineFeed])
        return headers.joined(separator: "\r\n") + "\r\n\r\n" + body
    }

    /// The mail's text: the summary, the facts, and the event JSON for tools.
    static func text(_ event: AlertEvent) -> String {
        var lines = [event.message, ""]
        lines.append("Rule: \(event.rule) (\(event.kind), \(event.severity))")
        lines.append("Group: \(event.fingerprint) (\(event.groupKind))")
        lines.append("Title: \(event.title)")
        if let app = event.app { lines.append("App: \(app)" + (event.version.map { " \($0)" } ?? "")) }
        lines.append("Reports: \(event.counts.total)" + (event.counts.version.map { ", \($0) in this version" } ?? ""))
        lines.append("First seen: \(event.firstSeen)")
        lines.append("Last seen: \(event.lastSeen)")
        lines += ["", String(decoding: event.json(), as: UTF8.self)]
        return lines.joined(separator: "\n") + "\n"
    }

    /// RFC 2047 `=?utf-8?B?…?=` words of at most 45 bytes of text each (whole characters),
    /// folded onto continuation lines; control characters become blanks first.
    static func encodedWords(_ text: String) -> String {
        let clean = String(text.prefix(300).map { $0.isNewline || ($0.isASCII && ($0.asciiValue ?? 32) < 32) ? " " : $0 })
        var words: [String] = []
        var chunk = ""
        for character in clean {
            if chunk.utf8.count + character.utf8.count > 45 {
                words.append(chunk)
                chunk = ""
            }
            chunk.append(character)
        }
        if !chunk.isEmpty || words.isEmpty { words.append(chunk) }
        return words.map { "=?utf-8?B?\(Data($0.utf8).base64EncodedString())?=" }.joined(separator: "\r\n ")
    }
}

/// One SMTP reply: its code and the text of every line.
struct SMTPReply: Sendable {
    var code: Int
    var lines: [String]

    var text: String { lines.joined(separator: " / ") }

    /// Whether an EHLO reply lists `keyword` as an extension.
    func offers(_ keyword: String) -> Bool {
        lines.dropFirst().contains { $0.uppercased() == keyword || $0.uppercased().hasPrefix(keyword + " ") }
    }
}

/// Splits the server's bytes into replies (`250-…` lines continue one, `250 …` ends it).
/// Runs on the channel's event loop only.
/// Sendable: `pending` and `lines` are touched only on the channel's event loop, where NIO calls every handler method.
final class SMTPReplyHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    private let continuation: AsyncThrowingStream<SMTPReply, Error>.Continuation
    private var pending: [UInt8] = []
    private var lines: [String] = []
    /// A server that sends endless or enormous lines is cut off, not buffered.
    private static let maxLine = 4096
    private static let maxLines = 200

    init(continuation: AsyncThrowingStream<SMTPReply, Error>.Continuation) { self.continuation = continuation }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        pending += buffer.readBytes(length: buffer.readableBytes) ?? []
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            var line = Array(pending[..<newline])
            pending.removeFirst(newline + 1)
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            guard line.count >= 3, let code = Int(String(decoding: line.prefix(3), as: UTF8.self)) else {
                fail(context, DeliveryError("the SMTP server sent a line that is not a reply"))
                return
            }
            let last = line.count == 3 || line[3] == UInt8(ascii: " ")
            lines.append(String(decoding: line.dropFirst(4), as: UTF8.self))
            guard lines.count <= Self.maxLines else {
                fail(context, DeliveryError("the SMTP server's reply is too long"))
                return
            }
            if last {
                continuation.yield(SMTPReply(code: code, lines: lines))
                lines = []
            }
        }
        if pending.count > Self.maxLine { fail(context, DeliveryError("the SMTP server sent a line that is too long")) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        continuation.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        fail(context, error)
    }

    private func fail(_ context: ChannelHandlerContext, _ error: Error) {
        continuation.finish(throwing: error)
        context.close(promise: nil)
    }
}
