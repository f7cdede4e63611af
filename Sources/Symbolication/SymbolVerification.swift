import DebugInfo
import Foundation
import ReportModel
import SymbolStore

/// What `symbols verify` found for one image an app ships.
public enum ImageSymbolsStatus: String, Codable, Sendable, CaseIterable {
    /// A debug file with line tables is there, and a few of its own functions came back from
    /// the normal lookup path with their names and a file:line.
    case ok
    /// No debug file for the image's id where it looked.
    case missing
    /// A debug file is there, but without DWARF: frames get a function name, never a file:line.
    case symbolTableOnly
    /// The image has no GNU build-id or `LC_UUID`: no report can name a debug file for it.
    case noIdentifier
    /// The image, or the debug file stored for it, cannot be read (the detail says why).
    case unreadable
    /// The debug file is there with DWARF, but a lookup of one of its own functions came back
    /// without that function's name or without a file:line.
    case answersWrong
}

/// One lookup that proves a debug file answers: a function of its own symbol table, and what
/// the lookup of its first address said.
public struct SymbolProof: Codable, Sendable, Equatable {
    public var symbol: String
    public var address: Address
    /// The outermost level's name, demangled.
    public var function: String?
    /// The innermost level's file and line (the line table's row).
    public var file: String?
    public var line: Int?
}

/// One image (one slice of a fat file) of a build and what its debug file came to.
public struct VerifiedImage: Codable, Sendable, Equatable {
    /// Where it is inside the path checked (`Payload/App.app/App`).
    public var image: String
    public var arch: Arch?
    /// GNU build-id or Mach-O UUID.
    public var id: BuildID?
    /// `elf` or `mach-o`; nil when the file could not be read.
    public var format: String?
    public var status: ImageSymbolsStatus
    /// Why, for every status but `ok`: where it looked, what the file lacks, what answered wrong.
    public var detail: String?
    /// A file inside the path checked that carries DWARF for this id (the file to add), when
    /// the status is not `ok`.
    public var debugFileInBuild: String?
    /// The command that fixes it, when there is one.
    public var fix: String?
    /// The lookups that were made (all of them for `ok`, up to the wrong one for `answersWrong`).
    public var proof: [SymbolProof] = []
}

/// The `symbols verify --json` document.
public struct SymbolsVerification: Codable, Sendable {
    /// The path checked, as given.
    public var path: String
    /// Where debug files were looked for: `the store DIR` or `the server URL`.
    public var lookedIn: String
    public var images: [VerifiedImage]
    /// Images per status (every status, zeros included).
    public var counts: [String: Int]
    /// True when every image is `ok`.
    public var ok: Bool

    public init(path: String, lookedIn: String, images: [VerifiedImage]) {
        self.path = path
        self.lookedIn = lookedIn
        self.images = images
        counts = Dictionary(uniqueKeysWithValues: ImageSymbolsStatus.allCases.map { status in
            (status.rawValue, images.filter { $0.status == status }.count)
        })
        ok = !images.isEmpty && images.allSatisfy { $0.status == .ok }
    }
}

/// Checks that every image a build ships has a debug file with line tables in `stores`, and
/// proves each one answers: a few functions of the debug file's own symbol table are looked up
/// through `OpenDebugFiles` and `AddressResolver` (the symcache when there is one, as a worker
/// would) and must come back with that function's name and a file:line.
public struct SymbolVerifier {
    /// Searched in order, as a worker searches them.
    public let stores: [SymbolStoreDirectory]
    /// Why an id is not in `stores`, when the caller knows better than "not there" (a server's answer).
    public var notFound: [BuildID: String]
    /// Functions looked up per debug file.
    public var proofs: Int
    /// Proofs go through symcaches, built where missing, as a worker's lookups do; false for
    /// a scratch store that is removed afterwards, where a build would be wasted.
    public var usesSymbolCaches = true

    public init(stores: [SymbolStoreDirectory], notFound: [BuildID: String] = [:], proofs: Int = 3) {
        self.stores = stores
        self.notFound = notFound
        self.proofs = max(1, proofs)
    }

    /// The ids of the images in `build`, in order, each once: what must be in the stores.
    public static func imageIDs(in build: SymbolStoreDirectory.WalkResults<BuildFile>) -> [BuildID] {
        var seen: Set<BuildID> = []
        return build.flatMap { (try? $0.result.get())?.slices ?? [] }
            .filter(\.isImage).compactMap(\.id).filter { seen.insert($0).inserted }
    }

    /// One entry per image slice of `build` (a walk of `root`), and one per file the walk
    /// could not read (links inside a bundle are passed over: their targets are walked).
    public func verify(_ build: SymbolStoreDirectory.WalkResults<BuildFile>, root: String) -> [VerifiedImage] {
        // Files in the build that would fix an id: the first with DWARF.
        var carriers: [BuildID: String] = [:]
        for case .success(let file) in build.map({ $0.result }) {
            for slice in file.slices where slice.hasDWARF {
                if let id = slice.id, carriers[id] == nil { carriers[id] = file.upload }
            }
        }
        let files = OpenDebugFiles(stores: stores, capacity: 4, usesSymbolCaches: usesSymbolCaches)
        var verdicts: [BuildID: Verdict] = [:]
        var images: [VerifiedImage] = []
        for (path, result) in build {
            let file: BuildFile
            switch result {
            case .failure(.symbolicLink):
                continue
            case .failure(let error):
                images.append(VerifiedImage(image: Self.relative(path, root: root), status: .unreadable, detail: error.description))
                continue
            case .success(let found):
                file = found
            }
            for slice in file.slices where slice.isImage {
                var image = VerifiedImage(
                    image: Self.relative(file.path, root: root), arch: slice.arch, id: slice.id, format: slice.format, status: .ok)
                guard let id = slice.id else {
                    image.status = .noIdentifier
                    image.detail = slice.format == "elf"
                        ? "no GNU build-id note: link with -Wl,--build-id so reports name the debug file"
                        : "the \(slice.arch) slice has no LC_UUID: link without -no_uuid so reports name the dSYM"
                    images.append(image)
                    continue
                }
                let verdict = verdicts[id] ?? check(id, files)
                verdicts[id] = verdict
                image.status = verdict.status
                image.detail = verdict.detail
                image.proof = verdict.proof
                if verdict.status != .ok { image.debugFileInBuild = carriers[id] }
                images.append(image)
            }
        }
        return images
    }

    private struct Verdict {
        var status: ImageSymbolsStatus
        var detail: String?
        var proof: [SymbolProof] = []
    }

    private func check(_ id: BuildID, _ files: OpenDebugFiles) -> Verdict {
        let file: DebugFile
        do throws(LookupError) { file = try files.file(buildID: id) } catch {
            if case .missingDebugFile = error {
                let looked = stores.map { $0.root + "/" + SymbolStoreDirectory.layoutPath(id, role: .debugInfo) }
                return Verdict(status: .missing, detail: notFound[id] ?? "no debug file for \(id): looked for \(looked.joined(separator: ", "))")
            }
            return Verdict(status: .unreadable, detail: error.description)
        }
        guard file.elf.hasDWARF else {
            let why = file.elf.dwarfAbsence.map { " (\($0))" } ?? ""
            let what = file.symbolCount > 0 ? "a symbol table (\(file.symbolCount) symbols)" : "no symbol table either"
            return Verdict(status: .symbolTableOnly, detail: "the debug file for \(id) has no DWARF line tables\(why), only \(what): frames get names, no file:line")
        }
        let described = file.symbolsDescribedByDWARF
        guard !described.isEmpty else {
            return Verdict(status: .answersWrong, detail: "the DWARF of \(id)'s debug file describes none of its \(file.symbolCount) symbols")
        }
        let source: LookupSource
        do throws(LookupError) { source = try files.source(buildID: id) } catch {
            return Verdict(status: .unreadable, detail: error.description)
        }
        let resolver = AddressResolver(source: source)
        var proof: [SymbolProof] = []
        for symbol in Self.spread(described, count: proofs) {
            let levels = resolver.resolve(symbol.address, kind: .pc)
            let innermost = levels.first
            proof.append(SymbolProof(
                symbol: symbol.name, address: Address(symbol.address), function: levels.last?.function,
                file: innermost?.file, line: innermost?.line))
            let named = levels.last?.symbol == symbol.name
            let located = innermost.map { !$0.noLineInfo && $0.file != nil && ($0.line ?? 0) > 0 } ?? false
            if !named || !located {
                let answer = innermost.map { level in
                    "\(level.symbol ?? "no name") at \(level.file ?? "no file"):\(level.line ?? 0)"
                } ?? "nothing"
                return Verdict(
                    status: .answersWrong,
                    detail: "a lookup of \(symbol.name) at \(Address(symbol.address)) in \(id)'s debug file answered \(answer)", proof: proof)
            }
        }
        return Verdict(status: .ok, proof: proof)
    }

    /// Up to `count` items spread over `items`: the first, the last and evenly between.
    static func spread<T>(_ items: [T], count: Int) -> [T] {
        guard items.count > count else { return items }
        guard count > 1 else { return [items[0]] }
        let last = items.count - 1
        var indexes: [Int] = []
        for i in 0..<count {
            let index = i * last / (count - 1)
            if indexes.last != index { indexes.append(index) }
        }
        return indexes.map { items[$0] }
    }

    /// `label` (a walk's path) relative to `root`; the file's own name when `root` is that file.
    static func relative(_ label: String, root: String) -> String {
        if label == root { return (root as NSString).lastPathComponent }
        if label.hasPrefix(root + "/") { return String(label.dropFirst(root.count + 1)) }
        return label
    }
}
