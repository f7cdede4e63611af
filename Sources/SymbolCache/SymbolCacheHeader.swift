/// Typed reads of a symcache's header, which the caller has checked is all there.
struct SymbolCacheHeader {
    let bytes: UnsafeRawBufferPointer

    init(_ bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count >= SymbolCacheLayout.headerSize, "header size checked by the caller")
        self.bytes = bytes
    }

    subscript<T: FixedWidthInteger>(offset: Int) -> T {
        T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    /// The header's CRC-32 with its own field counted as zero.
    func checksum() -> UInt32 {
        var copy = Array(bytes[..<SymbolCacheLayout.headerSize])
        for i in 0..<4 { copy[SymbolCacheLayout.Offset.headerCRC + i] = 0 }
        return copy.withUnsafeBytes { SymbolCacheChecksum.crc32($0) }
    }
}
