/// Why a string is not a build id. Each case reads as one clause naming the offending text.
public enum BuildIDError: Error, Equatable, CustomStringConvertible {
    case empty
    case notHexadecimal(String)
    /// `digits` hex digits where `expected` byte counts are accepted.
    case length(String, digits: Int, expected: BuildID.Lengths)

    public var description: String {
        switch self {
        case .empty: return "empty id"
        case .notHexadecimal(let raw): return "id '\(raw)' is not hexadecimal"
        case .length(let raw, let digits, let expected): return "id '\(raw)' has \(digits) hex digits, expected \(expected)"
        }
    }
}

/// The identifier of one build of a binary: a Mach-O `LC_UUID` or a GNU build-id note.
///
/// The one normaliser of ids in Stackline: reports, debug files, the store and the command
/// line all spell ids through it. The value is lowercase hex without dashes, braces or blanks;
/// it encodes as that plain string, so JSON written before this type existed reads the same.
public struct BuildID: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// Lowercase hex digits, two per byte.
    public let hex: String

    /// Which byte counts an id may have where it is read.
    public enum Lengths: Sendable, Equatable, CustomStringConvertible {
        /// A Mach-O UUID: 16 bytes.
        case machO
        /// GNU build-ids: 8 (xxhash), 16 (md5, uuid), 20 (sha1), 32 (sha256) bytes.
        case gnu
        /// Apple report formats: 16-byte UUIDs, and 20-byte GNU build-ids so reports from ELF
        /// processes written in these formats (and our ELF-backed tests) can be symbolicated.
        case appleReport
        /// Any whole number of bytes from 2: `ld --build-id=0x…` writes notes of any length,
        /// and the store and the command line take every id a debug file can carry.
        case anyByteCount

        public func accepts(bytes: Int) -> Bool {
            switch self {
            case .machO: return bytes == 16
            case .gnu: return [8, 16, 20, 32].contains(bytes)
            case .appleReport: return bytes == 16 || bytes == 20
            case .anyByteCount: return bytes >= 2
            }
        }

        public var description: String {
            switch self {
            case .machO: return "16 bytes"
            case .gnu: return "8, 16, 20, 32 bytes"
            case .appleReport: return "16, 20 bytes"
            case .anyByteCount: return "2 or more whole bytes"
            }
        }
    }

    /// Parses an id as reports and users write it (`8F528C10-3E80-…`, `{…}`, ` abc… `):
    /// dashes, braces and surrounding blanks go, letters become lowercase, and the rest must be
    /// hex digits of a byte count `lengths` accepts.
    public init(_ text: some StringProtocol, lengths: Lengths = .anyByteCount) throws(BuildIDError) {
        let hex = try Self.hexDigits(text)
        guard hex.utf8.count % 2 == 0, lengths.accepts(bytes: hex.utf8.count / 2) else {
            throw .length(String(text), digits: hex.utf8.count, expected: lengths)
        }
        self.hex = hex
    }

    /// The id whose bytes are `bytes`, as a note or `LC_UUID` holds them.
    public init(bytes: some Sequence<UInt8>) {
        hex = HexText.lowercase(bytes)
    }

    /// An all-zero id: the writer did not know the build, so it identifies nothing.
    public var isUnknown: Bool { hex.utf8.allSatisfy { $0 == UInt8(ascii: "0") } }

    public var byteCount: Int { hex.utf8.count / 2 }

    public var description: String { hex }

    public static func < (a: BuildID, b: BuildID) -> Bool { a.hex < b.hex }

    /// Stored reports and store sidecars hold ids this type wrote (or an earlier normaliser
    /// did): only hex digits are checked, so no stored document stops decoding over a length.
    /// Use `init(_:lengths:)` on input that was never validated.
    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        let text = try c.decode(String.self)
        do { hex = try Self.hexDigits(text) } catch {
            // An empty id names no build; the symbolicator treats it as no id at all.
            guard error == .empty else { throw DecodingError.dataCorruptedError(in: c, debugDescription: error.description) }
            hex = ""
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(hex)
    }

    /// Lowercase hex digits of `text` without dashes and braces; blanks may surround the id,
    /// never split it. Empty when `text` held only dashes and braces. Any length: a unique
    /// prefix of an id is read with it too.
    public static func hexDigits(_ text: some StringProtocol) throws(BuildIDError) -> String {
        var bytes = Substring(text).utf8[...]
        func isBlank(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
        while let f = bytes.first, isBlank(f) { bytes = bytes.dropFirst() }
        while let l = bytes.last, isBlank(l) { bytes = bytes.dropLast() }
        if bytes.isEmpty { throw .empty }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for b in bytes {
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): out.append(b)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): out.append(b + 0x20)
            case UInt8(ascii: "-"), UInt8(ascii: "{"), UInt8(ascii: "}"): continue
            default: throw .notHexadecimal(String(text))
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
