import Foundation
import JSONFormat
import ReportModel

// The network transport of the worker protocol. A local worker gets `JobRequest` frames on a
// pipe and answers `JobReply` frames; a remote worker gets and sends the very same frames over
// HTTP (long-poll, docs/workers.md), bundled with one small envelope frame in a body of type
// `RemoteProtocol.framesContentType` (`Framing.bundle`): a claim sends its envelope
// (`ClaimRequest`) and the reply frames of the slot's previous jobs; the answer is its envelope
// (`ClaimAnswer`) and one request frame per job it leases. A slot asks for a few jobs at a
// time, so the HTTP cost of a request is shared by several jobs. The remote worker's
// connection hands those frames to its slot processes and back without decoding them. What
// the network adds is the lease: the worker holds the job's fencing token and sends it back
// with every heartbeat and result, so each message stands alone and a reconnect needs no
// session state. Paths are under /api/v1/workers (scope `worker`). The envelopes are JSON (one
// per claim, heartbeat or connect); the per-job frames are binary (`JobFrameCodec.swift`).

/// The version of these messages; a master refuses a worker that speaks one it cannot read.
public enum RemoteProtocol {
    /// 2: job and reply frames are binary (`JobFrameCodec.swift`), no longer JSON; a worker of
    /// version 1 would misread them, so it is refused at connect.
    /// 3: a reply's missing debug files carry their symbol status in the flags byte. A master of
    /// version 2 would refuse those replies, so it refuses the worker at connect instead; a
    /// master of version 3 reads version 2's replies (their files are `notFound`).
    public static let version = 3
    /// The oldest worker version a master still takes.
    public static let oldestAccepted = 2
    /// Longest a claim is held open by the master when nothing is runnable.
    public static let maxClaimWaitSeconds = 25.0
    /// A claim's request and answer bodies: an envelope frame, then the frames it announces.
    public static let framesContentType = "application/x-stackline-frames"
    /// Most jobs one claim may lease.
    public static let maxJobsPerClaim = 64
    /// Most jobs one claim may lease per slot of the worker (its slots each keep this many ahead).
    /// 32 rather than 8: a claim's round trip outlasted the few jobs it brought, so slots ran dry
    /// and the remote path stalled far below the local one; 64 gained little more
    /// (scripts/bench-remote.sh, docs/performance.md).
    public static let maxJobsPerSlot = 32
}

/// A fencing token and the job it was issued for.
public struct LeaseRef: Codable, Sendable, Hashable {
    public var jobId: Int64
    public var leaseToken: Int64

    public init(jobId: Int64, leaseToken: Int64) {
        self.jobId = jobId
        self.leaseToken = leaseToken
    }
}

/// Worker → master, on connecting and again after the master forgot it (restart):
/// POST /api/v1/workers/connect.
public struct WorkerHello: Codable, Sendable {
    public var protocolVersion: Int
    /// Chosen by the worker at start (random), kept across reconnects.
    public var workerId: String
    public var name: String
    public var slots: Int
    /// Build ids (lowercase hex) of every debug file it holds: its `--symbols` stores and its cache.
    public var holds: [String]
    public var cacheBytes: Int64

    public init(workerId: String, name: String, slots: Int, holds: [String], cacheBytes: Int64) {
        protocolVersion = RemoteProtocol.version
        self.workerId = workerId
        self.name = name
        self.slots = slots
        self.holds = holds
        self.cacheBytes = cacheBytes
    }
}

/// Master → worker: the rules every lease it hands out follows (the master's own settings).
public struct WorkerWelcome: Codable, Sendable {
    public var leaseSeconds: Double
    public var heartbeatSeconds: Double
    public var jobTimeoutSeconds: Double
    /// The master's grouping rules document when it was given one (`--grouping-rules`); nil:
    /// the built-in rules. Fingerprints hash the rules, so every worker must group alike.
    public var groupingRules: String?

    public init(leaseSeconds: Double, heartbeatSeconds: Double, jobTimeoutSeconds: Double, groupingRules: String? = nil) {
        self.leaseSeconds = leaseSeconds
        self.heartbeatSeconds = heartbeatSeconds
        self.jobTimeoutSeconds = jobTimeoutSeconds
        self.groupingRules = groupingRules
    }
}

/// Worker → master: a slot asks for jobs (POST /api/v1/workers/ID/claim). Carries the
/// worker's state, so the master's view of it is never older than its last claim or heartbeat.
public struct ClaimRequest: Codable, Sendable {
    /// Seconds the master may hold the request open when nothing is runnable (capped).
    public var waitSeconds: Double
    /// How many jobs the slot takes (0: it only delivers results). The master waits for the
    /// first and adds what else is runnable at once, up to `RemoteProtocol.maxJobsPerClaim`.
    public var maxJobs: Int
    public var status: WorkerStatus
    /// Build ids it started or stopped holding since its last message (fetched, evicted).
    public var added: [String]
    public var removed: [String]
    /// Results of the slot's previous jobs, delivered with the claim: one request per job
    /// instead of two. Each is followed, in the body, by its `JobReply` frame as the slot process
    /// wrote it. The master records them before it looks for a job.
    public var results: [ResultHeader]

    public init(
        waitSeconds: Double, maxJobs: Int, status: WorkerStatus, added: [String] = [], removed: [String] = [],
        results: [ResultHeader] = []
    ) {
        self.waitSeconds = waitSeconds
        self.maxJobs = maxJobs
        self.status = status
        self.added = added
        self.removed = removed
        self.results = results
    }
}

/// The lease and report of one result in a claim; its reply frame follows the envelope.
public struct ResultHeader: Codable, Sendable {
    public var lease: LeaseRef
    /// The job's report, echoed from its request for the master's log; the token decides what is written.
    public var reportId: Int64

    public init(lease: LeaseRef, reportId: Int64) {
        self.lease = lease
        self.reportId = reportId
    }
}

/// Master → worker: the answer to a claim (200; 204 when there is neither a job nor a result
/// to answer for).
public struct ClaimAnswer: Codable, Sendable {
    /// The leased jobs, in claim order; their `JobRequest` frames follow the envelope in the same order.
    public var jobs: [JobLease]
    /// The master does not know this worker (it restarted) but recorded the results it
    /// carried: connect again, then claim. (Without results it answers 404.)
    public var reconnect: Bool?
    /// What became of each delivered result, in order.
    public var delivered: [Delivered]

    /// One delivered result's fate.
    public struct Delivered: Codable, Sendable, Equatable {
        public var jobId: Int64
        /// `stored`, `failureRecorded`, or nil when the fencing token refused it (the job was
        /// taken over) or the result was malformed (`message` says which).
        public var outcome: ResultAnswer.Outcome?
        public var message: String?

        public init(jobId: Int64, outcome: ResultAnswer.Outcome?, message: String? = nil) {
            self.jobId = jobId
            self.outcome = outcome
            self.message = message
        }
    }

    public init(jobs: [JobLease], delivered: [Delivered], reconnect: Bool? = nil) {
        self.jobs = jobs
        self.delivered = delivered
        self.reconnect = reconnect
    }
}

/// What a worker says about itself with each claim and heartbeat.
public struct WorkerStatus: Codable, Sendable, Equatable {
    public var busy: Int
    public var cacheBytes: Int64
    /// Debug files fetched from the master since the worker started.
    public var fetches: Int

    public init(busy: Int, cacheBytes: Int64, fetches: Int) {
        self.busy = busy
        self.cacheBytes = cacheBytes
        self.fetches = fetches
    }
}

/// A leased job, as a claim's answer announces it (its request frame follows).
public struct JobLease: Codable, Sendable {
    public var lease: LeaseRef
    public var reportId: Int64
    /// Build ids of the images the report's frames fall in, when the master knows them.
    public var buildIds: [BuildID]

    public init(lease: LeaseRef, reportId: Int64, buildIds: [BuildID]) {
        self.lease = lease
        self.reportId = reportId
        self.buildIds = buildIds
    }
}

/// Worker → master: renew the leases of its running jobs (POST /api/v1/workers/ID/heartbeat).
public struct HeartbeatRequest: Codable, Sendable {
    public var leases: [LeaseRef]
    public var status: WorkerStatus
    /// Jobs handed back unrun (a job fetched ahead that waited too long behind a slow one):
    /// queued again at once, the attempt not counted.
    public var release: [LeaseRef]

    public init(leases: [LeaseRef], status: WorkerStatus, release: [LeaseRef] = []) {
        self.leases = leases
        self.status = status
        self.release = release
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        leases = try c.decode([LeaseRef].self, forKey: .leases)
        status = try c.decode(WorkerStatus.self, forKey: .status)
        release = try c.decodeIfPresent([LeaseRef].self, forKey: .release) ?? []
    }
}

/// Master → worker: the jobs whose leases are no longer this worker's (taken over after
/// expiry, or timed out); the worker stops them, as their results would be refused.
public struct HeartbeatAnswer: Codable, Sendable {
    public var lost: [Int64]

    public init(lost: [Int64]) { self.lost = lost }
}

/// Worker → master: one job's outcome, when it could not go with a claim (POST
/// /api/v1/workers/ID/result, JSON).
public struct RemoteResult: Codable, Sendable {
    public var lease: LeaseRef
    /// The job's report, echoed from its request for the master's log; the token decides what is written.
    public var reportId: Int64
    /// The job's reply frame as the slot process wrote it (`JobReply(frame:)` reads it); base64 in the JSON.
    public var reply: Data

    public init(lease: LeaseRef, reportId: Int64, reply: Data) {
        self.lease = lease
        self.reportId = reportId
        self.reply = reply
    }

    /// The message's JSON, as JSONEncoder (`.sortedKeys`) writes it: a worker delivering a result
    /// this way passes its reply frame along, and encodes nothing else per job.
    public func encodedJSON() -> Data {
        var out = JSONBytes(reservingCapacity: 96 + reply.count * 4 / 3)
        var first = true
        out.raw("{")
        out.key("lease", first: &first)
        var inner = true
        out.raw("{")
        out.key("jobId", first: &inner); out.integer(Int(lease.jobId))
        out.key("leaseToken", first: &inner); out.integer(Int(lease.leaseToken))
        out.raw("}")
        out.key("reply", first: &first); out.string(reply.base64EncodedString())
        out.key("reportId", first: &first); out.integer(Int(reportId))
        out.raw("}")
        return Data(out.bytes)
    }
}

/// Master → worker: what became of a result. A result whose lease is no longer current is
/// answered 409 instead (the fencing token refused it).
public struct ResultAnswer: Codable, Sendable {
    public enum Outcome: String, Codable, Sendable {
        /// The report is done.
        case stored
        /// A failure was recorded: retried later, or quarantined.
        case failureRecorded
    }

    public var outcome: Outcome

    public init(outcome: Outcome) { self.outcome = outcome }
}
