/// What the levels of one function share (20 bytes; the start is read unaligned):
///
/// ```
/// 0  function start u64 (valid with flag 1)
/// 8  symbol  12 full name: string indexes, 0xFFFF_FFFF for none
/// 16 flags u32 (1 has function start, 2 from the symbol table only)
/// ```
///
/// A symbol and its full name are both present or both absent (checked at open), so each style
/// answers alike; a name no demangler changes is one string, named twice. The simplified name
/// is not stored: `SymbolCache` derives it from the symbol at lookup, and only Swift names have
/// one that differs (`Demangler.Family.stylesDiffer`).
enum FunctionRecord {
    enum Offset {
        static let functionStart = 0, symbol = 8, fullName = 12, flags = 16
    }

    enum Flag {
        static let hasFunctionStart: UInt32 = 1
        static let fromSymbolTableOnly: UInt32 = 2
        static let known: UInt32 = 3
    }

    static func append(start: UInt64, symbol: UInt32, fullName: UInt32, flags: UInt32, to records: inout [UInt8]) {
        withUnsafeBytes(of: start.littleEndian) { records += $0 }
        for field in [symbol, fullName, flags] { withUnsafeBytes(of: field.littleEndian) { records += $0 } }
    }

    /// `records` with their names' string ids moved as `shift` says (see `CallerRecord.shift`).
    static func shift(_ records: inout [UInt8], by shift: RecordShift) {
        records.withUnsafeMutableBytes { raw in
            for record in stride(from: 0, to: raw.count, by: SymbolCacheLayout.functionRecordSize) {
                RecordShift.apply(raw, record + Offset.symbol, shift.strings)
                RecordShift.apply(raw, record + Offset.fullName, shift.strings)
            }
        }
    }
}
