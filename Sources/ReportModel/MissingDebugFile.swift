/// A debug file a report needed and the store lacked: the build it is for and the image's name
/// as the report gives it. The one record of it: the worker's reply carries it, the database
/// keeps it (`missing_symbols`), the report page lists it, and `symbols missing` (CLI and API)
/// counts it. Its JSON is `{"buildId": "…", "imageName": "…"}`.
public struct MissingDebugFile: Sendable, Hashable, Codable {
    public var buildID: BuildID
    public var imageName: String?

    public init(buildID: BuildID, imageName: String?) {
        self.buildID = buildID
        self.imageName = imageName
    }

    enum CodingKeys: String, CodingKey {
        case buildID = "buildId"
        case imageName
    }

    /// The images of `report` whose debug files were missing, in report order, each named as
    /// the report names it.
    public static func all(in report: SymbolicatedReport) -> [MissingDebugFile] {
        report.missingBuildIds.map { id in
            MissingDebugFile(buildID: id, imageName: report.images.first { $0.id == id }?.name)
        }
    }
}
