import StacklineDeflate

/// CRC-32 (the zlib polynomial) through libdeflate, which uses the CPU's carry-less multiply:
/// checking a whole symcache at open costs little next to process start (`make bench`'s cold
/// lookups measure both).
enum SymbolCacheChecksum {
    static func crc32(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return 0 }
        return libdeflate_crc32(0, base, bytes.count)
    }
}
