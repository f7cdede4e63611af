import DebugInfo
import Foundation
import SystemCalls

/// A file the store creates itself: never an existing name, never through a symbolic link.
/// Both the store's files and an unpacked archive's are written through here.
final class NewFile {
    let path: String
    let descriptor: Int32
    private(set) var written: UInt64 = 0

    init(path: String) throws(StoreError) {
        self.path = path
        descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, PrivateFiles.fileMode)
        guard descriptor >= 0 else { throw .io(path: path, reason: "cannot create: \(RegularFile.openFailure(errno))") }
    }

    deinit { close(descriptor) }

    /// Writes the first `count` bytes of `bytes` (all of them when nil).
    func write<Bytes: ContiguousBytes>(_ bytes: Bytes, count: Int? = nil) throws(StoreError) {
        let failure: SystemCallError? = bytes.withUnsafeBytes { all in
            let total = count ?? all.count
            do throws(SystemCallError) { try SystemCall.writeAll(descriptor, UnsafeRawBufferPointer(rebasing: all[..<total])) } catch { return error }
            written += UInt64(total)
            return nil
        }
        if let failure { throw .io(path: path, reason: "cannot write: \(failure.reason)") }
    }

    /// Copies `range` of `source` (all of it when nil) from its open descriptor.
    func copy(from source: RegularFile, range: Range<UInt64>? = nil) throws(StoreError) {
        var offset = range?.lowerBound ?? 0
        let end = range?.upperBound ?? .max
        // In the kernel first: a debug file of a few hundred megabytes is not read into this
        // process and written out again (`make bench`, symcache build: `symbols add`).
        while offset < end {
            let copied: Int?
            do throws(SystemCallError) {
                copied = try SystemCall.copyRange(from: source.descriptor, at: offset, to: descriptor, count: Int(min(end - offset, 1 << 30)))
            } catch {
                throw .io(path: path, reason: "cannot copy \(source.path): \(error.reason)")
            }
            guard let copied else { break }
            if copied == 0 {
                guard range == nil else { throw .io(path: source.path, reason: "slice at \(range!.lowerBound) is cut short") }
                return
            }
            offset += UInt64(copied)
            written += UInt64(copied)
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while offset < end {
            let want = Int(min(UInt64(buffer.count), end - offset))
            let n = buffer.withUnsafeMutableBytes { pread(source.descriptor, $0.baseAddress!, want, off_t(offset)) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw .io(path: source.path, reason: "cannot read: \(SystemCallError.reason(errno: errno))") }
            if n == 0 {
                guard range == nil else { throw .io(path: source.path, reason: "slice at \(range!.lowerBound) is cut short") }
                break
            }
            try write(buffer, count: n)
            offset += UInt64(n)
        }
    }
}
