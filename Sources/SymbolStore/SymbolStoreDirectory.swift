import DebugInfo
import Foundation
import JSONFormat
import ReportModel
import SymbolCache
import SystemCalls

/// Why a file was not stored. Each case reads as one line.
public enum StoreError: Error, CustomStringConvertible {
    case rejected(ElfError)
    case noBuildID(path: String)
    case io(path: String, reason: String)
    case notFound(buildID: BuildID)
    /// No stored build-id starts with the digits given.
    case noPrefixMatch(String)
    case invalidBuildID(String)
    case rejectedMachO(MachOError)
    case multipleSlices(path: String, count: Int)
    case archive(path: String, reason: String)
    /// A FIFO, device, socket or directory where a file was expected.
    case notRegularFile(path: String, kind: String)
    /// A link met inside a directory, bundle or archive: never followed.
    case symbolicLink(path: String)
    /// An archive inside an archive: never unpacked.
    case nestedArchive(path: String, archive: String)
    /// A directory nested deeper than a walk goes.
    case tooDeep(path: String, limit: Int)
    /// A file named on the command line that holds no debug information (`what` says what it is).
    case notDebugFile(path: String, what: String)
    /// An upload larger than the store takes (`limit` says which cap).
    case tooLarge(path: String, limit: String)
    /// A build-id prefix that more than one stored file starts with.
    case ambiguousBuildID(prefix: String, matches: [String])

    public var description: String {
        switch self {
        case .rejected(let e): return e.description
        case .rejectedMachO(let e): return e.description
        case .multipleSlices(let p, let n): return "\(p): fat file with \(n) slices: add it with addFile(path:)"
        case .archive(let p, let r): return "\(p): cannot unpack archive: \(r)"
        case .noBuildID(let p): return "\(p): ELF file has no GNU build-id note (link with -Wl,--build-id)"
        case .io(let p, let r): return "\(p): \(r)"
        case .notFound(let id): return "no debug file for build-id \(id) in the store"
        case .noPrefixMatch(let prefix): return "no debug file whose build-id starts with \(prefix) in the store"
        case .invalidBuildID(let id): return "not a build-id (expected hex digits): \(id)"
        case .notRegularFile(let p, let k): return "\(p): not a regular file (\(k)); only regular files are stored"
        case .symbolicLink(let p): return "\(p): symbolic link inside a directory, bundle or archive, not followed (add its target by name)"
        case .nestedArchive(let p, let a):
            return "\(p): nested archive \((p as NSString).lastPathComponent) inside \((a as NSString).lastPathComponent) is not unpacked; unzip it first"
        case .tooDeep(let p, let n): return "\(p): directories nested more than \(n) deep are not walked"
        case .notDebugFile(let p, let what): return "\(p): \(what)"
        case .tooLarge(let p, let limit): return "\(p): larger than \(limit)"
        case .ambiguousBuildID(let prefix, let matches):
            return "build-id prefix \(prefix) matches \(matches.count) stored files: \(matches.prefix(5).joined(separator: ", ")); give more digits"
        }
    }
}

/// What the store holds for one build-id.
public struct StoredDebugFile: Codable, Sendable, Equatable {
    public var buildId: BuildID
    /// Base name of the file that was added.
    public var name: String
    public var arch: Arch
    /// `debug`, `executable`, `shared-object`, …
    public var kind: String
    public var size: UInt64
    public var hasDWARF: Bool
    public var hasSymbolTable: Bool
    public var addedAt: Date
    /// Where the file came from when it was added.
    public var source: String
    /// The stored `.debug` file.
    public var path: String
    /// The stored executable image, when one was added (`.build-id/ab/cdef…` without suffix).
    public var executablePath: String?
    /// `elf` or `mach-o`; absent in entries written before Mach-O support (they are ELF).
    public var format: String?

    /// How much a lookup can get out of it: DWARF beats a symbol table beats dynamic symbols.
    var quality: Int { Self.quality(hasDWARF: hasDWARF, hasSymbolTable: hasSymbolTable) }

    static func quality(hasDWARF: Bool, hasSymbolTable: Bool) -> Int { (hasDWARF ? 2 : 0) + (hasSymbolTable ? 1 : 0) }
}

/// What `add` did with one file.
public enum AddOutcome: Sendable, Equatable {
    case stored(StoredDebugFile)
    /// A better file replaced the one stored before.
    case upgraded(StoredDebugFile)
    /// The store already had this file or a better one; only the executable role may have been filled.
    case kept(StoredDebugFile, reason: String)

    /// The entry as it stands after the add.
    public var entry: StoredDebugFile {
        switch self {
        case .stored(let e), .upgraded(let e), .kept(let e, _): return e
        }
    }
}

/// The debug-file store: a directory in the `.build-id/ab/cdef….debug` layout that gdb,
/// eu-stack, `llvm-symbolizer --debug-file-directory` and debuginfod clients read, plus a
/// `.json` sidecar per build-id so the store describes itself without a database.
public struct SymbolStoreDirectory: Sendable {
    public let root: String
    /// Caps and the temporary directory for what arrives (archives, uploads): the defaults unless
    /// the entry point passed its environment's.
    public var limits: StoreLimits

    public init(root: String, limits: StoreLimits = StoreLimits()) {
        self.root = root
        self.limits = limits
    }

    /// The store when neither `--symbols` nor `STACKLINE_SYMBOLS` names one.
    public static let defaultRoot = "symbols"

    /// The one place the store is chosen: `--symbols`, then `variable` (`STACKLINE_SYMBOLS`),
    /// then `./symbols`. An empty value counts as unset, as `STACKLINE_DB` does for the database.
    public static func resolve(option: String?, variable: String?, limits: StoreLimits = StoreLimits()) -> SymbolStoreDirectory {
        if let option, !option.isEmpty { return SymbolStoreDirectory(root: option, limits: limits) }
        if let variable, !variable.isEmpty { return SymbolStoreDirectory(root: variable, limits: limits) }
        return SymbolStoreDirectory(root: defaultRoot, limits: limits)
    }

    private var buildIDRoot: String { root + "/.build-id" }

    private func base(_ id: BuildID) -> String { root + "/" + Self.layoutPath(id, role: .executable) }

    /// The two files the layout keeps per build-id.
    public enum Role: Sendable {
        /// `ab/cdef….debug`: the file with the most debug information.
        case debugInfo
        /// `ab/cdef…`: the executable image, when one was added.
        case executable
    }

    /// Where `role` of `id` lives below the root: `.build-id/ab/cdef…[.debug]`.
    public static func layoutPath(_ id: BuildID, role: Role) -> String {
        ".build-id/\(id.hex.prefix(2))/\(id.hex.dropFirst(2))" + (role == .debugInfo ? ".debug" : "")
    }

    /// The id a user typed (`symbols show`, `rm`, `lookup --build-id`, any length a build-id
    /// note can have), or `.invalidBuildID` naming it.
    public static func buildID(_ text: String) throws(StoreError) -> BuildID {
        do { return try BuildID(text, lengths: .anyByteCount) } catch { throw .invalidBuildID(text) }
    }

    // MARK: Lookup

    /// The one stored build-id that starts with `prefix` (at least 4 hex digits; dashes and
    /// case ignored, as everywhere an id is read): a full id names itself even when a longer id
    /// starts with it.
    public func resolve(prefix: String) throws(StoreError) -> BuildID {
        let digits: String
        do { digits = try BuildID.hexDigits(prefix) } catch { throw .invalidBuildID(prefix) }
        guard digits.utf8.count >= 4 else { throw .invalidBuildID(prefix) }
        if digits.utf8.count % 2 == 0, let id = try? BuildID(digits), entry(buildID: id) != nil { return id }
        let dir = buildIDRoot + "/" + digits.prefix(2)
        let rest = digits.dropFirst(2)
        let matches = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [])
            .filter { $0.hasSuffix(".json") && $0.hasPrefix(rest) }
            .compactMap { try? BuildID(String(digits.prefix(2)) + $0.dropLast(5)) }
            .sorted()
        guard let match = matches.first else {
            if let id = try? BuildID(digits) { throw .notFound(buildID: id) }
            throw .noPrefixMatch(prefix)
        }
        guard matches.count == 1 else { throw .ambiguousBuildID(prefix: prefix, matches: matches.map(\.hex)) }
        return match
    }

    public func entry(buildID id: BuildID) -> StoredDebugFile? {
        guard let data = FileManager.default.contents(atPath: base(id) + ".json") else { return nil }
        return try? Self.decoder.decode(StoredDebugFile.self, from: data)
    }

    /// Path of the debug file stored for `buildID`, if any.
    public func debugFilePath(buildID id: BuildID) -> String? {
        let path = base(id) + ".debug"
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// Where the symcache of `buildID`'s debug file lives (`….symcache` beside `….debug`),
    /// whether or not it exists yet.
    public func symbolCachePath(buildID id: BuildID) -> String {
        base(id) + "." + SymbolCache.fileExtension
    }

    /// Path of the executable image stored for `buildID`, if any.
    public func executablePath(buildID id: BuildID) -> String? {
        let path = base(id)
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    public func list() -> [StoredDebugFile] {
        let fm = FileManager.default
        guard let prefixes = try? fm.contentsOfDirectory(atPath: buildIDRoot) else { return [] }
        var out: [StoredDebugFile] = []
        for prefix in prefixes.sorted() where prefix.count == 2 {
            let dir = buildIDRoot + "/" + prefix
            for name in ((try? fm.contentsOfDirectory(atPath: dir)) ?? []).sorted() where name.hasSuffix(".json") {
                if let data = fm.contents(atPath: dir + "/" + name),
                    let entry = try? Self.decoder.decode(StoredDebugFile.self, from: data)
                {
                    out.append(entry)
                }
            }
        }
        return out
    }

    /// Removes every role of the stored file, its sidecar and its lock file.
    public func remove(buildID id: BuildID) throws(StoreError) -> StoredDebugFile {
        guard let entry = entry(buildID: id) else { throw .notFound(buildID: id) }
        let lock = base(id) + ".lock"
        try withLock(lock) { () throws(StoreError) in
            for suffix in [".json", ".debug", "", "." + SymbolCache.fileExtension] {
                let path = base(id) + suffix
                if unlink(path) != 0 && errno != ENOENT {
                    throw .io(path: path, reason: SystemCallError.reason(errno: errno))
                }
            }
            // Removed while held, so an `add` waiting on it finds the entry gone and starts afresh.
            unlink(lock)
        }
        return entry
    }

    // MARK: Adding

    /// Validates and stores one ELF file or thin Mach-O file. Never leaves a partly written
    /// file: content goes to a temporary file that is renamed into place, under a
    /// per-build-id lock.
    public func add(path: String) throws(StoreError) -> AddOutcome {
        let candidates = try StoreCandidate.identify(file: try Self.open(path))
        guard candidates.count == 1 else { throw .multipleSlices(path: path, count: candidates.count) }
        return try store(candidates[0])
    }

    /// Validates and stores one file: an ELF file, or a thin or fat Mach-O file, whose every
    /// slice becomes an entry under its own UUID. A fat file with one bad slice is refused
    /// whole, before anything is written.
    public func addFile(path: String) throws(StoreError) -> [AddOutcome] {
        try addFile(try Self.open(path), source: nil)
    }

    /// `source` is recorded in the sidecar instead of the file's absolute path.
    func addFile(_ file: RegularFile, source: String?) throws(StoreError) -> [AddOutcome] {
        var outcomes: [AddOutcome] = []
        for candidate in try StoreCandidate.identify(file: file) { outcomes.append(try store(candidate, source: source)) }
        return outcomes
    }

    /// Opens a path the user named, following links the way `cp` does; the file is then read
    /// only through this descriptor.
    private static func open(_ path: String) throws(StoreError) -> RegularFile {
        do { return try RegularFile(path: path) } catch {
            if let kind = error.kind { throw .notRegularFile(path: path, kind: kind) }
            throw .rejected(.unreadable(path: path, reason: error.reason))
        }
    }

    private func store(_ c: StoreCandidate, source: String? = nil) throws(StoreError) -> AddOutcome {
        let id = c.id
        let base = self.base(id)
        try makeDirectory((base as NSString).deletingLastPathComponent)
        return try withLock(base + ".lock") { () throws(StoreError) -> AddOutcome in
            // A stored file that is gone, not a regular file or another build's is no previous
            // entry: adding the right file again repairs it.
            var previous = Self.holds(base + ".debug", id: id) ? entry(buildID: id) : nil
            if let exe = previous?.executablePath, !Self.holds(exe, id: id) { previous?.executablePath = nil }
            var candidate = StoredDebugFile(
                buildId: id, name: c.name, arch: c.arch,
                kind: c.kind, size: c.size, hasDWARF: c.hasDWARF,
                hasSymbolTable: c.hasSymbolTable, addedAt: Date(), source: source ?? absolute(c.source),
                path: base + ".debug", executablePath: previous?.executablePath, format: c.format)
            var installedImage = false
            // The same two rules as `wants(_:)`: an image fills an empty executable role, and a
            // file replaces the stored one only with more debug information.
            if c.isImage && candidate.executablePath == nil {
                try install(c, at: base)
                candidate.executablePath = base
                installedImage = true
            }
            if let previous, previous.quality >= candidate.quality {
                var kept = previous
                kept.executablePath = candidate.executablePath
                if kept != previous { try writeEntry(kept, base: base) }
                let why = previous.quality == candidate.quality
                    ? "already stored" : "the stored \(previous.name) has more debug information"
                return .kept(kept, reason: why)
            }
            // An unstripped file fills both roles with the same bytes: one copy, two names.
            if installedImage {
                try hardLink(base, to: base + ".debug")
            } else {
                try install(c, at: base + ".debug")
            }
            try writeEntry(candidate, base: base)
            return previous == nil ? .stored(candidate) : .upgraded(candidate)
        }
    }

    /// What a file that is not ELF, Mach-O or an archive the store unpacks is, for the
    /// refusal: compressed archives are named, so nobody reads "not an ELF file" for a `.tar.gz`.
    static func describeNonDebug(_ file: RegularFile) -> String {
        let head = (try? file.read(at: 0, count: 6)) ?? []
        let unsupported = "is not unpacked (only zip and uncompressed tar archives are): extract it and add the folder"
        if head.starts(with: [0x1f, 0x8b]) { return "a gzip file (.tar.gz, .gz) \(unsupported)" }
        if head.starts(with: [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]) { return "an xz file (.tar.xz) \(unsupported)" }
        if head.starts(with: Array("BZh".utf8)) { return "a bzip2 file (.tar.bz2) \(unsupported)" }
        return "not a debug file (neither ELF, Mach-O, zip nor tar)"
    }

    /// True when `path` is a regular file (not a link to one) whose build-id or UUID is `id`:
    /// what the store put there, not something swapped in since.
    static func holds(_ path: String, id: BuildID) -> Bool {
        guard let file = try? RegularFile(path: path, followingLinks: false) else { return false }
        return identity(of: file) == id
    }

    /// The build-id of an ELF file, or the UUID of a thin Mach-O file.
    public static func identity(of file: RegularFile) -> BuildID? {
        switch ObjectFormat.of(file: file) {
        case .machO:
            guard let machO = try? MachOFile(file: file), machO.slices.count == 1 else { return nil }
            return machO.slices[0].uuid
        case .elf: return (try? ElfFile(file: file))?.buildID
        default: return nil
        }
    }

    private func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    private func makeDirectory(_ dir: String) throws(StoreError) {
        do throws(SystemCallError) { try PrivateFiles.makeDirectory(dir) } catch {
            throw .io(path: dir, reason: "cannot create directory: \(error.reason)")
        }
    }

    private func install(_ candidate: StoreCandidate, at destination: String) throws(StoreError) {
        let temp = destination + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            try candidate.write(to: temp)
        } catch {
            unlink(temp)
            throw error
        }
        try rename(temp, destination)
    }

    /// Gives `existing` a second name, atomically replacing whatever `destination` held.
    private func hardLink(_ existing: String, to destination: String) throws(StoreError) {
        let temp = destination + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard link(existing, temp) == 0 else {
            throw .io(path: destination, reason: "cannot link to \(existing): \(SystemCallError.reason(errno: errno))")
        }
        try rename(temp, destination)
    }

    private func writeEntry(_ entry: StoredDebugFile, base: String) throws(StoreError) {
        let temp = base + ".json.tmp-\(getpid())"
        guard let data = try? Self.encoder.encode(entry) else { throw .io(path: temp, reason: "cannot encode store metadata") }
        // A leftover of an earlier process with this pid; NewFile creates only new names.
        unlink(temp)
        do { try NewFile(path: temp).write(data) } catch {
            unlink(temp)
            throw error
        }
        try rename(temp, base + ".json")
    }

    private func rename(_ from: String, _ to: String) throws(StoreError) {
        if Foundation.rename(from, to) != 0 {
            let reason = SystemCallError.reason(errno: errno)
            unlink(from)
            throw .io(path: to, reason: "cannot rename into place: \(reason)")
        }
    }

    /// Runs `body` holding `id`'s entry lock, the one `add` and `remove` take: whoever builds
    /// the entry's symcache then sees a settled entry, and two builders take turns.
    public func withEntryLock<T>(buildID id: BuildID, _ body: () -> T) throws(StoreError) -> T {
        try withLock(base(id) + ".lock") { () throws(StoreError) in body() }
    }

    /// `body` under `id`'s entry lock if no one holds it now; nil at once when another process
    /// does (a symcache being built: the caller answers without it rather than wait).
    public func withEntryLockIfFree<T>(buildID id: BuildID, _ body: () -> T) throws(StoreError) -> T? {
        let lockPath = base(id) + ".lock"
        let lock: FileLock?
        do { lock = try FileLock.ifFree(exclusive: lockPath, followingLinks: false) } catch { throw .io(path: lockPath, reason: error.reason) }
        guard let lock else { return nil }
        defer { lock.release() }
        return body()
    }

    private func withLock<T>(_ lockPath: String, _ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        let lock: FileLock
        do { lock = try FileLock(exclusive: lockPath, followingLinks: false) } catch { throw .io(path: lockPath, reason: error.reason) }
        defer { lock.release() }
        return try body()
    }

    static var encoder: JSONEncoder { JSONStyle.document }

    static let decoder: JSONDecoder = {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .iso8601
        return d
    }()
}
