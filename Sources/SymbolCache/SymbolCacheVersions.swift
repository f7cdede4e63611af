/// Every symcache format version, oldest first, with the reason it was bumped (as
/// symbolicator's `versions.rs`). The header's version is the last entry's; a symcache of any
/// other version is refused at open (`.unsupportedVersion`) and rebuilt from its debug file.
///
/// Bump when the layout changes, when what the writer stores for the same input changes (a fix
/// in `DebugFile.frames(at:)` or in the builder), or when the key gains a field. A change in an
/// input the key already records (the debug file, its executable, a demangler library) needs no
/// bump: the key refuses exactly the symcaches it affects.
public enum SymbolCacheVersions {
    public struct Entry: Sendable {
        public let version: UInt32
        public let reason: String
    }

    public static let history: [Entry] = [
        Entry(version: 1, reason: """
            Issue 15: the first layout. A 128-byte header keyed by the debug file's size, mtime \
            and inode; segment starts, chains, frames, functions, string refs and blob.
            """),
        Entry(version: 2, reason: """
            Issue 29: the key holds everything the answers depend on. The header grows to 256 \
            bytes and records the executable that was given beside the debug file (its symbol \
            table answers when the debug file has none) and, for each demangler whose names the \
            symcache stores, the build id of its library (flags 4, 8, 16): a Swift or C++ runtime \
            upgrade rebuilds the symcaches holding names it demangles, and only those. Version-1 \
            symcaches hold names from an unknown demangler, so they are all rebuilt once.
            """),
        Entry(version: 3, reason: """
            Issue 31: a fifth of the size, built in one sweep. Segments are delta-coded in blocks \
            of 16 (LEB128 varints) instead of fixed 28-byte rows; inlined callers are shared \
            records; the strings are cut into blocks of 64 KiB compressed alone with zstd and \
            decompressed at their first use; string ends replace offset and length. The header \
            gains the segment stream's size, the string blocks' count and the compressed size \
            (the architecture name now holds 23 bytes).
            """),
        Entry(version: 4, reason: """
            Issue 31: names stored in one style. A function record keeps its symbol and full \
            name (20 bytes, was 24); the simplified name is derived from the symbol at lookup \
            and kept in a bounded cache, and only Swift names have one that differs. Building \
            no longer demangles every Swift name twice, nor stores every C++ name twice.
            """),
    ]

    /// What the writer puts in the header and the reader accepts.
    public static var current: UInt32 { history[history.count - 1].version }
}
