import Foundation
import HTTPTypes
import Hummingbird

/// This server as the client reached it: the scheme (https when it serves TLS itself, or when a
/// TLS proxy says so with `X-Forwarded-Proto`) and the `Host` it used. The one place both are
/// read, for the session cookie's `Secure`, the upload command pages show, and the SDK
/// configuration's default upload URL.
enum ClientURL {
    static func isHTTPS(_ request: Request, servesTLS: Bool) -> Bool {
        servesTLS || HTTPField.Name("X-Forwarded-Proto").flatMap { request.headers[$0] }?.lowercased() == "https"
    }

    /// `scheme://host[:port]`, or nil when the request named no host, or one with characters a
    /// host cannot have (it is echoed into pages and configurations).
    static func base(_ request: Request, servesTLS: Bool) -> String? {
        guard let authority = request.head.authority, !authority.isEmpty,
            authority.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || ".-:[]".unicodeScalars.contains($0)) })
        else { return nil }
        return "\(isHTTPS(request, servesTLS: servesTLS) ? "https" : "http")://\(authority)"
    }
}
