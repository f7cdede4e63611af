import DebugInfo
import Foundation
import Intake
import Presentation
import ReportModel
import ReportQuery
import Storage
import SymbolStore
import SystemCalls

// The real collaborators of `stackline serve` (and of ServerTests). This folder holds the
// blocking work itself, run on the threads of whoever calls it; routes call it only inside
// `deps.blocking.run` (BlockingWorkTests checks every other file of the module, not these).

/// The database's queries, and the missing-files query against `store`.
public struct DatabaseQueries: ServerQueries {
    public let db: any ServiceStore
    public let store: SymbolStoreDirectory

    public init(db: any ServiceStore, store: SymbolStoreDirectory) {
        self.db = db
        self.store = store
    }

    public var tokens: TokenStore { db.tokens }
    public func checkWritable() throws { try db.checkWritable() }
    public func stateCounts() throws -> [JobState: Int] { try db.stateCounts() }
    public func jobStatus(reportId: Int64) throws -> JobStatus? { try db.jobStatus(reportId: reportId) }
    public func states(reportIds: [Int64]) throws -> [Int64: JobState] { try db.states(reportIds: reportIds) }
    public func result(reportId: Int64) throws -> StoredResult? { try db.result(reportId: reportId) }
    public func report(id: Int64) throws -> StoredReport? { try db.report(id: id) }
    public func groups(_ filter: GroupFilter) throws -> [GroupSummary] { try db.groups(filter) }
    public func group(fingerprint prefix: String, latest: Int) throws -> GroupDetail? { try db.group(fingerprint: prefix, latest: latest) }
    public func group(of result: StoredResult) -> GroupSummary? { ReportPrinter.group(of: result, in: db) }
    public func dailyCounts(fingerprints: [String], days: Int, now: Int64) throws -> [String: [Int]] {
        try db.dailyCounts(fingerprints: fingerprints, days: days, now: now)
    }
    public func appVersionCounts(app: String?, kind: ReportKind) throws -> [String: Int] { try db.appVersionCounts(app: app, kind: kind) }
    public func firstVersion(fingerprint: String) throws -> String? { try db.firstVersion(fingerprint: fingerprint) }
    public func namespace(_ name: String) throws -> StoredNamespace? { try db.namespace(name) }
    public func requeueReports(missing buildIds: [BuildID]) throws -> [Int64] { try db.requeueReports(missing: buildIds) }
    public func missingDebugFiles() throws -> [MissingSymbolSummary] { try Presentation.missingDebugFiles(db: db, store: store) }
    public func sourceAnswers(buildIds: [BuildID]) throws -> [BuildID: [SymbolSourceAnswer]] { try db.sourceAnswers(buildIds: buildIds) }
    public func releaseHealth(app: String?, namespace: String?) throws -> [ReleaseCounts] {
        try db.releaseHealth(app: app, namespace: namespace)
    }
    public func groupFingerprint(prefix: String) throws -> String? { try db.groupFingerprint(prefix: prefix) }
    public func groupHistory(fingerprint: String, limit: Int) throws -> [GroupHistoryEntry] {
        try db.groupHistory(fingerprint: fingerprint, limit: limit)
    }
    public func changeGroupState(fingerprint: String, _ change: GroupStateChange, actor: String, note: String?) throws -> GroupTriage {
        try db.changeGroupState(fingerprint: fingerprint, change, actor: actor, note: note)
    }
    public func assignGroup(fingerprint: String, to assignee: String?, actor: String, note: String?) throws -> GroupTriage {
        try db.assignGroup(fingerprint: fingerprint, to: assignee, actor: actor, note: note)
    }
    public func commentOnGroup(fingerprint: String, text: String, actor: String) throws -> GroupHistoryEntry {
        try db.commentOnGroup(fingerprint: fingerprint, text: text, actor: actor)
    }
    public func mergeGroup(_ source: String, into target: String, actor: String, note: String?) throws {
        try db.mergeGroup(source, into: target, actor: actor, note: note)
    }
    public func unmergeGroup(_ source: String, actor: String, note: String?) throws { try db.unmergeGroup(source, actor: actor, note: note) }
    public func mergeTarget(of fingerprint: String) throws -> String? { try db.mergeTarget(of: fingerprint) }
    public func reportOrigin(id: Int64) throws -> ReportOrigin? { try db.reportOrigin(id: id) }
    public func searchReports(_ query: ReportQuery, limit: Int, after cursor: Int64?) throws -> ReportSearchPage {
        try db.searchReports(query, limit: limit, after: cursor)
    }
    public func facets(key: FacetKey, query: ReportQuery, fingerprint: String?, top: Int) throws -> FacetCounts? {
        try db.facets(key: key, query: query, fingerprint: fingerprint, top: top)
    }
}

extension SymbolStoreDirectory: SymbolStoring {
    public func receive(name: String) throws(StoreError) -> IncomingFile { try IncomingFile(store: self, name: name) }
}

/// The store with the files the symbol sources fetched behind it (`--symbol-source`): the
/// debuginfod endpoint serves both, so remote workers and gdb get fetched files too, and an
/// uploaded file wins. Uploads go to the store only; the fetched files are the cache's to evict.
public struct StoreWithFetchedFiles: SymbolStoring {
    public let store: SymbolStoreDirectory
    public let fetched: SymbolStoreDirectory

    public init(store: SymbolStoreDirectory, fetched: SymbolStoreDirectory) {
        self.store = store
        self.fetched = fetched
    }

    public var root: String { store.root }

    public func open(_ id: BuildID, role: SymbolStoreDirectory.Role) throws(StoreError) -> RegularFile? {
        // The entry that holds the id answers for both roles, as the symbolicator pairs them.
        if store.entry(buildID: id) != nil { return try store.open(id, role: role) }
        return try fetched.open(id, role: role)
    }

    public func entry(buildID id: BuildID) -> StoredDebugFile? { store.entry(buildID: id) ?? fetched.entry(buildID: id) }
    public func wants(_ offer: StoreOffer) -> Bool { store.wants(offer) }
    public func receive(name: String) throws(StoreError) -> IncomingFile { try store.receive(name: name) }
    public func addReceived(_ file: RegularFile, skipped: inout [String]) -> SymbolStoreDirectory.WalkResults<AddOutcome> {
        store.addReceived(file, skipped: &skipped)
    }
}

/// `stackline serve`'s writer: reports parsed by the intake's parser (parse children), stored
/// through `GroupCommit`, whose one writer thread shares transactions between requests.
public struct GroupCommitWriter: ReportWriter {
    public let intake: ReportIntake
    public let groupCommit: GroupCommit

    public init(intake: ReportIntake, commit: GroupCommit) {
        self.intake = intake
        groupCommit = commit
    }

    public func commit(_ prepared: ReportIntake.Prepared) async throws -> [ReportIntake.Outcome] {
        try await intake.store(prepared, through: groupCommit)
    }
}

extension SymbolCacheIndexer: SymbolCacheIndexing {}

/// The database's clock: the time it stamps rows with, so a route's "now" and the rows agree.
public struct StoreClock: ServerClock {
    public let store: any SQLStore

    public init(_ store: any SQLStore) { self.store = store }

    public func now() -> Int64 { store.now() }
}
