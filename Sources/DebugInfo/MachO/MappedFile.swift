import Foundation
import SystemCalls

/// A regular file mapped read-only, optionally behind `headroom` writable zero bytes that
/// precede it in the same contiguous region.
///
/// The headroom is what lets a Mach-O slice be handed to libelf without copying its DWARF:
/// an ELF header is written into the headroom, the file follows, and `elf_memory` sees one
/// ELF image whose section offsets point into the mapped file. Pages of the file are read
/// lazily, as with libelf's own mmap of an ELF file.
///
/// The symcache maps its file through here too, `writable: false`: nothing may write to an
/// index other processes share through the page cache.
public final class MappedFile {
    public let path: String
    public let fileSize: Int
    let headroom: Int
    /// Start of the whole region: headroom, then the file.
    let base: UnsafeMutableRawPointer
    private let regionLength: Int

    /// Maps the file `file` has open; the mapping outlives the descriptor. `writable: false`
    /// maps the file's pages read-only (a write faults instead of copying the page).
    public init(file: RegularFile, headroom requested: Int = 0, writable: Bool = true) throws(MappedFileError) {
        let path = file.path
        self.path = path
        let fd = file.descriptor
        // The size now, not when the file was opened: mapping past the end would fault on access.
        let st: stat
        do { st = try SystemCall.status(of: fd, path: path) } catch { throw .unreadable(path: path, reason: error.reason) }
        guard st.st_size > 0 else { throw .empty(path: path) }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        headroom = (requested + page - 1) / page * page
        fileSize = Int(st.st_size)
        regionLength = headroom + fileSize
        // Reserve the whole region first so the file can be placed right after the headroom.
        let region: UnsafeMutableRawPointer
        do { region = try Self.map(nil, regionLength, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1) } catch {
            throw .unreadable(path: path, reason: "cannot map \(regionLength) bytes: \(error.reason)")
        }
        // Private and writable: libelf never writes a native-endian image, but a stray write
        // must not reach the file or fault.
        let protection = writable ? PROT_READ | PROT_WRITE : PROT_READ
        do { _ = try Self.map(region + headroom, fileSize, protection, MAP_PRIVATE | MAP_FIXED, fd) } catch {
            munmap(region, regionLength)
            throw .unreadable(path: path, reason: "cannot map file: \(error.reason)")
        }
        base = region
    }

    /// `mmap` at offset 0, checked: MAP_FAILED is not the -1 or nil `SystemCall.check` knows.
    private static func map(_ address: UnsafeMutableRawPointer?, _ length: Int, _ protection: Int32, _ flags: Int32, _ fd: Int32)
        throws(SystemCallError) -> UnsafeMutableRawPointer
    {
        try SystemCall.check("mmap") { () -> UnsafeMutableRawPointer? in
            let mapped = mmap(address, length, protection, flags, fd, 0)
            return mapped == MAP_FAILED ? nil : mapped
        }
    }

    deinit { munmap(base, regionLength) }

    /// The file's bytes.
    public var contents: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base + headroom, count: fileSize) }

    /// The headroom followed by the file, as one buffer.
    var region: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(start: base, count: regionLength) }
}

/// Why a file could not be mapped: an I/O failure, or nothing to map.
public enum MappedFileError: Error, Sendable {
    case empty(path: String)
    case unreadable(path: String, reason: String)
}
