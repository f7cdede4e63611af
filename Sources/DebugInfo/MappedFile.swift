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

    convenience init(path: String, headroom requested: Int = 0) throws(MachOError) {
        let file: RegularFile
        do { file = try RegularFile(path: path) } catch { throw .unreadable(path: path, reason: error.reason) }
        try self.init(file: file, headroom: requested)
    }

    /// Maps the file `file` has open; the mapping outlives the descriptor.
    init(file: RegularFile, headroom requested: Int = 0) throws(MachOError) {
        let path = file.path
        self.path = path
        let fd = file.descriptor
        // The size now, not when the file was opened: mapping past the end would fault on access.
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
        guard st.st_size > 0 else { throw .notMachO(path: path, detail: "empty file") }
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

/// Why a path could not be opened as a regular file; `reason` reads as the end of a sentence.
public struct RegularFileError: Error, Equatable, CustomStringConvertible {
    public let path: String
    public let reason: String
    /// What the path is instead, when it opened but is not a regular file ("a FIFO").
    public var kind: String? = nil
    public var description: String { "\(path): \(reason)" }
}

/// A regular file open for reading. Every input is opened through here: never blocking (a
/// FIFO or a device is refused from its `fstat`, not waited on), and checked on the open
/// descriptor, so what was checked is what is read, whatever happens to the path meanwhile.
public final class RegularFile {
    /// The name in messages; not reopened.
    public let path: String
    public let descriptor: Int32
    public let size: UInt64

    /// Opens `path`; with `followingLinks: false` a symbolic link in the last component is
    /// refused instead of followed.
    public convenience init(path: String, followingLinks: Bool = true) throws(RegularFileError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followingLinks ? 0 : O_NOFOLLOW))
        guard fd >= 0 else { throw RegularFileError(path: path, reason: Self.openFailure(errno)) }
        try self.init(adopting: fd, path: path)
    }

    /// Takes ownership of `fd` (closed if it is not a regular file); `path` names it in messages.
    public init(adopting fd: Int32, path: String) throws(RegularFileError) {
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw RegularFileError(path: path, reason: reason)
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            let kind = Self.kind(mode: st.st_mode)
            throw RegularFileError(path: path, reason: "not a regular file (\(kind))", kind: kind)
        }
        self.path = path
        descriptor = fd
        size = UInt64(st.st_size)
    }

    deinit { close(descriptor) }

    /// Up to `count` bytes at `offset`; fewer only at the end of the file.
    public func read(at offset: UInt64, count: Int) throws(RegularFileError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw RegularFileError(path: path, reason: "cannot read: \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            done += n
        }
        return Array(bytes.prefix(done))
    }

    /// What a file mode is, for "not a regular file (a FIFO)".
    public static func kind(mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: return "a regular file"
        case S_IFDIR: return "a directory"
        case S_IFLNK: return "a symbolic link"
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        default: return "file type \(String(mode & S_IFMT, radix: 8))"
        }
    }

    /// `open`'s errno as a reason; ELOOP under O_NOFOLLOW means the path is a link.
    public static func openFailure(_ code: Int32) -> String {
        code == ELOOP ? "is a symbolic link, not followed" : String(cString: strerror(code))
    }
}
