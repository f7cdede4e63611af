/// One outer level of inlined code (20 bytes): the call site of the level inside it.
///
/// ```
/// 0 function u32 (index of a `FunctionRecord`)   4 file u32 (string index, 0xFFFF_FFFF for none)
/// 8 line i32    12 column i32    16 next u32 (the caller of this level, or 0xFFFF_FFFF)
/// ```
///
/// Callers are shared: every segment of one inlined call points at the same record, so a chain
/// of levels is stored once however many line rows answer inside it. A record's next is always
/// an earlier record (checked at open), so a chain ends.
enum CallerRecord {
    enum Offset {
        static let function = 0, file = 4, line = 8, column = 12, next = 16
    }

    static func append(function: UInt32, file: UInt32, line: Int32, column: Int32, next: UInt32, to records: inout [UInt8]) {
        for field in [function, file, UInt32(bitPattern: line), UInt32(bitPattern: column), next] {
            withUnsafeBytes(of: field.littleEndian) { records += $0 }
        }
    }

    /// `records` as they read once functions, strings and callers before them are numbered
    /// first (`shift`): what joining the builder's parts does to the later part's records.
    static func shift(_ records: inout [UInt8], by shift: RecordShift) {
        records.withUnsafeMutableBytes { raw in
            for record in stride(from: 0, to: raw.count, by: SymbolCacheLayout.callerRecordSize) {
                RecordShift.apply(raw, record + Offset.function, shift.functions)
                RecordShift.apply(raw, record + Offset.file, shift.strings)
                RecordShift.apply(raw, record + Offset.next, shift.callers)
            }
        }
    }
}

/// How far the ids of a later part of the builder's sweep move when it is joined after earlier
/// ones (`SymbolCacheBuilder`): by the functions, strings and callers those hold.
struct RecordShift {
    var functions: UInt32 = 0
    var strings: UInt32 = 0
    var callers: UInt32 = 0

    /// The shift of the part after one holding `functions`, `strings` and `callers` more (each
    /// count from a debug file), nil when an index would reach past what the format holds.
    func after(functions f: Int, strings s: Int, callers c: Int) -> RecordShift? {
        func add(_ base: UInt32, _ n: Int) -> UInt32? {
            guard let n = UInt32(exactly: n) else { return nil }
            let (sum, overflow) = base.addingReportingOverflow(n)
            return overflow || sum >= SymbolCacheLayout.none ? nil : sum
        }
        guard let functions = add(functions, f), let strings = add(strings, s), let callers = add(callers, c) else { return nil }
        return RecordShift(functions: functions, strings: strings, callers: callers)
    }

    /// `id` moved by `by`; `none` stays none.
    static func moved(_ id: UInt32, by: UInt32) -> UInt32 { id == SymbolCacheLayout.none ? id : id &+ by }

    /// The little-endian id at `offset` moved by `by`.
    static func apply(_ raw: UnsafeMutableRawBufferPointer, _ offset: Int, _ by: UInt32) {
        let id = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        raw.storeBytes(of: Self.moved(id, by: by).littleEndian, toByteOffset: offset, as: UInt32.self)
    }

    func moved(_ answer: SegmentAnswer) -> SegmentAnswer {
        SegmentAnswer(
            function: Self.moved(answer.function, by: functions), file: Self.moved(answer.file, by: strings), line: answer.line,
            column: answer.column, caller: Self.moved(answer.caller, by: callers))
    }
}
