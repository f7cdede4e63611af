import DebugInfo
import Foundation
import Intake
import Presentation
import ReportModel
import ReportQuery
import Storage
import SymbolStore
import SystemCalls

// The collaborators `ServerDependencies` is built from. Each is a protocol so a test can build
// the router over what it chooses; `stackline serve` and ServerTests both pass the real types
// (Collaborators/RealCollaborators.swift), ServerTests over a temporary directory. The synchronous requirements
// block (SQLite, disk): routes call them inside `deps.blocking.run`, which BlockingWorkTests checks.

/// Every read and write a route makes in the database.
public protocol ServerQueries: Sendable {
    /// The tokens the authentication middleware and the web session check.
    var tokens: TokenStore { get }
    func checkWritable() throws
    func stateCounts() throws -> [JobState: Int]
    func jobStatus(reportId: Int64) throws -> JobStatus?
    func states(reportIds: [Int64]) throws -> [Int64: JobState]
    func result(reportId: Int64) throws -> StoredResult?
    func report(id: Int64) throws -> StoredReport?
    /// Who report `id` came from: its SDK meta's device, OS, user and session, else its own.
    func reportOrigin(id: Int64) throws -> ReportOrigin?
    func groups(_ filter: GroupFilter) throws -> [GroupSummary]
    /// A group by fingerprint or unique prefix, with its `latest` reports.
    func group(fingerprint prefix: String, latest: Int) throws -> GroupDetail?
    /// The group a stored result was filed under, nil when it was not grouped.
    func group(of result: StoredResult) -> GroupSummary?
    func dailyCounts(fingerprints: [String], days: Int, now: Int64) throws -> [String: [Int]]
    func appVersionCounts(app: String?, kind: ReportKind) throws -> [String: Int]
    func firstVersion(fingerprint: String) throws -> String?
    func namespace(_ name: String) throws -> StoredNamespace?
    /// Requeues the reports that lacked `buildIds`; their ids.
    func requeueReports(missing buildIds: [BuildID]) throws -> [Int64]
    /// Build ids processed reports needed that the store still lacks (`symbols missing`).
    func missingDebugFiles() throws -> [MissingSymbolSummary]
    /// What each symbol source last said about each of `buildIds` (`symbol_source_answers`).
    func sourceAnswers(buildIds: [BuildID]) throws -> [BuildID: [SymbolSourceAnswer]]
    /// Release health per app version (`stackline releases`).
    func releaseHealth(app: String?, namespace: String?) throws -> [ReleaseCounts]
    /// The whole fingerprint a prefix names, without reading the group (`GroupQueryError` when several).
    func groupFingerprint(prefix: String) throws -> String?
    /// Triage (docs/triage.md): whole fingerprints; each write records its history entry.
    func groupHistory(fingerprint: String, limit: Int) throws -> [GroupHistoryEntry]
    func changeGroupState(fingerprint: String, _ change: GroupStateChange, actor: String, note: String?) throws -> GroupTriage
    func assignGroup(fingerprint: String, to assignee: String?, actor: String, note: String?) throws -> GroupTriage
    func commentOnGroup(fingerprint: String, text: String, actor: String) throws -> GroupHistoryEntry
    func mergeGroup(_ source: String, into target: String, actor: String, note: String?) throws
    func unmergeGroup(_ source: String, actor: String, note: String?) throws
    func mergeTarget(of fingerprint: String) throws -> String?
    /// A page of the reports a search matches (`stackline reports`).
    func searchReports(_ query: ReportQuery, limit: Int, after cursor: Int64?) throws -> ReportSearchPage
    /// The matched reports counted by `key` (`stackline facets`); nil when `fingerprint` names no group.
    func facets(key: FacetKey, query: ReportQuery, fingerprint: String?, top: Int) throws -> FacetCounts?
}

extension ServerQueries {
    /// The group with its 10 latest reports, as `stackline group` shows it.
    public func group(fingerprint prefix: String) throws -> GroupDetail? { try group(fingerprint: prefix, latest: 10) }
}

/// The symbol store's directory as the routes use it.
public protocol SymbolStoring: Sendable {
    /// The store's root directory (readiness checks it is readable).
    var root: String { get }
    func open(_ id: BuildID, role: SymbolStoreDirectory.Role) throws(StoreError) -> RegularFile?
    func entry(buildID id: BuildID) -> StoredDebugFile?
    func wants(_ offer: StoreOffer) -> Bool
    /// A file an upload is written into, chunk by chunk, before `addReceived` stores it.
    func receive(name: String) throws(StoreError) -> IncomingFile
    func addReceived(_ file: RegularFile, skipped: inout [String]) -> SymbolStoreDirectory.WalkResults<AddOutcome>
}

/// Where report bytes become stored reports and jobs.
public protocol ReportWriter: Sendable {
    /// Splits, parses and readies reports (`prepare`, the parser): blocking.
    var intake: ReportIntake { get }
    /// Stores what `intake.prepare` readied, once its transaction commits. It waits without
    /// holding a thread: the writes run on the writer's own thread, never the caller's.
    func commit(_ prepared: ReportIntake.Prepared) async throws -> [ReportIntake.Outcome]
}

/// Builds the symcaches of debug files just stored, in the background.
public protocol SymbolCacheIndexing: Sendable {
    /// Queues a build of `ids`' symcaches and returns at once.
    func index(_ ids: [BuildID])
}

/// Milliseconds since the Unix epoch.
public protocol ServerClock: Sendable {
    func now() -> Int64
}
