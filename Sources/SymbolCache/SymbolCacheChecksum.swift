import StacklineDeflate

/// CRC-32 (the zlib polynomial) through libdeflate, which uses the CPU's carry-less multiply:
/// checking a whole symcache at open costs little next to process start (`make bench`'s cold
/// lookups measure both).
enum SymbolCacheChecksum {
    /// The CRC-32 of `bytes`, or of what came before followed by `bytes` when `crc` is that
    /// part's CRC-32.
    static func crc32(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        return libdeflate_crc32(crc, base, bytes.count)
    }
}
