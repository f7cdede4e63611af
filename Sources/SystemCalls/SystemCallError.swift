#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A system call that failed: which call, on which path, and the errno it set.
public struct SystemCallError: Error, Equatable, Sendable, CustomStringConvertible {
    public let call: String
    public let path: String?
    public let errno: Int32

    public init(call: String, path: String? = nil, errno: Int32) {
        self.call = call
        self.path = path
        self.errno = errno
    }

    /// errno's text ("No such file or directory"): reads as the end of a sentence.
    public var reason: String { Self.reason(errno: errno) }

    public var description: String { "\(path.map { "\($0): " } ?? "")\(call): \(reason)" }

    /// The text of an errno value. The one place Stackline calls `strerror`.
    public static func reason(errno code: Int32) -> String { String(cString: strerror(code)) }
}
