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
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { throw .notHex }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes = Data(capacity: digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { throw .notHex }
            bytes.append(high << 4 | low)
            index += 2
        }
        try self.init(bytes: bytes)
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
