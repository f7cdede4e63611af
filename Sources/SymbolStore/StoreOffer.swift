import Foundation
import ReportModel

/// What a client holds for one build-id, described as the store would store it, so the
/// server can say whether it wants the file before a byte is sent (`wants(_:)`).
public struct StoreOffer: Codable, Sendable, Hashable {
    public var buildId: BuildID
    public var hasDWARF: Bool
    public var hasSymbolTable: Bool
    /// Holds runnable code, so it could fill the executable role.
    public var executable: Bool

    public init(buildId: BuildID, hasDWARF: Bool, hasSymbolTable: Bool, executable: Bool) {
        self.buildId = buildId
        self.hasDWARF = hasDWARF
        self.hasSymbolTable = hasSymbolTable
        self.executable = executable
    }

    /// How much a lookup could get out of it, ranked as the store ranks stored files.
    public var quality: Int { StoredDebugFile.quality(hasDWARF: hasDWARF, hasSymbolTable: hasSymbolTable) }

    init(_ candidate: StoreCandidate) {
        self.init(
            buildId: candidate.id, hasDWARF: candidate.hasDWARF, hasSymbolTable: candidate.hasSymbolTable,
            executable: candidate.isImage)
    }
}

extension SymbolStoreDirectory {
    /// True when storing the file `offer` describes would change the store: nothing is stored
    /// for its build-id, it has more debug information than the stored file, or it is an image
    /// and the executable role is empty. The same rules `add` applies, read from the sidecar,
    /// so a client that uploads only what is wanted uploads nothing the second time.
    public func wants(_ offer: StoreOffer) -> Bool {
        let id = offer.buildId
        guard let entry = entry(buildID: id), debugFilePath(buildID: id) != nil else { return true }
        if offer.executable && (entry.executablePath == nil || executablePath(buildID: id) == nil) { return true }
        return offer.quality > entry.quality
    }
}
