/// What one segment answers: the innermost level, and the chain of its callers (`CallerRecord`).
struct SegmentAnswer: Equatable {
    var function: UInt32
    var file: UInt32
    var line: Int32
    var column: Int32
    var caller: UInt32
}

/// How the segments (an address from which on one answer holds, until the next) are stored:
/// in blocks of `blockLength`, each block's first start in a table the lookup searches, then
/// inside the block each segment as changes from the one before, in LEB128 varints:
///
/// ```
/// start delta   varint, from the previous segment's start (absent for a block's first)
/// tag           u8: 1 no answer (nothing follows), else which of these follow, in this order:
///               2 function (varint), 4 file (varint, id + 1; 0 for none),
///               8 line (zigzag varint delta), 16 column (zigzag varint delta),
///               32 caller (varint, id + 1; 0 for none)
/// ```
///
/// A block starts from no function, no file, line and column 0 and no caller, so it decodes
/// alone. Neighbouring rows of a line table differ in a byte or two of this, where a fixed
/// record spent 28 bytes (issue 31); a lookup decodes at most one block.
enum SegmentCoding {
    static let blockLength = 16

    enum Tag {
        static let noAnswer: UInt8 = 1, function: UInt8 = 2, file: UInt8 = 4, line: UInt8 = 8, column: UInt8 = 16, caller: UInt8 = 32
        static let known: UInt8 = 63
    }

    /// The state a block starts from.
    static let initial = SegmentAnswer(
        function: SymbolCacheLayout.none, file: SymbolCacheLayout.none, line: 0, column: 0, caller: SymbolCacheLayout.none)

    /// Decodes the `count` segments of one block from `bytes[offset..<end]`, calling `body`
    /// with each start and answer (nil: no answer) in order until it returns false. Returns
    /// what is wrong with the bytes (nil when nothing is) and where decoding stopped: every read
    /// is bounded by `end`, and starts must rise strictly. IDs are not checked against their
    /// tables here.
    @inline(__always)
    static func decode(
        _ bytes: UnsafeRawBufferPointer, offset: Int, end: Int, firstStart: UInt64, count: Int,
        _ body: (UInt64, SegmentAnswer?) -> Bool
    ) -> (problem: String?, position: Int) {
        var reader = VarintReader(bytes: bytes, position: offset, end: end)
        let problem = decode(&reader, firstStart: firstStart, count: count, body)
        return (problem, reader.position)
    }

    @inline(__always)
    private static func decode(
        _ reader: inout VarintReader, firstStart: UInt64, count: Int, _ body: (UInt64, SegmentAnswer?) -> Bool
    ) -> String? {
        var state = initial
        var start = firstStart
        for i in 0..<count {
            if i > 0 {
                guard let delta = reader.varint() else { return "segment \(i) of a block: bad start" }
                let (next, overflow) = start.addingReportingOverflow(delta)
                guard delta > 0, !overflow else { return "segment \(i) of a block does not start after the one before" }
                start = next
            }
            guard let tag = reader.byte() else { return "segment \(i) of a block: no tag" }
            guard tag & ~Tag.known == 0 else { return "segment \(i) of a block: unknown tag \(tag)" }
            if tag & Tag.noAnswer != 0 {
                guard tag == Tag.noAnswer else { return "segment \(i) of a block: no answer, with fields" }
                if !body(start, nil) { return nil }
                continue
            }
            if tag & Tag.function != 0 {
                guard let v = reader.varint(), v < UInt64(SymbolCacheLayout.none) else { return "segment \(i) of a block: bad function" }
                state.function = UInt32(v)
            }
            if tag & Tag.file != 0 {
                guard let v = reader.varint(), v <= UInt64(SymbolCacheLayout.none) else { return "segment \(i) of a block: bad file" }
                state.file = v == 0 ? SymbolCacheLayout.none : UInt32(v - 1)
            }
            if tag & Tag.line != 0 {
                guard let v = reader.varint(), let line = Self.apply(v, to: state.line) else { return "segment \(i) of a block: bad line" }
                state.line = line
            }
            if tag & Tag.column != 0 {
                guard let v = reader.varint(), let column = Self.apply(v, to: state.column) else { return "segment \(i) of a block: bad column" }
                state.column = column
            }
            if tag & Tag.caller != 0 {
                guard let v = reader.varint(), v <= UInt64(SymbolCacheLayout.none) else { return "segment \(i) of a block: bad caller" }
                state.caller = v == 0 ? SymbolCacheLayout.none : UInt32(v - 1)
            }
            guard state.function != SymbolCacheLayout.none else { return "segment \(i) of a block answers without a function" }
            if !body(start, state) { return nil }
        }
        return nil
    }

    /// `value` plus the zigzag-coded delta, nil when it leaves 32 bits.
    private static func apply(_ zigzag: UInt64, to value: Int32) -> Int32? {
        let delta = Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1)
        let (sum, overflow) = Int64(value).addingReportingOverflow(delta)
        guard !overflow else { return nil }
        return Int32(exactly: sum)
    }

    static func zigzag(_ delta: Int64) -> UInt64 { UInt64(bitPattern: (delta << 1) ^ (delta >> 63)) }
}

/// Bounded LEB128 reads: nil past `end`, or for more than the ten bytes a 64-bit value takes.
struct VarintReader {
    let bytes: UnsafeRawBufferPointer
    var position: Int
    let end: Int

    mutating func byte() -> UInt8? {
        guard position < end else { return nil }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func varint() -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < end else { return nil }
            let b = bytes[position]
            position += 1
            // The tenth byte holds bit 63 only.
            if shift == 63 && b > 1 { return nil }
            value |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return value }
            shift += 7
            if shift > 63 { return nil }
        }
    }
}

/// Writes segments in `SegmentCoding`'s form.
struct SegmentEncoder {
    private(set) var blockStarts: [UInt64] = []
    private(set) var blockOffsets: [Int] = []
    private(set) var stream: [UInt8] = []
    private(set) var count = 0
    private var previousStart: UInt64 = 0
    private var state = SegmentCoding.initial

    /// Appends a segment; starts must rise strictly (the builder's boundaries are sorted and unique).
    mutating func append(start: UInt64, answer: SegmentAnswer?) {
        if count % SegmentCoding.blockLength == 0 {
            blockStarts.append(start)
            blockOffsets.append(stream.count)
            state = SegmentCoding.initial
        } else {
            precondition(start > previousStart, "segment starts rise")
            put(start - previousStart)
        }
        previousStart = start
        count += 1
        guard let answer else {
            stream.append(SegmentCoding.Tag.noAnswer)
            return
        }
        typealias T = SegmentCoding.Tag
        var tag: UInt8 = 0
        if answer.function != state.function { tag |= T.function }
        if answer.file != state.file { tag |= T.file }
        if answer.line != state.line { tag |= T.line }
        if answer.column != state.column { tag |= T.column }
        if answer.caller != state.caller { tag |= T.caller }
        stream.append(tag)
        if tag & T.function != 0 { put(UInt64(answer.function)) }
        if tag & T.file != 0 { put(answer.file == SymbolCacheLayout.none ? 0 : UInt64(answer.file) + 1) }
        if tag & T.line != 0 { put(SegmentCoding.zigzag(Int64(answer.line) - Int64(state.line))) }
        if tag & T.column != 0 { put(SegmentCoding.zigzag(Int64(answer.column) - Int64(state.column))) }
        if tag & T.caller != 0 { put(answer.caller == SymbolCacheLayout.none ? 0 : UInt64(answer.caller) + 1) }
        state = answer
    }

    private mutating func put(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            stream.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        stream.append(UInt8(v))
    }
}

extension SegmentEncoder {
    /// Calls `body` with each segment written so far, in order (decoded from the stream).
    func forEachSegment(_ body: (UInt64, SegmentAnswer?) -> Void) {
        stream.withUnsafeBytes { raw in
            for b in blockStarts.indices {
                let end = b + 1 < blockOffsets.count ? blockOffsets[b + 1] : raw.count
                let count = min(SegmentCoding.blockLength, self.count - b * SegmentCoding.blockLength)
                // The encoder's own bytes: they decode.
                _ = SegmentCoding.decode(raw, offset: blockOffsets[b], end: end, firstStart: blockStarts[b], count: count) { start, answer in
                    body(start, answer)
                    return true
                }
            }
        }
    }
}
