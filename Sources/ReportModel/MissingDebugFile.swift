/// A debug file a report needed and could not use: the build it is for, the image's name as
/// the report gives it, and why (`notFound`, `unreadable`, `wrongArchitecture` or
/// `symbolTableOnly`: the statuses an upload fixes, `SymbolStatus.isFixedByUpload`). The one record of it: the worker's reply
/// carries it, the database keeps it (`missing_symbols`), the report page lists it, and
/// `symbols missing` (CLI and API) counts it. Its JSON is
/// `{"buildId": "…", "imageName": "…", "status": "notFound", "detail": "…"}`; `status` reads as
/// `notFound` when absent (written before it existed).
public struct MissingDebugFile: Sendable, Hashable, Codable {
    public var buildID: BuildID
    public var imageName: String?
    public var status: SymbolStatus
    /// One line why, as the report's `ImageSymbols.detail` says it.
    public var detail: String?

    public init(buildID: BuildID, imageName: String?, status: SymbolStatus = .notFound, detail: String? = nil) {
        self.buildID = buildID
        self.imageName = imageName
        self.status = status
        self.detail = detail
    }

    enum CodingKeys: String, CodingKey {
        case buildID = "buildId"
        case imageName, status, detail
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        buildID = try c.decode(BuildID.self, forKey: .buildID)
        imageName = try c.decodeIfPresent(String.self, forKey: .imageName)
        status = try c.decodeIfPresent(SymbolStatus.self, forKey: .status) ?? .notFound
        detail = try c.decodeIfPresent(String.self, forKey: .detail)
    }

    /// The debug files of `report` an upload would fix, each build id once: first the ids its
    /// frames lacked (`missingBuildIds`, in that order), then the unreadable ones, each with the
    /// status and reason its `imageSymbols` gives (`notFound` for a report stored before them).
    public static func all(in report: SymbolicatedReport) -> [MissingDebugFile] {
        let symbols = report.imageSymbols ?? []
        func entry(_ id: BuildID) -> ImageSymbols? {
            symbols.first { $0.buildId == id && $0.status != .unused }
        }
        var files = report.missingBuildIds.map { id in
            let known = entry(id)
            // An image the device named is still missing its file: the upload gives file:line.
            let status = known.map { $0.status.isFixedByUpload ? $0.status : .notFound } ?? .notFound
            return MissingDebugFile(
                buildID: id, imageName: known?.name ?? report.images.first { $0.id == id }?.name, status: status,
                detail: known?.status == status ? known?.detail : nil)
        }
        for s in symbols where s.status.isFixedByUpload {
            guard let id = s.buildId, !files.contains(where: { $0.buildID == id }) else { continue }
            files.append(MissingDebugFile(buildID: id, imageName: s.name, status: s.status, detail: s.detail))
        }
        return files
    }
}
