import Foundation

/// A regular file mapped read-only, optionally behind `headroom` writable zero bytes that
/// precede it in the same contiguous region.
///
/// The headroom is what lets a Mach-O slice be handed to libelf without copying its DWARF:
/// an ELF header is written into the headroom, the file follows, and `elf_memory` sees one
/// ELF image whose section offsets point into the mapped file. Pages of the file are read
/// lazily, as with libelf's own mmap of an ELF file.
final class MappedFile {
    let path: String
    let fileSize: Int
    let headroom: Int
    /// Start of the whole region: headroom, then the file.
    let base: UnsafeMutableRawPointer
    private let regionLength: Int

    /// Maps the file `file` has open; the mapping outlives the descriptor.
    init(file: RegularFile, headroom requested: Int = 0) throws(MappedFileError) {
        let path = file.path
        self.path = path
        let fd = file.descriptor
        // The size now, not when the file was opened: mapping past the end would fault on access.
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
        guard st.st_size > 0 else { throw .empty(path: path) }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        headroom = (requested + page - 1) / page * page
        fileSize = Int(st.st_size)
        regionLength = headroom + fileSize
        // Reserve the whole region first so the file can be placed right after the headroom.
        guard let region = mmap(nil, regionLength, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            region != MAP_FAILED
        else { throw .unreadable(path: path, reason: "cannot map \(regionLength) bytes: \(String(cString: strerror(errno)))") }
        // Private and writable: libelf never writes a native-endian image, but a stray write
        // must not reach the file or fault.
        let mapped = mmap(region + headroom, fileSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0)
        guard mapped != MAP_FAILED else {
            let reason = String(cString: strerror(errno))
            munmap(region, regionLength)
            throw .unreadable(path: path, reason: "cannot map file: \(reason)")
        }
        base = region
    }

    deinit { munmap(base, regionLength) }

    /// The file's bytes.
    var contents: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base + headroom, count: fileSize) }

    /// The headroom followed by the file, as one buffer.
    var region: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(start: base, count: regionLength) }
}

/// Why a file could not be mapped: an I/O failure, or nothing to map.
enum MappedFileError: Error {
    case empty(path: String)
    case unreadable(path: String, reason: String)
}
