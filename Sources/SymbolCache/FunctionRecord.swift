/// What the levels of one function share (16 bytes, 8-aligned):
///
/// ```
/// 0  function start u64 (valid with flag 1)
/// 8  name u32: string index, 0xFFFF_FFFF for none
/// 12 flags u32 (1 has function start, 2 from the symbol table only,
///               4 a Swift-mangled name, 8 a C++-mangled name: demangled at lookup)
/// ```
///
/// The name is stored once, as the debug file has it (mangled); the demangled forms are made at
/// lookup (`SymbolCache`'s bounded cache of them), so a symcache does not depend on which
/// demangler library the process has.
enum FunctionRecord {
    enum Offset {
        static let functionStart = 0, name = 8, flags = 12
    }

    enum Flag {
        static let hasFunctionStart: UInt32 = 1
        static let fromSymbolTableOnly: UInt32 = 2
        static let swiftName: UInt32 = 4
        static let cxxName: UInt32 = 8
        static let known: UInt32 = 15
    }
}
