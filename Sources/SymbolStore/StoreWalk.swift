import DebugInfo
import Foundation
import SystemCalls

/// One debug file found on disk (or in an archive on disk) and identified, not stored: what
/// `symbols upload` asks the server about.
public struct LocalDebugFile: Sendable {
    /// Where it was found (`dSYMs.zip/App.dSYM/Contents/Resources/DWARF/App` inside an archive).
    public var path: String
    /// The file to send to store it: itself, or the archive on disk it came out of.
    public var upload: String
    /// One per slice (one for an ELF file).
    public var offers: [StoreOffer]
}

extension SymbolStoreDirectory {
    /// Each file a walk met, with what became of it.
    public typealias WalkResults<T> = [(path: String, result: Result<T, StoreError>)]
    typealias Results = WalkResults<AddOutcome>

    /// What a walk does with each debug file it meets: store it or only identify it. `archive`
    /// is the archive on disk the file came out of, nil for a file on disk.
    typealias Visit<T> = (_ file: RegularFile, _ archive: String?) -> WalkResults<T>

    /// Adds `path`: a file, a directory walked for files (inside a `.dSYM` bundle only its
    /// `Contents/Resources/DWARF` files), or a zip or tar archive of those, reporting each
    /// stored entry or refusal and continuing past refusals. A fat file reports one result per slice.
    ///
    /// `path` itself is followed if it is a link, as `cp` would; inside it, links are refused,
    /// never followed, and so are FIFOs, devices and sockets. Every file is read from the
    /// descriptor that was checked to be a regular file.
    public func addTree(path: String) -> WalkResults<AddOutcome> {
        var skipped: [String] = []
        return addTree(path: path, skipped: &skipped)
    }

    /// `addTree(path:)`, also listing in `skipped` the files a walk passed over because they
    /// are not debug files (neither ELF, Mach-O nor an archive; a dSYM bundle's Info.plist): a
    /// build folder holds many. A file named by `path` itself is never skipped: it is stored or refused.
    public func addTree(path: String, skipped: inout [String]) -> WalkResults<AddOutcome> {
        Self.walkTree(path: path, limits: limits, skipped: &skipped) { file, _ in storeAll(file, source: nil) }
    }

    /// Stores a file received over the network (`file.path` is the name the client gave it),
    /// exactly as `addTree` stores a file named on the command line: a debug file, or an
    /// archive unpacked and walked. Sidecars record `upload: NAME` as the source.
    public func addReceived(_ file: RegularFile, skipped: inout [String]) -> WalkResults<AddOutcome> {
        Self.addOne(file, archive: nil, limits: limits, skipped: &skipped, named: true) { file, _ in
            storeAll(file, source: "upload: " + file.path)
        }
    }

    /// Walks `path` as `addTree` does and identifies every debug file without storing
    /// anything: each file's build-ids and what it holds, and the file to send to store it.
    /// Archives are unpacked under `limits`.
    public static func identifyTree(path: String, limits: StoreLimits, skipped: inout [String]) -> WalkResults<LocalDebugFile> {
        walkTree(path: path, limits: limits, skipped: &skipped) { file, archive in
            do throws(StoreError) {
                let offers = try StoreCandidate.identify(file: file).map(StoreOffer.init)
                return [(file.path, .success(LocalDebugFile(path: file.path, upload: archive ?? file.path, offers: offers)))]
            } catch {
                return [(file.path, .failure(error))]
            }
        }
    }

    /// Stores every slice of `file`, labelled by arch when there are several.
    private func storeAll(_ file: RegularFile, source: String?) -> Results {
        let label = file.path
        do {
            let outcomes = try addFile(file, source: source)
            let many = outcomes.count > 1
            return outcomes.map { outcome in
                (many ? "\(label) (\(outcome.entry.arch))" : label, .success(outcome))
            }
        } catch {
            return [(label, .failure(error))]
        }
    }

    static func walkTree<T>(path: String, limits: StoreLimits, skipped: inout [String], visit: Visit<T>) -> WalkResults<T> {
        guard let resolved = realpath(path, nil) else {
            return [(path, .failure(.rejected(.unreadable(path: path, reason: SystemCallError.reason(errno: errno)))))]
        }
        let real = String(cString: resolved)
        free(resolved)
        let fd = Foundation.open(real, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            return [(path, .failure(.rejected(.unreadable(path: path, reason: RegularFile.openFailure(errno)))))]
        }
        let st: stat
        do { st = try SystemCall.status(of: fd, path: path) } catch {
            close(fd)
            return [(path, .failure(.rejected(.unreadable(path: path, reason: error.reason))))]
        }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            defer { close(fd) }
            var results: WalkResults<T> = []
            walk(
                directory: fd, label: path, relative: (real as NSString).lastPathComponent, archive: nil, limits: limits,
                into: &results, skipped: &skipped, visit: visit)
            return results
        }
        guard (st.st_mode & S_IFMT) == S_IFREG, let file = try? RegularFile(adopting: fd, path: path) else {
            close(fd)
            return [(path, .failure(.notRegularFile(path: path, kind: RegularFile.kind(mode: st.st_mode))))]
        }
        return addOne(file, archive: nil, limits: limits, skipped: &skipped, named: true, visit: visit)
    }

    /// Deeper than any real bundle; a limit keeps open descriptors bounded.
    static let maximumDepth = 64

    /// Walks the directory `fd` has open, in name order, through descriptors only: a name
    /// swapped for a link during the walk is refused by `O_NOFOLLOW`, not followed.
    private static func walk<T>(
        directory fd: Int32, label: String, relative: String, archive: String?, limits: StoreLimits, into results: inout WalkResults<T>,
        skipped: inout [String], visit: Visit<T>
    ) {
        DirectoryWalk.walk(directory: fd, label: label, maximumDepth: Self.maximumDepth) { event in
            switch event {
            case .failed(let path, let error):
                // An unopenable directory reads as `open` would say it ("is a symbolic link, not followed").
                let reason = error.call == "openat" ? RegularFile.openFailure(error.errno) : error.reason
                results.append((path, .failure(.rejected(.unreadable(path: path, reason: reason)))))
            case .tooDeep(let path):
                results.append((path, .failure(.tooDeep(path: path, limit: Self.maximumDepth))))
            case .entry(let entry):
                let path = entry.path
                guard Self.mayHoldDebugInfo(relativePath: ([relative] + entry.components).joined(separator: "/")) else {
                    skipped.append(path)
                    return
                }
                if entry.kind == .symbolicLink {
                    results.append((path, .failure(.symbolicLink(path: path))))
                    return
                }
                guard entry.kind == .regular else {
                    results.append((path, .failure(.notRegularFile(path: path, kind: entry.kind.description))))
                    return
                }
                let opened: Int32
                do throws(SystemCallError) { opened = try entry.open(flags: O_RDONLY | O_NONBLOCK) } catch {
                    results.append((path, .failure(.rejected(.unreadable(path: path, reason: RegularFile.openFailure(error.errno))))))
                    return
                }
                do throws(RegularFileError) {
                    results += addOne(
                        try RegularFile(adopting: opened, path: path), archive: archive, limits: limits, skipped: &skipped, named: false,
                        visit: visit)
                } catch {
                    // The name was swapped between fstatat and openat.
                    results.append((path, .failure(error.kind.map { .notRegularFile(path: path, kind: $0) }
                        ?? .rejected(.unreadable(path: path, reason: error.reason)))))
                }
            }
        }
    }

    /// Files a directory walk skips: a dSYM bundle's Info.plist and relocation maps (its
    /// DWARF is under Contents/Resources/DWARF), and the AppleDouble metadata macOS puts in zips.
    static func mayHoldDebugInfo(relativePath: String) -> Bool {
        let parts = relativePath.split(separator: "/")
        if parts.contains("__MACOSX") || parts.last?.hasPrefix("._") == true { return false }
        guard let bundle = parts.lastIndex(where: { $0.hasSuffix(".dSYM") }) else { return true }
        let inside = parts[(bundle + 1)...]
        return inside.count == 4 && inside.prefix(3).elementsEqual(["Contents", "Resources", "DWARF"])
    }

    /// One regular file: visited, or unpacked and walked if it is a zip or tar archive
    /// (`archive` names the archive it came out of: archives in archives are not unpacked).
    /// A file that is not a debug file is refused when it was `named`, else skipped.
    private static func addOne<T>(
        _ file: RegularFile, archive: String?, limits: StoreLimits, skipped: inout [String], named: Bool, visit: Visit<T>
    ) -> WalkResults<T> {
        let label = file.path
        let format = ObjectFormat.of(file: file)
        let isTar = format == .other && TarArchive.recognises(file)
        if format == .other && !isTar {
            guard named else {
                skipped.append(label)
                return []
            }
            return [(label, .failure(.notDebugFile(path: label, what: Self.describeNonDebug(file))))]
        }
        if format == .zip || isTar {
            if let archive { return [(label, .failure(.nestedArchive(path: label, archive: archive)))] }
            let scratch: String
            do { scratch = isTar ? try TarArchive.extract(file, limits: limits) : try ZipArchive.extract(file, limits: limits) } catch { return [(label, .failure(error))] }
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            let fd = Foundation.open(scratch, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else {
                return [(label, .failure(.archive(path: label, reason: "cannot open the unpacked copy: \(SystemCallError.reason(errno: errno))")))]
            }
            defer { close(fd) }
            var results: WalkResults<T> = []
            walk(
                directory: fd, label: label, relative: (scratch as NSString).lastPathComponent, archive: label, limits: limits,
                into: &results, skipped: &skipped, visit: visit)
            return results
        }
        return visit(file, archive)
    }
}
