import ArgumentParser
import Compression
import Dispatch
import Foundation
import Storage
import JSONFormat
import ReportModel
import Synchronization

/// `stackline bench-queue-store` (hidden): the job store alone, SQLite or PostgreSQL, with no
/// worker and no parsing, to find where the store stops scaling (docs/scaling.md;
/// scripts/bench-queue-store.sh). The phases run on one thread, as one master's writer
/// connection does, except the last: 1, 2 and 4 claimers at once, each with its own
/// connection, as the slots of several masters would be.
struct QueueBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-queue-store",
        abstract: "Measure the job store alone: submit, claim and complete rates (no worker, no parsing).",
        discussion: """
            Into a new database: N small distinct reports submitted one per transaction, then N \
            more in transactions of 64; then N claims, each followed by a completion carrying a \
            few-KB compressed result and a group key (so the group ledger runs as it does for a \
            real result); then N affinity claims (two remote workers, each holding 1,000 build ids \
            of its own, taking turns), each followed by a completion; then both again in batches \
            (4 and 8 jobs per claim statement, their completions in one transaction); then N jobs \
            each for 1, 2 and 4 concurrent claimers (batches of 4, one connection each). Prints \
            operations/s and µs per operation for each phase. Reports are never parsed; results are made up front. \
            --db postgres://USER@HOST:PORT/DB runs it on an empty PostgreSQL database instead \
            (password from STACKLINE_DB_PASSWORD, STACKLINE_DB_PASSWORD_FILE or libpq's PGPASSWORD/PGPASSFILE).
            """,
        shouldDisplay: false)

    @Option(help: "Reports per phase (the database ends with four times as many).")
    var reports: Int = 10_000

    @Option(help: """
        The SQLite database to create (must not exist; kept afterwards), or an empty PostgreSQL database's \
        postgres:// URL. Default: a new temporary directory, removed afterwards.
        """)
    var db: String?

    @Flag(help: "Machine-readable output.")
    var json = false

    @Flag(help: "Skip the concurrent claimers' phase (the one-thread phases alone, as before it existed).")
    var oneThread = false

    func validate() throws {
        guard reports >= 1 else { throw ValidationError("--reports must be at least 1") }
        if let db, PostgresURL.hasPassword(db) {
            throw ValidationError("--db: a password in the URL would show in the process list; use STACKLINE_DB_PASSWORD or STACKLINE_DB_PASSWORD_FILE")
        }
        if let db, !PostgresURL.isPostgres(db), FileManager.default.fileExists(atPath: db) {
            throw ValidationError("\(db) exists: the benchmark needs a new database")
        }
    }

    func run() throws {
        var temporary: URL?
        let path: String
        if let db {
            path = db
        } else {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stackline-queue-bench-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            temporary = dir
            path = dir.appendingPathComponent("bench.sqlite").path
        }
        defer { if let temporary { try? FileManager.default.removeItem(at: temporary) } }

        let open: () throws -> any QueueStore
        if PostgresURL.isPostgres(path) {
            let password = try processEnvironment.databasePasswordValue()
            open = { try PostgresDatabase(url: path, password: password) }
        } else {
            open = { try ServiceDatabase(path: path) }
        }
        let store = try open()
        var bench = QueueStoreBench(store: store, open: open, reports: reports, concurrent: !oneThread)
        let outcome = try bench.run()
        let summary = QueueBenchJSON(
            reports: reports, database: PostgresURL.redacted(path), databaseBytes: try store.databaseBytes(), outcome: outcome)
        if json {
            print(try encodeJSON(summary))
        } else {
            print(summary.text)
        }
    }
}

/// The benchmark itself: data made up front (deterministic), then the timed phases.
private struct QueueStoreBench {
    let store: any QueueStore
    /// Opens another connection to the same database (a concurrent claimer's own).
    let open: () throws -> any QueueStore
    let reports: Int
    private var random = SplitMix64(seed: 0x5741_434b_4c49_4e45)

    /// Build ids: the first 1,000 held by worker A, the next 1,000 by worker B, 2,000 held by no
    /// one; each report names one of them (its app's image) and two of 50 system libraries that
    /// no worker holds. So a quarter of the jobs suit A, a quarter B, half are neutral.
    private let appIds: [String]
    private let systemIds: [String]
    private static let heldByEach = 1_000
    private static let appIdCount = 4_000
    private static let groupCount = 500
    private static let versions = ["1.0", "1.1", "1.2", "2.0", "2.1"]
    /// Jobs per batched claim: a local slot's default prefetch, and a remote claim's usual size.
    private static let localBatch = 4
    private static let remoteBatch = 8
    /// Lease of every claim: long enough that nothing expires during the run.
    private static let leaseMs: Int64 = 600_000

    let concurrent: Bool

    init(store: any QueueStore, open: @escaping () throws -> any QueueStore, reports: Int, concurrent: Bool) {
        self.store = store
        self.open = open
        self.concurrent = concurrent
        self.reports = reports
        var random = SplitMix64(seed: 0x4255_494c_4449_4453)
        appIds = (0..<Self.appIdCount).map { _ in random.hex(bytes: 20) }
        systemIds = (0..<50).map { _ in random.hex(bytes: 16) }
    }

    mutating func run() throws -> QueueBenchOutcome {
        var outcome = QueueBenchOutcome()

        // Reports, stored form made before any timing of the store (the server does this on the
        // request's task, outside the writer): timed on its own for comparison.
        let made = (0..<(2 * reports)).map { makeReport($0) }
        var t = Stopwatch()
        let storables = made.map { StorableReport($0) }
        outcome.phases.append(t.phase("prepare: SHA-256 + zlib (no database)", operations: storables.count))
        outcome.reportBytes = made.map(\.raw.count).reduce(0, &+) / made.count
        outcome.storedReportBytes = storables.map(\.compressed.count).reduce(0, &+) / storables.count

        t = Stopwatch()
        for storable in storables[0..<reports] {
            _ = try store.submit([storable])
        }
        outcome.phases.append(t.phase("submit, 1 report per transaction", operations: reports))

        t = Stopwatch()
        for start in stride(from: reports, to: 2 * reports, by: 64) {
            _ = try store.submit(Array(storables[start..<min(start + 64, 2 * reports)]))
        }
        outcome.phases.append(t.phase("submit, 64 reports per transaction", operations: reports))

        let results = makeResults()
        let groups = makeGroups()
        outcome.resultJSONBytes = results.map(\.jsonSize).reduce(0, &+) / results.count
        outcome.resultStoredBytes = results.map(\.compressedJSON.count).reduce(0, &+) / results.count

        // (a) The local slots' claim, then its completion.
        var claimTime = Elapsed()
        var completeTime = Elapsed()
        t = Stopwatch()
        for i in 0..<reports {
            let c0 = Instant()
            guard let job = try store.claim(leaseMs: Self.leaseMs) else {
                throw ValidationError("the queue ran dry after \(i) of \(reports) claims")
            }
            let c1 = Instant()
            try store.complete(jobId: job.jobId, token: job.leaseToken, result: Self.result(for: job, results, groups))
            completeTime.add(from: c1, to: Instant())
            claimTime.add(from: c0, to: c1)
        }
        outcome.phases.append(t.phase("claim + complete", operations: reports))
        outcome.phases.append(Phase(name: "  of which claim", operations: reports, elapsed: claimTime))
        outcome.phases.append(Phase(name: "  of which complete", operations: reports, elapsed: completeTime))

        // (b) Remote workers' affinity claims: two workers taking turns, as two connected
        // build machines would, each with the default --affinity-wait of 2 s.
        let a = Set(appIds[0..<Self.heldByEach].compactMap { try? BuildID($0) })
        let b = Set(appIds[Self.heldByEach..<(2 * Self.heldByEach)].compactMap { try? BuildID($0) })
        let preferences = [
            AffinityPreference(holds: a, heldElsewhere: b, waitMs: 2_000),
            AffinityPreference(holds: b, heldElsewhere: a, waitMs: 2_000),
        ]
        claimTime = Elapsed()
        completeTime = Elapsed()
        t = Stopwatch()
        var turn = 0
        var done = 0
        while done < reports {
            let c0 = Instant()
            let claimed = try store.claim(leaseMs: Self.leaseMs, affinity: preferences[turn % 2])
            turn += 1
            let c1 = Instant()
            claimTime.add(from: c0, to: c1)
            guard let (job, match) = claimed else {
                // Only jobs the other worker holds, runnable for less than the wait: the other
                // worker asks next. Both coming back empty would mean the queue ran dry.
                outcome.affinity.empty += 1
                if outcome.affinity.empty > reports { throw ValidationError("affinity claims found nothing to take") }
                continue
            }
            outcome.affinity.count(match)
            try store.complete(jobId: job.jobId, token: job.leaseToken, result: Self.result(for: job, results, groups))
            completeTime.add(from: c1, to: Instant())
            done += 1
        }
        outcome.phases.append(t.phase("affinity claim + complete", operations: reports))
        outcome.phases.append(Phase(name: "  of which claim", operations: reports, elapsed: claimTime))
        outcome.phases.append(Phase(name: "  of which complete", operations: reports, elapsed: completeTime))

        // (c) and (d): the same two claims in batches, as the master now makes them: a local
        // slot leases `localBatch` jobs per claim statement, a remote claim up to `remoteBatch`,
        // and their completions commit together, one transaction per batch (as the master's
        // completion writer groups them under load). Their reports are stored untimed.
        let extra = (2 * reports..<(4 * reports)).map { StorableReport(makeReport($0)) }
        for start in stride(from: 0, to: extra.count, by: 64) {
            _ = try store.submit(Array(extra[start..<min(start + 64, extra.count)]))
        }
        claimTime = Elapsed()
        completeTime = Elapsed()
        t = Stopwatch()
        done = 0
        while done < reports {
            let c0 = Instant()
            let jobs = try store.claim(leaseMs: Self.leaseMs, limit: min(Self.localBatch, reports - done))
            let c1 = Instant()
            guard !jobs.isEmpty else { throw ValidationError("the queue ran dry after \(done) of \(reports) batched claims") }
            let outcomes = try store.complete(jobs.map {
                Completion(jobId: $0.jobId, token: $0.leaseToken, result: Self.result(for: $0, results, groups))
            })
            guard outcomes.allSatisfy({ $0 == .stored }) else { throw ValidationError("a batched completion was refused") }
            completeTime.add(from: c1, to: Instant())
            claimTime.add(from: c0, to: c1)
            done += jobs.count
        }
        outcome.phases.append(t.phase("claim + complete, \(Self.localBatch) per claim and per commit", operations: reports))
        outcome.phases.append(Phase(name: "  of which claim", operations: reports, elapsed: claimTime))
        outcome.phases.append(Phase(name: "  of which complete", operations: reports, elapsed: completeTime))

        claimTime = Elapsed()
        completeTime = Elapsed()
        t = Stopwatch()
        done = 0
        var empty = 0
        while done < reports {
            let c0 = Instant()
            let claimed = try store.claim(
                leaseMs: Self.leaseMs, affinity: preferences[turn % 2], limit: min(Self.remoteBatch, reports - done))
            turn += 1
            let c1 = Instant()
            claimTime.add(from: c0, to: c1)
            guard !claimed.isEmpty else {
                empty += 1
                if empty > reports { throw ValidationError("batched affinity claims found nothing to take") }
                continue
            }
            let outcomes = try store.complete(claimed.map {
                Completion(jobId: $0.job.jobId, token: $0.job.leaseToken, result: Self.result(for: $0.job, results, groups))
            })
            guard outcomes.allSatisfy({ $0 == .stored }) else { throw ValidationError("a batched completion was refused") }
            completeTime.add(from: c1, to: Instant())
            done += claimed.count
        }
        outcome.phases.append(t.phase("affinity claim + complete, \(Self.remoteBatch) per claim and per commit", operations: reports))
        outcome.phases.append(Phase(name: "  of which claim", operations: reports, elapsed: claimTime))
        outcome.phases.append(Phase(name: "  of which complete", operations: reports, elapsed: completeTime))

        // (e) Concurrent claimers: 1, 2 and 4 threads, each with a connection of its own,
        // claiming `localBatch` jobs at a time and completing them in one transaction, until
        // `reports` jobs are done. On SQLite they take turns at the one write lock; on
        // PostgreSQL `SKIP LOCKED` sends them past each other's rows.
        var total = 4 * reports
        for claimers in concurrent ? [1, 2, 4] : [] {
            let batch = (total..<(total + reports)).map { StorableReport(makeReport($0)) }
            for start in stride(from: 0, to: batch.count, by: 64) {
                _ = try store.submit(Array(batch[start..<min(start + 64, batch.count)]))
            }
            total += reports
            let stores = try (0..<claimers).map { _ in try open() }
            let failures = Mutex<[String]>([])
            let completed = Mutex(0)
            let (resultsCopy, groupsCopy, leaseMs) = (results, groups, Self.leaseMs)
            t = Stopwatch()
            DispatchQueue.concurrentPerform(iterations: claimers) { i in
                do {
                    while true {
                        let jobs = try stores[i].claim(leaseMs: leaseMs, limit: Self.localBatch)
                        if jobs.isEmpty { break }
                        let outcomes = try stores[i].complete(jobs.map {
                            Completion(jobId: $0.jobId, token: $0.leaseToken, result: Self.result(for: $0, resultsCopy, groupsCopy))
                        })
                        if !outcomes.allSatisfy({ $0 == .stored }) { failures.withLock { $0.append("a fresh lease was stale") } }
                        completed.withLock { $0 += jobs.count }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            if let failure = failures.withLock({ $0.first }) { throw ValidationError("concurrent claimers: \(failure)") }
            outcome.phases.append(
                t.phase("\(claimers) concurrent claimer\(claimers == 1 ? "" : "s"), \(Self.localBatch) per claim", operations: reports))
            guard completed.withLock({ $0 }) == reports else { throw ValidationError("concurrent claimers finished \(completed.withLock { $0 }) of \(reports)") }
        }

        let counts = try store.stateCounts()
        guard counts[.done] == total, try store.unfinishedCount() == 0 else {
            throw ValidationError("expected \(total) jobs done, found \(counts)")
        }
        return outcome
    }

    /// A few hundred bytes, distinct per index, shaped like a small crash report. Never parsed.
    private mutating func makeReport(_ i: Int) -> NewReport {
        let app = appIds[Int(random.next() % UInt64(appIds.count))]
        let system = [systemIds[Int(random.next() % 50)], systemIds[Int(random.next() % 50)]]
        let frames = (0..<6).map { _ in "\"0x\(String(random.next() & 0x0000_7fff_ffff_ffff, radix: 16))\"" }
        let version = Self.versions[i % Self.versions.count]
        let text = """
            {"bench":\(i),"app":"BenchApp","version":"\(version)","signal":"SIGSEGV","crashed":0,\
            "frames":[\(frames.joined(separator: ","))],\
            "images":[{"name":"BenchApp","id":"\(app)"},{"name":"libc.so.6","id":"\(system[0])"},\
            {"name":"libswiftCore.so","id":"\(system[1])"}]}
            """
        return NewReport(
            raw: Data(text.utf8), format: "swift-backtrace-json", kind: .crash, app: "BenchApp", version: version,
            buildIds: ([app] + system).compactMap { try? BuildID($0) })
    }

    /// 64 results, compressed once up front as the worker does (the master stores the worker's
    /// bytes as they are). The store never looks inside; 64 keep them from being one repeated blob.
    private mutating func makeResults() -> [JobResult] {
        (0..<64).map { variant in
            var frames: [String] = []
            for f in 0..<24 {
                let address = String(random.next() & 0x0000_7fff_ffff_ffff, radix: 16)
                frames.append("""
                    {"index":\(f),"address":"0x\(address)","status":"symbolicated","image":"BenchApp",\
                    "function":"BenchApp.Module\(variant % 7).function\(f)(_:) ","offset":\(random.next() % 4096),\
                    "file":"/src/Sources/BenchApp/File\(f % 9).swift","line":\(random.next() % 900),"column":\(random.next() % 80),\
                    "inApp":true}
                    """)
            }
            let json = """
                {"format":"swift-backtrace-json","kind":"crash","status":"complete","missingBuildIds":[],\
                "app":{"name":"BenchApp","version":"1.0"},"os":"Linux",\
                "exception":{"type":"SIGSEGV","signal":"11"},"threads":[{"index":0,"crashed":true,\
                "frames":[\(frames.joined(separator: ","))]}],"warnings":[]}
                """
            return JobResult(symbolicatedJSON: Data(json.utf8), status: .complete)
        }
    }

    /// The group of each job (by job id, from 1 in a new database), made up front so the timed
    /// loop only looks it up: drawn with a skew (a few hot groups, a long tail), as crashes fall.
    private mutating func makeGroups() -> [GroupKey] {
        let keys = (0..<Self.groupCount).map { g in
            GroupKey(
                fingerprint: String(format: "%032x", g * 2_654_435_761 + 1), kind: .crash,
                title: "SIGSEGV in BenchApp.Module\(g % 7).function\(g)(_:) — File\(g % 9).swift", rulesVersion: 1,
                frames: (0..<5).map { "BenchApp.Module\(g % 7).function\(g + $0)(_:)" })
        }
        return (0..<(2 * reports)).map { _ in
            let u = Double(random.next() >> 11) / Double(1 << 53)
            return keys[Int(Double(Self.groupCount) * u * u * u)]
        }
    }

    /// The result of `job`: one of the prepared JSON documents and its group; every fourth report
    /// lacks a debug file.
    private static func result(for job: ClaimedJob, _ results: [JobResult], _ groups: [GroupKey]) -> JobResult {
        var result = results[Int(job.jobId % Int64(results.count))]
        result.group = groups[Int((job.jobId - 1) % Int64(groups.count))]
        if job.jobId % 4 == 0, let id = job.buildIds.last {
            result.missingImages = [MissingDebugFile(buildID: id, imageName: "libswiftCore.so")]
        }
        return result
    }
}

/// A reading of the wall clock and of the process's CPU time (user + system, every thread:
/// the database work runs on this thread, nothing else runs). Wall time well above CPU time
/// means waiting: for the disk, or for a CPU other processes hold.
private struct Instant {
    let wall = DispatchTime.now().uptimeNanoseconds
    let cpu: UInt64 = {
        var spec = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }()
}

/// Wall and CPU time summed over many intervals.
private struct Elapsed {
    var wallNs: UInt64 = 0
    var cpuNs: UInt64 = 0

    mutating func add(from start: Instant, to end: Instant) {
        wallNs += end.wall - start.wall
        cpuNs += end.cpu - start.cpu
    }
}

/// Wall-clock and CPU time of one phase.
private struct Stopwatch {
    let started = Instant()

    func phase(_ name: String, operations: Int) -> Phase {
        var elapsed = Elapsed()
        elapsed.add(from: started, to: Instant())
        return Phase(name: name, operations: operations, elapsed: elapsed)
    }
}

private struct Phase: Encodable {
    var name: String
    var operations: Int
    var seconds: Double
    var operationsPerSecond: Double
    var microsecondsPerOperation: Double
    /// CPU time (user + system) per operation.
    var cpuMicrosecondsPerOperation: Double

    init(name: String, operations: Int, elapsed: Elapsed) {
        self.name = name
        self.operations = operations
        seconds = Double(elapsed.wallNs) / 1e9
        operationsPerSecond = seconds > 0 ? Double(operations) / seconds : 0
        microsecondsPerOperation = operations > 0 ? Double(elapsed.wallNs) / 1e3 / Double(operations) : 0
        cpuMicrosecondsPerOperation = operations > 0 ? Double(elapsed.cpuNs) / 1e3 / Double(operations) : 0
    }
}

private struct AffinityCounts: Encodable {
    var hit = 0
    var neutral = 0
    var fallback = 0
    /// Claims that found nothing this worker should take (the other worker's turn came next).
    var empty = 0

    mutating func count(_ match: AffinityMatch) {
        switch match {
        case .hit: hit += 1
        case .neutral: neutral += 1
        case .fallback: fallback += 1
        }
    }
}

private struct QueueBenchOutcome {
    var phases: [Phase] = []
    var affinity = AffinityCounts()
    var reportBytes = 0
    var storedReportBytes = 0
    var resultJSONBytes = 0
    var resultStoredBytes = 0
}

/// `bench-queue-store --json`.
private struct QueueBenchJSON: Encodable {
    var reports: Int
    var database: String
    var databaseBytes: Int64
    var reportBytes: Int
    var storedReportBytes: Int
    var resultJSONBytes: Int
    var resultStoredBytes: Int
    var phases: [Phase]
    var affinity: AffinityCounts

    init(reports: Int, database: String, databaseBytes: Int64, outcome: QueueBenchOutcome) {
        self.reports = reports
        self.database = database
        self.databaseBytes = databaseBytes
        reportBytes = outcome.reportBytes
        storedReportBytes = outcome.storedReportBytes
        resultJSONBytes = outcome.resultJSONBytes
        resultStoredBytes = outcome.resultStoredBytes
        phases = outcome.phases
        affinity = outcome.affinity
    }

    var text: String {
        var lines = [
            "queue store alone: \(reports) reports per phase, one thread, \(database)",
            "reports \(reportBytes) bytes (\(storedReportBytes) stored); results \(resultJSONBytes) bytes of JSON (\(resultStoredBytes) stored)",
            "",
        ]
        var table = Table("PHASE", "OPS", "SECONDS", "OPS/S", "µS/OP", "CPU µS/OP")
        for phase in phases {
            table.add(
                phase.name, "\(phase.operations)", String(format: "%.3f", phase.seconds),
                String(format: "%.0f", phase.operationsPerSecond), String(format: "%.1f", phase.microsecondsPerOperation),
                String(format: "%.1f", phase.cpuMicrosecondsPerOperation))
        }
        lines.append(table.render())
        lines.append("")
        lines.append(
            "affinity claims: \(affinity.hit) hit, \(affinity.neutral) neutral, \(affinity.fallback) fallback, \(affinity.empty) empty")
        lines.append("database: \(ByteCountFormatter.string(fromByteCount: databaseBytes, countStyle: .binary)) at the end")
        return lines.joined(separator: "\n")
    }
}

/// A small deterministic generator (SplitMix64), so every run stores the same data.
private struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    mutating func hex(bytes: Int) -> String {
        var text = ""
        while text.count < 2 * bytes { text += String(format: "%016llx", next()) }
        return String(text.prefix(2 * bytes))
    }
}
