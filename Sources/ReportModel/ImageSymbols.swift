/// Why an image's frames are, or are not, symbolicated: the one answer to "why is this frame
/// raw?". Each processed report records one per image (`SymbolicatedReport.imageSymbols`).
public enum SymbolStatus: String, Codable, Sendable, Hashable, CaseIterable {
    /// A debug file with line tables (DWARF) answered.
    case ok
    /// The debug file has symbols but no line tables (a symbol table, MiniDebugInfo or only
    /// dynamic symbols): functions without file:line.
    case symbolTableOnly
    /// No store holds a debug file for the build id (`searched` names the stores).
    case notFound
    /// The file stored for the build id is of another architecture than the report's image.
    case wrongArchitecture
    /// A file is stored for the build id but cannot be used (`detail` says why: damaged,
    /// replaced by another build's file, a compression this build cannot read, …).
    case unreadable
    /// The report carried no build id or UUID for the image, so nothing could be looked up.
    case noIdentifier
    /// No debug file, but the device had already named every frame in the image.
    case deviceSymbolsOnly
    /// No frame falls in the image: never looked up (an Apple report lists hundreds).
    case unused

    /// Fixed by storing a debug file (with line tables) for the image's build id: what
    /// `missing_symbols` lists and an upload requeues.
    public var isFixedByUpload: Bool {
        switch self {
        case .notFound, .wrongArchitecture, .unreadable, .symbolTableOnly: true
        case .ok, .noIdentifier, .deviceSymbolsOnly, .unused: false
        }
    }

    /// A few words for people (the report page, `report` text).
    public var phrase: String {
        switch self {
        case .ok: "ok"
        case .symbolTableOnly: "symbol table only"
        case .notFound: "not found"
        case .wrongArchitecture: "wrong architecture"
        case .unreadable: "unreadable"
        case .noIdentifier: "no identifier"
        case .deviceSymbolsOnly: "device symbols only"
        case .unused: "unused"
        }
    }
}

/// The symbol status of one image of a processed report. Its JSON is
/// `{"image": <index into images>, "name": "…", "buildId": "…", "status": "notFound",
/// "detail": "one line why", "searched": ["symbol store"]}`; `buildId`, `detail` and
/// `searched` are left out when there is nothing to say. An `unused` entry is only
/// `{"image": …, "status": "unused"}`: an Apple report lists hundreds of images no frame falls
/// in, and their names and ids, already in `images`, made its stored result half again larger.
public struct ImageSymbols: Codable, Sendable, Hashable {
    /// Index of the image in `SymbolicatedReport.images`.
    public var image: Int
    /// The image's name as the report gives it (untrusted: escape it where it is printed); nil
    /// on `unused` entries.
    public var name: String?
    public var buildId: BuildID?
    public var status: SymbolStatus
    /// One line saying why (nil for `unused`).
    public var detail: String?
    /// The stores searched, by role (`notFound`, and `deviceSymbolsOnly` with a build id).
    public var searched: [String]?

    public init(image: Int, name: String?, buildId: BuildID?, status: SymbolStatus, detail: String? = nil, searched: [String]? = nil) {
        self.image = image
        self.name = name
        self.buildId = buildId
        self.status = status
        self.detail = detail
        self.searched = searched
    }

    /// The upload to `serverURL`, before the files it sends: the one spelling of it.
    public static func uploadCommand(serverURL: String) -> String {
        "STACKLINE_TOKEN=<a symbols token> stackline symbols upload --server \(serverURL)"
    }

    /// What fixes the image's status, as a command or instruction for `serverURL` (nil: nothing
    /// to fix). The one wording the report page and `report` text share.
    public func fix(serverURL: String) -> String? {
        let name = self.name ?? "image"
        let upload = Self.uploadCommand(serverURL: serverURL)
        switch status {
        case .ok, .unused: return nil
        case .notFound:
            return "\(upload) path/to/\(name).debug  (any file with build id \(buildId?.hex ?? "?"), or the build folder)"
        case .symbolTableOnly:
            return "\(upload) path/to/\(name).debug  (the unstripped file or its --only-keep-debug companion, with line tables)"
        case .wrongArchitecture, .unreadable:
            // The store keeps a file as good as the one offered, so the unusable one goes first.
            let id = buildId?.hex ?? "?"
            return "stackline symbols rm \(id)  (on the server), then \(upload) path/to/\(name).debug  (the right file for build id \(id))"
        case .noIdentifier:
            return "have the SDK send the image's GNU build id (ELF) or LC_UUID (Mach-O) in its image list"
        case .deviceSymbolsOnly:
            return buildId == nil
                ? "have the SDK send the image's GNU build id (ELF) or LC_UUID (Mach-O) to get file:line"
                : "\(upload) path/to/\(name).debug  (for file:line instead of the device's names)"
        }
    }
}
