/// What the levels of one function share (24 bytes, 8-aligned):
///
/// ```
/// 0  function start u64 (valid with flag 1)
/// 8  symbol  12 full name  16 simplified name: string indexes, 0xFFFF_FFFF for none
/// 20 flags u32 (1 has function start, 2 from the symbol table only)
/// ```
///
/// A symbol's three names are all present or all absent (checked at open), so each style
/// answers alike; a name no demangler changes is one string, named three times.
enum FunctionRecord {
    enum Offset {
        static let functionStart = 0, symbol = 8, fullName = 12, simplifiedName = 16, flags = 20
    }

    enum Flag {
        static let hasFunctionStart: UInt32 = 1
        static let fromSymbolTableOnly: UInt32 = 2
        static let known: UInt32 = 3
    }
}
