import DebugInfo
import Foundation

/// Why a file was not stored. Each case reads as one line.
public enum StoreError: Error, CustomStringConvertible {
    case rejected(ElfError)
    case noBuildID(path: String)
    case io(path: String, reason: String)
    case notFound(buildID: String)
    case invalidBuildID(String)

    public var description: String {
        switch self {
        case .rejected(let e): return e.description
        case .noBuildID(let p): return "\(p): ELF file has no GNU build-id note (link with -Wl,--build-id)"
        case .io(let p, let r): return "\(p): \(r)"
        case .notFound(let id): return "no debug file for build-id \(id) in the store"
        case .invalidBuildID(let id): return "not a build-id (expected hex digits): \(id)"
        }
    }
}

/// What the store holds for one build-id.
public struct StoredDebugFile: Codable, Sendable, Equatable {
    public var buildId: String
    /// Base name of the file that was added.
    public var name: String
    public var arch: String
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

    /// How much a lookup can get out of it: DWARF beats a symbol table beats dynamic symbols.
    var quality: Int { (hasDWARF ? 2 : 0) + (hasSymbolTable ? 1 : 0) }
}

/// What `add` did with one file.
public enum AddOutcome: Sendable, Equatable {
    case stored(StoredDebugFile)
    /// A better file replaced the one stored before.
    case upgraded(StoredDebugFile)
    /// The store already had this file or a better one; only the executable role may have been filled.
    case kept(StoredDebugFile, reason: String)
}

/// The debug-file store: a directory in the `.build-id/ab/cdef….debug` layout that gdb,
/// eu-stack, `llvm-symbolizer --debug-file-directory` and debuginfod clients read, plus a
/// `.json` sidecar per build-id so the store describes itself without a database.
public struct SymbolStoreDirectory: Sendable {
    public let root: String

    public init(root: String) { self.root = root }

    /// Resolves `--symbols`, then `STACKLINE_SYMBOLS`, then `./symbols`.
    public static func resolve(option: String?) -> SymbolStoreDirectory {
        if let option { return SymbolStoreDirectory(root: option) }
        if let env = ProcessInfo.processInfo.environment["STACKLINE_SYMBOLS"], !env.isEmpty {
            return SymbolStoreDirectory(root: env)
        }
        return SymbolStoreDirectory(root: "symbols")
    }

    private var buildIDRoot: String { root + "/.build-id" }

    private func base(_ id: String) -> String {
        let prefix = id.prefix(2)
        return "\(buildIDRoot)/\(prefix)/\(id.dropFirst(2))"
    }

    public static func normalize(_ buildID: String) throws(StoreError) -> String {
        let id = buildID.lowercased().filter { $0 != "-" }
        guard id.count >= 4, id.allSatisfy(\.isHexDigit) else { throw .invalidBuildID(buildID) }
        return id
    }

    // MARK: Lookup

    public func entry(buildID: String) -> StoredDebugFile? {
        guard let id = try? Self.normalize(buildID),
            let data = FileManager.default.contents(atPath: base(id) + ".json")
        else { return nil }
        return try? Self.decoder.decode(StoredDebugFile.self, from: data)
    }

    /// Path of the debug file stored for `buildID`, if any.
    public func debugFilePath(buildID: String) -> String? {
        guard let id = try? Self.normalize(buildID) else { return nil }
        let path = base(id) + ".debug"
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// Path of the executable image stored for `buildID`, if any.
    public func executablePath(buildID: String) -> String? {
        guard let id = try? Self.normalize(buildID) else { return nil }
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

    public func remove(buildID: String) throws(StoreError) -> StoredDebugFile {
        let id = try Self.normalize(buildID)
        guard let entry = entry(buildID: id) else { throw .notFound(buildID: id) }
        for suffix in [".json", ".debug", ""] {
            let path = base(id) + suffix
            if unlink(path) != 0 && errno != ENOENT {
                throw .io(path: path, reason: String(cString: strerror(errno)))
            }
        }
        return entry
    }

    // MARK: Adding

    /// Validates and stores one ELF file. Never leaves a partly written file: content goes to
    /// a temporary file that is renamed into place, under a per-build-id lock.
    public func add(path: String) throws(StoreError) -> AddOutcome {
        let elf: ElfFile
        do {
            elf = try ElfFile(path: path)
            // Reads every unit header: a file libdw cannot walk is refused now, not at crash time.
            _ = try DebugFile(elf: elf)
        } catch {
            throw .rejected(error)
        }
        guard let id = elf.buildID else { throw .noBuildID(path: path) }
        let base = self.base(id)
        try makeDirectory((base as NSString).deletingLastPathComponent)
        return try withLock(base + ".lock") { () throws(StoreError) -> AddOutcome in
            let previous = entry(buildID: id)
            var candidate = StoredDebugFile(
                buildId: id, name: (path as NSString).lastPathComponent, arch: elf.architecture,
                kind: elf.kindDescription, size: elf.fileSize, hasDWARF: elf.hasDWARF,
                hasSymbolTable: elf.hasSymbolTable, addedAt: Date(), source: absolute(path),
                path: base + ".debug", executablePath: previous?.executablePath)
            let isImage = !elf.isDebugOnly && !elf.loadSegments.isEmpty
            if isImage && candidate.executablePath == nil {
                try install(path, at: base)
                candidate.executablePath = base
            }
            if let previous, previous.quality >= candidate.quality {
                var kept = previous
                kept.executablePath = candidate.executablePath
                if kept != previous { try writeEntry(kept, base: base) }
                let why = previous.quality == candidate.quality
                    ? "already stored" : "the stored \(previous.name) has more debug information"
                return .kept(kept, reason: why)
            }
            try install(path, at: base + ".debug")
            try writeEntry(candidate, base: base)
            return previous == nil ? .stored(candidate) : .upgraded(candidate)
        }
    }

    /// Adds every regular file below `path` (or `path` itself), reporting each and continuing
    /// past refusals.
    public func addTree(path: String) -> [(path: String, result: Result<AddOutcome, StoreError>)] {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else {
            return [(path, .failure(.rejected(.unreadable(path: path, reason: "no such file or directory"))))]
        }
        guard isDir.boolValue else { return [(path, Result { () throws(StoreError) in try add(path: path) })] }
        var results: [(path: String, result: Result<AddOutcome, StoreError>)] = []
        let walker = FileManager.default.enumerator(atPath: path)
        var files: [String] = []
        while let rel = walker?.nextObject() as? String {
            let full = path + "/" + rel
            var dir: ObjCBool = false
            if FileManager.default.fileExists(atPath: full, isDirectory: &dir), !dir.boolValue { files.append(full) }
        }
        for file in files.sorted() {
            results.append((file, Result { () throws(StoreError) in try add(path: file) }))
        }
        return results
    }

    private func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    private func makeDirectory(_ dir: String) throws(StoreError) {
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        } catch {
            throw .io(path: dir, reason: "cannot create directory: \(error.localizedDescription)")
        }
    }

    private func install(_ source: String, at destination: String) throws(StoreError) {
        let temp = destination + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            try FileManager.default.copyItem(atPath: source, toPath: temp)
        } catch {
            unlink(temp)
            throw .io(path: source, reason: "cannot copy into the store: \(error.localizedDescription)")
        }
        try rename(temp, destination)
    }

    private func writeEntry(_ entry: StoredDebugFile, base: String) throws(StoreError) {
        let temp = base + ".json.tmp-\(getpid())"
        guard let data = try? Self.encoder.encode(entry),
            FileManager.default.createFile(atPath: temp, contents: data)
        else { throw .io(path: temp, reason: "cannot write store metadata") }
        try rename(temp, base + ".json")
    }

    private func rename(_ from: String, _ to: String) throws(StoreError) {
        if Foundation.rename(from, to) != 0 {
            let reason = String(cString: strerror(errno))
            unlink(from)
            throw .io(path: to, reason: "cannot rename into place: \(reason)")
        }
    }

    private func withLock<T>(_ lockPath: String, _ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io(path: lockPath, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        flock(fd, LOCK_EX)
        defer { flock(fd, LOCK_UN) }
        return try body()
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys]
        e.dateEncodingStrategy = .iso8601
        return e
    }()

    static let decoder: JSONDecoder = {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .iso8601
        return d
    }()
}
