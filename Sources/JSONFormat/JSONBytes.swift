/// JSON written straight into bytes, in exactly the form `JSONEncoder` with `.sortedKeys` and
/// `.withoutEscapingSlashes` writes: the callers emit keys in sorted order themselves.
///
/// The hot-path half of the one JSON-writing family (the other half is `JSONStyle`, the one
/// configured encoder): written by hand because JSONEncoder's generic containers dominated a
/// `lookup --json` batch and a worker encoding each symbolicated report (`make bench`'s batch
/// and queue parts, scripts/bench-queue.sh). `LookupJSONTests`, `SymbolCacheLookupJSONTests` and
/// `SymbolicatedReportJSONTests` hold the bytes equal to JSONEncoder's.
// The writers are `@inlinable`: their callers are in other modules (ReportModel's report
// writer, Symbolication's lookup writer), and a call per key and value across a module boundary
// is what this type exists to avoid.
public struct JSONBytes {
    /// What was written so far; a streaming caller writes it out and empties it.
    public var bytes: [UInt8] = []

    public init(reservingCapacity capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    /// Text known to be JSON already: punctuation, `true`, `null`.
    @inlinable
    public mutating func raw(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// `"name":`, preceded by a comma unless it is the object's first key.
    @inlinable
    public mutating func key(_ name: StaticString, first: inout Bool) {
        // `,"name":` assembled on the stack and appended once: each `append` checks the array's
        // uniqueness and capacity which showed in a worker writing 30-frame reports.
        let count = name.utf8CodeUnitCount
        let comma = first ? 0 : 1
        first = false
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count + 4) { buffer in
            buffer[0] = UInt8(ascii: ",")
            buffer[comma] = UInt8(ascii: "\"")
            for i in 0..<count { buffer[comma + 1 + i] = name.utf8Start[i] }
            buffer[comma + 1 + count] = UInt8(ascii: "\"")
            buffer[comma + 2 + count] = UInt8(ascii: ":")
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[0..<(comma + 3 + count)]))
        }
    }

    /// A value as a JSON string of lowercase hex digits after `0x` (`"0x1f0"`), without making
    /// that `String`: two per frame (ReportModel's `address(_:)` spells an `Address` with it),
    /// and `String(_:radix:)` plus the concatenation showed in a worker's profile.
    @inlinable
    public mutating func hex(_ value: UInt64) {
        let digits: StaticString = "0123456789abcdef"
        // Hex digits from the highest nonzero nibble (at least one, for zero), assembled on the
        // stack and appended once: a digit per `append` was most of the cost.
        let count = value == 0 ? 1 : (67 - value.leadingZeroBitCount) / 4
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count + 4) { buffer in
            buffer[0] = UInt8(ascii: "\"")
            buffer[1] = UInt8(ascii: "0")
            buffer[2] = UInt8(ascii: "x")
            for i in 0..<count {
                buffer[2 + count - i] = digits.utf8Start[Int((value >> UInt64(4 * i)) & 0xf)]  // overflow: a hex digit of a UInt64, i < 16
            }
            buffer[3 + count] = UInt8(ascii: "\"")
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[0..<(count + 4)]))
        }
    }

    @inlinable
    public mutating func integer(_ value: some BinaryInteger) {
        bytes.append(contentsOf: String(value).utf8)
    }

    // Concrete overloads for the widths reports and lookups write (lines, columns, offsets,
    // counts): a generic `BinaryInteger` called from another module goes through witness
    // tables, which was most of what a lookup batch spent writing numbers.
    @inlinable
    public mutating func integer(_ value: Int) { Self.decimal(value, to: &bytes) }
    @inlinable
    public mutating func integer(_ value: UInt64) { Self.decimal(value, to: &bytes) }

    /// `value` in decimal, as `String(value)` spells it, appended without making the `String`.
    @inlinable
    public static func decimal(_ value: Int, to out: inout [UInt8]) {
        if value < 0 {
            out.append(UInt8(ascii: "-"))
            // The magnitude of Int.min does not fit in Int.
            decimal(UInt64(value.magnitude), to: &out)
        } else {
            decimal(UInt64(value), to: &out)
        }
    }

    @inlinable
    public static func decimal(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: 20 digits fit.
        var n = 0
        withUnsafeMutableBytes(of: &digits) { buf in
            repeat {
                buf[23 - n] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v % 10)
                v /= 10
                n += 1
            } while v > 0
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buf[(24 - n)...]))
        }
    }

    @inlinable
    public mutating func bool(_ value: Bool) {
        value ? raw("true") : raw("false")
    }

    /// A finite number as JSONEncoder writes it: Swift's shortest round-trip spelling without
    /// a trailing `.0`. JSONEncoder refuses non-finite values; callers must check `isFinite`.
    @inlinable
    public mutating func number(_ value: Double) {
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    /// A JSON string as JSONEncoder escapes it: quote, backslash and controls below 0x20 (the
    /// short forms where JSON has them), everything else as UTF-8, slashes unescaped.
    @inlinable
    public mutating func string(_ text: String) {
        // Through the contiguous bytes, so a name that needs no escape is copied whole: the
        // byte-by-byte loop over `String.UTF8View` showed in a worker writing 30-frame reports
        // (perf under scripts/bench-queue.sh).
        var text = text
        text.withUTF8 { string(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// `string(utf8:)` for mapped bytes (a symcache's strings): nearly every name and path needs
    /// no escape, and those are copied whole (the byte-by-byte loop through a generic sequence
    /// was half of a `lookup --json` batch from a symcache).
    @inlinable
    public mutating func string(utf8 text: UnsafeRawBufferPointer) {
        guard text.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: text)
            bytes.append(UInt8(ascii: "\""))
            return
        }
        string(utf8: Array(text))
    }

    /// `string(_:)` for UTF-8 bytes held elsewhere (a symcache's mapped strings), without
    /// making a `String` of them.
    @inlinable
    public mutating func string<Bytes: Sequence<UInt8>>(utf8: Bytes) {
        bytes.append(UInt8(ascii: "\""))
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
            case 0x08: bytes.append(contentsOf: #"\b"#.utf8)
            case 0x0c: bytes.append(contentsOf: #"\f"#.utf8)
            case 0x0a: bytes.append(contentsOf: #"\n"#.utf8)
            case 0x0d: bytes.append(contentsOf: #"\r"#.utf8)
            case 0x09: bytes.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20:
                bytes.append(contentsOf: #"\u00"#.utf8)
                let digits: StaticString = "0123456789abcdef"
                bytes.append(digits.utf8Start[Int(byte >> 4)])
                bytes.append(digits.utf8Start[Int(byte & 0xf)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// `[e0,e1,…]`, each element written by `element`.
    @inlinable
    public mutating func array<C: Collection>(_ items: C, _ element: (inout JSONBytes, C.Element) -> Void) {
        bytes.append(UInt8(ascii: "["))
        var first = true
        for item in items {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            element(&self, item)
        }
        bytes.append(UInt8(ascii: "]"))
    }
}
