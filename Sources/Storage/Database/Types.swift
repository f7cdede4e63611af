import Compression
import Foundation
import Hashing
import ReportModel
import ServiceRuntime

/// Lifecycle of a job: queued → running → done | failed (or back to queued on retry).
public enum JobState: String, Codable, Sendable, CaseIterable {
    case queued
    case running
    case done
    case failed
}

/// Claim order: higher first. Crashes before lag; reprocessing after fresh reports.
public enum JobPriority {
    public static let crash = 20
    public static let lag = 10
    public static let reprocessing = 0

    /// Priority of a fresh report of `kind`.
    public static func fresh(_ kind: ReportKind) -> Int { kind == .crash ? crash : lag }
}

/// A report to store and enqueue.
public struct NewReport: Sendable {
    public var raw: Data
    public var format: String
    public var kind: ReportKind
    public var app: String?
    public var version: String?
    /// The SDK namespace the report was uploaded into (nil: none).
    public var namespace: String?
    public var priority: Int
    /// When set, the report is stored but its job is created already `failed` with this reason
    /// (input that was accepted without a parse, e.g. `submit --accept-unparsed`).
    public var rejectedBecause: String?
    /// Lowercase hex build ids of the images the report's frames fall in
    /// (`RawReport.referencedBuildIds`), for symbol affinity; nil when unknown (not parsed).
    public var buildIds: [BuildID]?
    /// The device the report itself names (`RawReport.device`): its model, OS version and
    /// device key, searched and counted when no SDK meta names them.
    public var device: DeviceInfo?

    public init(
        raw: Data, format: String, kind: ReportKind, app: String? = nil, version: String? = nil,
        namespace: String? = nil, priority: Int? = nil, rejectedBecause: String? = nil, buildIds: [BuildID]? = nil,
        device: DeviceInfo? = nil
    ) {
        self.raw = raw
        self.format = format
        self.kind = kind
        self.app = app
        self.version = version
        self.namespace = namespace
        self.priority = priority ?? JobPriority.fresh(kind)
        self.rejectedBecause = rejectedBecause
        self.buildIds = buildIds
        self.device = device
    }
}

/// A report ready to store: its digest and stored (compressed) form computed up front, so
/// that work runs on the caller's thread and not inside the write transaction.
public struct StorableReport: Sendable {
    public var report: NewReport
    /// SHA-256 of the decompressed bytes: the deduplication key.
    public var digest: String
    /// What the `raw` column holds: gzip or zlib that inflates to exactly `report.raw`.
    public var compressed: Data

    /// `alreadyCompressed` is the sender's own gzip of exactly these bytes (an ingest body that
    /// was inflated into `report.raw`), stored as is instead of compressing again.
    public init(_ report: NewReport, alreadyCompressed: Data? = nil) {
        self.report = report
        digest = SHA256.hex(report.raw)
        compressed = alreadyCompressed ?? Zlib.compress(report.raw)
    }
}

/// What `submit` did.
public struct SubmitOutcome: Sendable, Equatable {
    public var reportId: Int64
    /// Nil when the report was a duplicate and no job was created.
    public var jobId: Int64?
    public var duplicate: Bool
}

/// A job handed to one worker, valid while its lease token is current.
public struct ClaimedJob: Sendable {
    public var jobId: Int64
    public var reportId: Int64
    public var attempts: Int
    public var leaseToken: Int64
    public var leaseExpiresAt: Int64
    public var format: String
    /// Decompressed report bytes.
    public var raw: Data
    /// `reports.build_ids` as stored (space-separated), split only when asked for: the local
    /// slots never ask, and splitting at every claim showed in the master's profile
    /// (scripts/bench-queue.sh).
    var storedBuildIds: String?
    /// Build ids of the images the report's frames fall in; empty when none or unknown.
    public var buildIds: [BuildID] { ServiceDatabase.buildIds(stored: storedBuildIds) }
}

/// What a finished job stores.
public struct JobResult: Sendable {
    /// zlib of the symbolicated report's JSON, as stored.
    public var compressedJSON: Data
    /// The JSON's size before compression.
    public var jsonSize: Int
    public var status: ReportStatus
    /// The group the report belongs to; nil leaves it ungrouped.
    public var group: GroupKey?
    /// The images whose debug files were missing, in report order, with their names (for `symbols missing`).
    public var missingImages: [MissingDebugFile]

    /// A result already in its stored form (the worker compressed it).
    public init(compressedJSON: Data, jsonSize: Int, status: ReportStatus, group: GroupKey? = nil, missingImages: [MissingDebugFile] = []) {
        self.compressedJSON = compressedJSON
        self.jsonSize = jsonSize
        self.status = status
        self.group = group
        self.missingImages = missingImages
    }

    /// A result from the report's JSON, compressed here.
    public init(symbolicatedJSON: Data, status: ReportStatus, group: GroupKey? = nil, missingImages: [MissingDebugFile] = []) {
        self.init(
            compressedJSON: Zlib.compress(symbolicatedJSON), jsonSize: symbolicatedJSON.count, status: status,
            group: group, missingImages: missingImages)
    }
}

/// Why an attempt failed, and whether trying again can help.
public enum JobFailure: Sendable, Equatable {
    /// Environmental (worker died, timed out): retry with backoff up to the limit.
    case retryable(String)
    /// Deterministic (the input cannot be parsed): fail now.
    case permanent(String)
}

/// What `fail` decided.
public enum FailOutcome: Sendable, Equatable {
    case retryScheduled(runAfter: Int64, attempts: Int)
    case failed(reason: String)
}

/// Exponential backoff with jitter, and the attempt limit before quarantine.
public struct RetryPolicy: Sendable {
    public var maxAttempts: Int
    /// Delay after the first failed attempt, in milliseconds; doubles each attempt.
    public var baseDelayMs: Int64
    public var maxDelayMs: Int64
    /// Fraction of the delay added at random, so retries of many jobs do not arrive together.
    public var jitter: Double

    public init(maxAttempts: Int = 3, baseDelayMs: Int64 = 1000, maxDelayMs: Int64 = 300_000, jitter: Double = 0.5) {
        self.maxAttempts = maxAttempts
        self.baseDelayMs = baseDelayMs
        self.maxDelayMs = maxDelayMs
        self.jitter = jitter
    }

    /// The schedule (ServiceRuntime's `Backoff`): each delay is the step plus up to `jitter` of it.
    public var backoff: Backoff {
        Backoff(initialMs: baseDelayMs, maxMs: maxDelayMs, jitter: 100...(100 + Int((max(0, min(jitter, 100)) * 100).rounded())))
    }

    /// Backoff with jitter drawn from `[0, jitter × delay]`.
    public func delay(afterAttempts attempts: Int) -> Int64 {
        backoff.delay(afterAttempt: attempts)
    }
}

/// One job as `status` shows it.
public struct JobStatus: Sendable {
    public var jobId: Int64
    public var reportId: Int64
    public var state: JobState
    public var attempts: Int
    public var lastError: String?
    public var runAfter: Int64
    public var updatedAt: Int64
    public var format: String
    public var kind: ReportKind
}

/// A finished job's stored result.
public struct StoredResult: Sendable {
    public var reportId: Int64
    public var symbolicatedJSON: Data
    public var status: ReportStatus
    /// The debug files its processing lacked, in report order (from `missing_symbols`).
    public var missingImages: [MissingDebugFile]
    public var fingerprint: String?

    /// The build ids of `missingImages`.
    public var missingBuildIds: [BuildID] { missingImages.map(\.buildID) }
}

/// A stored report, decompressed.
public struct StoredReport: Sendable {
    public var id: Int64
    public var format: String
    public var kind: ReportKind
    public var digest: String
    public var raw: Data
    public var receivedAt: Int64
}

/// Errors at the queue's boundary.
public enum StorageError: Error, Equatable, CustomStringConvertible {
    /// The lease token no longer matches: the job was recovered, retried or finished elsewhere.
    case staleLease(jobId: Int64)
    case reportNotFound(Int64)
    case corruptStoredReport(reportId: Int64, String)
    case corruptStoredResult(reportId: Int64, String)
    case lockUnavailable(String, String)
    /// The database file or its directory cannot be created.
    case cannotCreate(String, String)
    /// A stored column holds a value none of its enum's cases has (a damaged or foreign database).
    case unknownStoredValue(column: String, value: String)
    /// `db backup` never replaces a file.
    case backupExists(String)
    /// The database server cannot be reached, or the connection broke: nothing was written, and
    /// the same call may succeed once it is back (`PostgresDatabase`).
    case unavailable(String)

    /// The database could not be reached: passing, unlike the others.
    public var isUnavailable: Bool {
        if case .unavailable = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .staleLease(let id): "job \(id): lease token is stale (job was recovered or finished elsewhere)"
        case .reportNotFound(let id): "no report with id \(id)"
        case .corruptStoredReport(let id, let why): "report \(id): stored bytes are unreadable: \(why)"
        case .corruptStoredResult(let id, let why): "report \(id): stored result is unreadable: \(why)"
        case .lockUnavailable(let path, let why): "cannot lock \(path) to open the database: \(why)"
        case .cannotCreate(let path, let why): "cannot create \(path) for the database: \(why)"
        case .unknownStoredValue(let column, let value): "stored \(column) \(value) is not a value this version knows"
        case .backupExists(let path): "\(path) exists: a backup is written to a new file, never over one"
        case .unavailable(let why): "the database is unavailable: \(why)"
        }
    }
}
