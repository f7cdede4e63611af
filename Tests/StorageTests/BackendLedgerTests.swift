import Foundation
import ReportModel
import SQLInterface
import Storage
import TestSupport
import Testing

/// The group ledger and the queue on both backends, against the test's own plan: which report
/// the test filed in which group, with which version. Counts are read back with plain SQL on the
/// store itself (`read`), never through the ledger's own queries.
@Suite struct BackendLedgerTests {
    static func group(_ name: String) -> GroupKey {
        GroupKey(fingerprint: name, kind: .crash, title: "crash in \(name)", rulesVersion: 1, frames: ["App!\(name)"])
    }

    static func result(_ group: String?) -> JobResult {
        JobResult(symbolicatedJSON: Data("{}".utf8), status: .complete, group: group.map(Self.group))
    }

    /// What the ledger holds, read with plain SQL: per group its count, first and last seen,
    /// and its count per version.
    static func ledger(_ store: any QueueStore) throws -> [String: (count: Int, first: Int64, last: Int64, versions: [String: Int])] {
        try store.read { db in
            var out: [String: (count: Int, first: Int64, last: Int64, versions: [String: Int])] = [:]
            for row in try db.rows("SELECT fingerprint, count, first_seen, last_seen FROM groups") {
                out[try row.string(0)] = (try row.int(1), try row.int64(2), try row.int64(3), [:])
            }
            for row in try db.rows("SELECT fingerprint, version, count FROM group_versions") {
                out[try row.string(0), default: (0, 0, 0, [:])].versions[try row.string(1)] = try row.int(2)
            }
            return out
        }
    }

    /// Groups, counts and versions as the plan says: `plan[report] = (group, version, arrival)`.
    static func expected(_ plan: [Int64: (group: String?, version: String, seen: Int64)])
        -> [String: (count: Int, first: Int64, last: Int64, versions: [String: Int])]
    {
        var out: [String: (count: Int, first: Int64, last: Int64, versions: [String: Int])] = [:]
        for entry in plan.values {
            guard let g = entry.group else { continue }
            var e = out[g] ?? (0, .max, .min, [:])
            e.count += 1
            e.first = min(e.first, entry.seen)
            e.last = max(e.last, entry.seen)
            e.versions[entry.version, default: 0] += 1
            out[g] = e
        }
        return out
    }

    static func expectLedger(
        _ store: any QueueStore, _ plan: [Int64: (group: String?, version: String, seen: Int64)], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let got = try ledger(store)
        let want = expected(plan)
        #expect(Set(got.keys) == Set(want.keys), sourceLocation: sourceLocation)
        for (g, w) in want {
            let h = got[g]
            #expect(h?.count == w.count && h?.first == w.first && h?.last == w.last, "\(g)", sourceLocation: sourceLocation)
            #expect(h?.versions == w.versions, "\(g) versions", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: Backend.allCases) func batchedJoinsAndMovesBetweenGroupsKeepCountsExact(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        var plan: [Int64: (group: String?, version: String, seen: Int64)] = [:]
        var ids: [Int64] = []
        for n in 0..<24 {
            let version = ["1.0", "1.1", ""][n % 3]
            let id = try f.store.submit(f.report(n, version: version.isEmpty ? nil : version)).reportId
            plan[id] = (nil, version, f.clock.now)
            ids.append(id)
            f.clock.advance(seconds: 30)
        }
        // First results, eight per transaction, into three groups (one report in none).
        while true {
            let jobs = try f.store.claim(leaseMs: 60_000, limit: 8)
            guard !jobs.isEmpty else { break }
            var batch: [Completion] = []
            for job in jobs {
                let n = Int(String(decoding: job.raw, as: UTF8.self).dropFirst("report ".count)) ?? -1
                let group: String? = n == 23 ? nil : ["aaaa", "bbbb", "cccc"][n % 3 == 0 ? 0 : (n % 5 == 0 ? 2 : 1)]
                plan[job.reportId]?.group = group
                batch.append(Completion(jobId: job.jobId, token: job.leaseToken, result: Self.result(group)))
            }
            #expect(try f.store.complete(batch) == Array(repeating: .stored, count: batch.count))
        }
        try Self.expectLedger(f.store, plan)
        // Reprocessing moves some: to another group, out of every group, and into a new one.
        let moves: [(Int64, String?)] = [(ids[0], "bbbb"), (ids[3], nil), (ids[6], "dddd"), (ids[23], "aaaa"), (ids[9], "aaaa")]
        for (id, _) in moves { _ = try f.store.enqueueReprocessing(reportId: id) }
        let jobs = try f.store.claim(leaseMs: 60_000, limit: 8)
        #expect(Set(jobs.map(\.reportId)) == Set(moves.map(\.0)))
        let target = Dictionary(uniqueKeysWithValues: moves)
        let outcomes = try f.store.complete(jobs.map { job in
            plan[job.reportId]?.group = target[job.reportId] ?? nil
            return Completion(jobId: job.jobId, token: job.leaseToken, result: Self.result(target[job.reportId] ?? nil))
        })
        #expect(outcomes.allSatisfy { $0 == .stored })
        try Self.expectLedger(f.store, plan)
    }

    /// Four connections (four processes, or four nodes on PostgreSQL) claim in batches and
    /// complete what they claimed, all at once: every job is claimed by exactly one of them and
    /// done once, and the ledger holds exactly the plan.
    @Test(arguments: Backend.allCases) func concurrentClaimersCompleteEveryJobOnceWithExactCounts(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        var plan: [Int64: (group: String?, version: String, seen: Int64)] = [:]
        var groupPlan: [Int: String] = [:]
        for n in 0..<300 {
            let version = "2.\(n % 4)"
            let id = try f.store.submit(f.report(n, version: version)).reportId
            // A few hot groups and a tail, as real crashes fall.
            let group = n % 2 == 0 ? "hot0" : (n % 3 == 0 ? "hot1" : "tail\(n % 11)")
            groupPlan[n] = group
            plan[id] = (group, version, f.clock.now)
            f.clock.advance(milliseconds: 7)
        }
        let stores = try (0..<4).map { _ in try f.another() }
        let groupOf = groupPlan
        let claimed = Locked<[Int64]>([])
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { i in
            do {
                while true {
                    let jobs = try stores[i].claim(leaseMs: 600_000, limit: 4)
                    if jobs.isEmpty { break }
                    claimed.mutate { $0 += jobs.map(\.jobId) }
                    let batch = jobs.map { job in
                        let n = Int(String(decoding: job.raw, as: UTF8.self).dropFirst("report ".count)) ?? -1
                        return Completion(jobId: job.jobId, token: job.leaseToken, result: Self.result(groupOf[n]))
                    }
                    let outcomes = try stores[i].complete(batch)
                    if outcomes.contains(.stale) { failures.mutate { $0.append("a fresh lease was stale") } }
                }
            } catch {
                failures.mutate { $0.append("\(error)") }
            }
        }
        #expect(failures.value.isEmpty, "\(failures.value)")
        #expect(claimed.value.count == 300 && Set(claimed.value).count == 300)
        #expect(try f.store.stateCounts()[.done] == 300)
        try Self.expectLedger(f.store, plan)
    }
}
