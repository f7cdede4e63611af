import CElfUtils

struct LineRow {
    var address: UInt64
    var file: Int32
    var line: Int32
    var column: Int32
    var endSequence: Bool
}
