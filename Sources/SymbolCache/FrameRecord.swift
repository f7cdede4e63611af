/// One frame as stored (40 bytes, 8-aligned):
///
/// ```
/// 0  function start u64 (valid with flag 1)
/// 8  symbol  12 full name  16 simplified name  20 file: string indexes, 0xFFFF_FFFF for none
/// 24 line i32  28 column i32  32 flags u32 (1 has function start, 2 from the symbol table only)
/// 36 zero
/// ```
///
/// Lines and columns are stored as the 32-bit values DWARF gave (`UnitIndex` reads them as
/// `Int32`), so widening them back gives exactly `SourceFrame`'s `Int`.
enum FrameRecord {
    enum Offset {
        static let functionStart = 0, symbol = 8, fullName = 12, simplifiedName = 16, file = 20
        static let line = 24, column = 28, flags = 32
    }

    enum Flag {
        static let hasFunctionStart: UInt32 = 1
        static let fromSymbolTableOnly: UInt32 = 2
        static let known: UInt32 = 3
    }
}
