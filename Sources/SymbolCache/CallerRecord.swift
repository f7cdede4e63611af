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
}
