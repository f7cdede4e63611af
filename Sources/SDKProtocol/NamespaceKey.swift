import Crypto
import Foundation
import ReportModel

/// Why a namespace key was refused.
public enum NamespaceKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    case notHex
    case size(Int)

    public var description: String {
        switch self {
        case .notHex: "the key must be hexadecimal digits (32 for AES-128, 48 for AES-192, 64 for AES-256)"
        case .size(let bytes): "the key is \(bytes) bytes; AES-CBC takes 16, 24 or 32"
        }
    }
}

/// A namespace's AES key: 16, 24 or 32 bytes (AES-128, the design's choice, AES-192 or AES-256).
public struct NamespaceKey: Sendable, Equatable {
    public let bytes: Data

    public static let validSizes = [16, 24, 32]

    public init(bytes: Data) throws(NamespaceKeyError) {
        guard Self.validSizes.contains(bytes.count) else { throw .size(bytes.count) }
        self.bytes = bytes
    }

    /// A key written as hex digits (what `openssl enc -K` takes).
    public init(hex: String) throws(NamespaceKeyError) {
        guard let bytes = HexText.bytes(hex.utf8) else { throw .notHex }
        try self.init(bytes: Data(bytes))
    }

    /// A fresh random key from the system's secure generator.
    public static func generate(bits: Int = 128) throws(NamespaceKeyError) -> NamespaceKey {
        let key = SymmetricKey(size: SymmetricKeySize(bitCount: bits))
        return try NamespaceKey(bytes: key.withUnsafeBytes { Data($0) })
    }

    public var bits: Int { bytes.count * 8 }

    /// Lowercase hex, as `openssl enc -K` takes it.
    public var hex: String { HexText.lowercase(bytes) }

    var symmetricKey: SymmetricKey { SymmetricKey(data: bytes) }
}
