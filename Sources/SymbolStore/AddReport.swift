import Foundation
import ReportModel

/// What adding files did, per file and in total: the `symbols add --json` document, the answer
/// of `POST /api/v1/symbols`, and what `symbols upload` reads back (docs/json.md).
public struct AddReport: Codable, Sendable {
    public var files: [AddedFile] = []
    /// Files a walk passed over: not debug files.
    public var skipped: [String] = []
    public var summary = AddSummary()
    /// Reports requeued because they lacked a build-id just stored.
    public var requeuedReportIds: [Int64] = []

    public init() {}

    /// Counts one walk result and keeps its line.
    @discardableResult
    public mutating func record(path: String, result: Result<AddOutcome, StoreError>) -> AddedFile {
        let line: AddedFile
        switch result {
        case .success(.stored(let e)):
            summary.stored += 1
            line = AddedFile(path: path, outcome: "stored", entry: e)
        case .success(.upgraded(let e)):
            summary.stored += 1
            line = AddedFile(path: path, outcome: "upgraded", entry: e)
        case .success(.kept(let e, let reason)):
            summary.alreadyPresent += 1
            line = AddedFile(path: path, outcome: "kept", entry: e, reason: reason)
        case .failure(let error):
            summary.refused += 1
            line = AddedFile(path: path, outcome: "refused", error: error.description)
        }
        files.append(line)
        return line
    }

    /// Build-ids of every file stored or kept: what reports waiting for them may now find.
    public var buildIds: [BuildID] { files.compactMap(\.buildId) }
}

/// The counts `symbols add` ends with.
public struct AddSummary: Codable, Sendable {
    public var stored = 0
    public var alreadyPresent = 0
    public var skipped = 0
    public var refused = 0

    public init() {}

    public var line: String {
        "stored \(stored), already present \(alreadyPresent), skipped \(skipped) (not debug files), refused \(refused)"
    }
}

/// One file of an `AddReport`.
public struct AddedFile: Codable, Sendable {
    public var path: String
    /// stored, upgraded, kept or refused.
    public var outcome: String
    public var buildId: BuildID?
    public var name: String?
    public var arch: Arch?
    public var reason: String?
    public var error: String?

    public init(path: String, outcome: String, entry: StoredDebugFile? = nil, reason: String? = nil, error: String? = nil) {
        self.path = path
        self.outcome = outcome
        buildId = entry?.buildId
        name = entry?.name
        arch = entry?.arch
        self.reason = reason
        self.error = error
    }
}
