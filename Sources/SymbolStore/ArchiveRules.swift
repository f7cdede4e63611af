import Foundation
import SystemCalls

/// What every archive the store unpacks (zip, tar) must obey, in one place: the cap on what it
/// unpacks to, the entry count, the names that may be created and the private directory they
/// go to. Entries are checked before anything is written, so a hostile archive leaves nothing.
enum ArchiveRules {
    /// Optional cap on what one archive may unpack to, in bytes (the free space caps it too).
    /// Named after zips, the first archives the store took; tar archives obey it as well.
    static let limitVariable = "STACKLINE_UNZIP_MAX_BYTES"
    /// The cap without the variable: more than any real set of dSYMs, less than a disk.
    static let defaultLimit: UInt64 = 16 << 30
    /// More entries than a real dSYM upload has; past it, empty entries would exhaust inodes.
    static let maximumEntries = 100_000

    /// The most an archive may unpack to, and how to say so.
    struct Limit {
        var bytes: UInt64
        var name: String
    }

    /// STACKLINE_UNZIP_MAX_BYTES or the default cap, and never more than the free space.
    static func limit(temporary: String, cap: String?, archive: String) throws(StoreError) -> Limit {
        var limit = Limit(bytes: defaultLimit, name: "the default cap of \(defaultLimit >> 30) GiB (\(limitVariable) sets another)")
        if let text = cap {
            guard let bytes = UInt64(text) else {
                throw .archive(path: archive, reason: "\(limitVariable)=\(text) is not a byte count")
            }
            limit = Limit(bytes: bytes, name: "\(limitVariable)=\(bytes)")
        }
        var fs = statvfs()
        if statvfs(temporary, &fs) == 0 {
            let free = UInt64(fs.f_bavail) &* UInt64(fs.f_frsize)
            if free < limit.bytes { limit = Limit(bytes: free, name: "the \(free) bytes free in \(temporary)") }
        }
        return limit
    }

    /// The refusal of entry `name` of `archive`: the whole archive is refused.
    static func refuse(_ name: String, archive: String, _ why: String) -> StoreError {
        .archive(path: archive, reason: "entry \(quoted(name)) \(why); nothing was unpacked")
    }

    /// Why an entry that is a link is refused, whichever archive holds it.
    static let linkRefusal = "(links in archives are neither created nor followed)"

    /// The entry's path components, nil for an entry that names the archive's root; throws
    /// for a name that must not be unpacked (absolute, `..`, a NUL byte).
    static func components(of name: String, archive: String) throws(StoreError) -> [String]? {
        if name.hasPrefix("/") || name.hasPrefix("\\") { throw refuse(name, archive: archive, "has an absolute path") }
        if name.contains("\0") { throw refuse(name, archive: archive, "has a NUL byte in its name") }
        let parts = name.split(separator: "/").map(String.init).filter { $0 != "." }
        if parts.contains("..") { throw refuse(name, archive: archive, "climbs out of the archive with '..'") }
        return parts.isEmpty ? nil : parts
    }

    /// A new private directory under `temporary` to unpack into (named `prefix.XXXXXX`); the
    /// caller removes it.
    static func makeScratch(prefix: String, archive: String, temporary: String) throws(StoreError) -> String {
        var template = Array((temporary + "/" + prefix + ".XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw .archive(path: archive, reason: "cannot make a temporary directory: \(SystemCallError.reason(errno: errno))")
        }
        return String(cString: made)
    }

    /// Makes the directories of `parts` below `directory` (all of them when `isDirectory`, else
    /// all but the last) and returns the path of the last part.
    static func prepare(_ parts: [String], isDirectory: Bool, in directory: String, archive: String) throws(StoreError) -> String {
        var parent = directory
        for part in isDirectory ? parts[...] : parts.dropLast() {
            parent += "/" + part
            try makeDirectory(parent, archive: archive)
        }
        return isDirectory ? parent : parent + "/" + parts[parts.count - 1]
    }

    /// Makes `path` unless it is already a directory; the scratch directory is private and
    /// holds nothing but what was unpacked, so an existing non-directory is a clash of names.
    private static func makeDirectory(_ path: String, archive: String) throws(StoreError) {
        if mkdir(path, PrivateFiles.directoryMode) == 0 { return }
        let code = errno
        var st = stat()
        guard code == EEXIST, lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            throw .archive(path: archive, reason: "cannot make directory \(path): \(SystemCallError.reason(errno: code))")
        }
    }

    /// A name from an archive, quoted with control characters made visible.
    static func quoted(_ name: String) -> String {
        "'" + name.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined() + "'"
    }
}
