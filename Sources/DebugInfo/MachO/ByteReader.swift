/// Bounds-checked integer loads from a byte range: every offset a file states is checked
/// before it is read, so no input can make a read run past the mapping.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    let bigEndian: Bool

    var count: Int { bytes.count }

    func contains(_ offset: UInt64, _ length: UInt64) -> Bool {
        let end = offset &+ length
        return end >= offset && end <= UInt64(bytes.count)
    }

    func u32(_ offset: Int) -> UInt32? {
        guard offset >= 0, contains(UInt64(offset), 4) else { return nil }
        let v = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        return bigEndian ? UInt32(bigEndian: v) : UInt32(littleEndian: v)
    }

    func u64(_ offset: Int) -> UInt64? {
        guard offset >= 0, contains(UInt64(offset), 8) else { return nil }
        let v = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        return bigEndian ? UInt64(bigEndian: v) : UInt64(littleEndian: v)
    }

    func u16(_ offset: Int) -> UInt16? {
        guard offset >= 0, contains(UInt64(offset), 2) else { return nil }
        let v = bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)
        return bigEndian ? UInt16(bigEndian: v) : UInt16(littleEndian: v)
    }

    func u8(_ offset: Int) -> UInt8? {
        guard offset >= 0, offset < bytes.count else { return nil }
        return bytes[offset]
    }

    /// A fixed-size name field (segment and section names), NUL-padded, not always NUL-terminated.
    func name(_ offset: Int, length: Int = 16) -> String? {
        guard offset >= 0, contains(UInt64(offset), UInt64(length)) else { return nil }
        let field = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length])
        let end = field.firstIndex(of: 0) ?? length
        return String(decoding: field[0..<end], as: UTF8.self)
    }

    /// A NUL-terminated string starting at `offset`, not reading past `limit`.
    func cString(_ offset: Int, limit: Int) -> String? {
        guard offset >= 0, offset < limit, limit <= bytes.count else { return nil }
        let field = UnsafeRawBufferPointer(rebasing: bytes[offset..<limit])
        let end = field.firstIndex(of: 0) ?? field.count
        return String(decoding: field[0..<end], as: UTF8.self)
    }

    /// The sub-range `[offset, offset+length)` as its own reader.
    func slice(_ offset: UInt64, _ length: UInt64) -> ByteReader? {
        guard contains(offset, length) else { return nil }
        return ByteReader(
            bytes: UnsafeRawBufferPointer(rebasing: bytes[Int(offset)..<Int(offset + length)]), bigEndian: bigEndian)
    }
}
