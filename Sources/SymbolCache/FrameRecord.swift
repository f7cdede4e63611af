/// One inline level as stored (16 bytes):
///
/// ```
/// 0 function u32 (index of a `FunctionRecord`)   4 file u32 (string index, 0xFFFF_FFFF for none)
/// 8 line i32                                      12 column i32
/// ```
///
/// Lines and columns are stored as the 32-bit values DWARF gave (`UnitIndex` reads them as
/// `Int32`), so widening them back gives exactly `SourceFrame`'s `Int`. What a level shares with
/// every other level of the same function (its names, its start) is in the function record, so
/// the record that differs from row to row stays small.
enum FrameRecord {
    enum Offset {
        static let function = 0, file = 4, line = 8, column = 12
    }
}
