import Foundation
import TestSupport
import Testing

/// Remote workers over a real network: the master (`stackline serve --workers 0`) runs on one
/// network host of this machine and each `stackline-worker --connect` on another (Linux network
/// namespaces joined by veth pairs, RemoteWorkerHarness), each worker with its own empty cache,
/// so nothing is shared through the file system: debug files reach a worker only from the
/// master's debuginfod endpoint. Needs root (as CI runs); without it every test fails saying so.
@Suite(.serialized) struct RemoteWorkerTests {
    /// Makes a worker's slot process sleep (an hour) on a job's first attempt (TestHooks in
    /// Workers/stackline-worker; STACKLINE_TEST_HOOKS=1 is in every worker's environment).
    static let sleepMarker = "STACKLINE_TEST_HOOK_SLEEP_FIRST_ATTEMPT"

    // MARK: - 1. End to end

    /// 500 real reports through two remote workers: every report done exactly once, each worker
    /// fetched the program's debug file once, and the frames equal a run done entirely locally
    /// (`stackline master --once`) and llvm-symbolizer's answers for the program's addresses.
    @Test func fiveHundredReportsThroughTwoRemoteWorkersMatchALocalRun() throws {
        let c = try RemoteCluster()
        defer { c.shutdown() }
        let program = try CrashProgram.sharedDemo()
        // The program's debug file is in the master's store only (not the Swift runtime's libraries:
        // their frames stay unsymbolicated in both runs alike).
        let added = try c.h.stackline(["symbols", "add", "--symbols", c.h.symbolsPath, program.binary])
        #expect(added.status == 0, "symbols add: \(added.stderr)")

        // Two real crashes of the program (different stacks), 250 distinct variants of each.
        let bases = [try program.report(mode: "index"), try program.report(mode: "segv")]
        let reports = (0..<500).map { variant(of: bases[$0 % 2], number: $0) }
        let paths = try c.h.write(reports)

        let (a, b, read) = (try c.token("worker", name: "wa"), try c.token("worker", name: "wb"), try c.token("read", name: "reader"))
        // No affinity wait: the worker that fetched the program first would otherwise keep every
        // job for 2 s, and with symcaches and batched claims it can finish all 500 in that time.
        // Affinity has its own test below; here both workers must share the work.
        try c.startMaster(["--affinity-wait", "0"])
        try c.startWorker("wa", on: "a", token: a, slots: 2)
        try c.startWorker("wb", on: "b", token: b, slots: 2)
        // Both connected before there is work, so neither can finish it all before the other starts.
        try c.waitUntil("both workers to connect", timeout: 120) {
            Set(try c.workerRows(read).compactMap { $0["name"] as? String }) == ["wa", "wb"]
        }
        let ids = try c.h.submit(paths)
        try #require(ids.count == 500)
        try c.waitForAllDone(500)

        #expect(try c.count("done") == 500)
        #expect(try c.count("failed") == 0)
        let done = doneLines(c.masterLog)
        #expect(done.map(\.report).sorted() == ids.sorted(), "each report completes exactly once")
        #expect(Set(done.compactMap(\.worker)) == ["wa", "wb"], "job done lines name the remote worker")

        // Both workers did work, as the master counts it (and as many jobs as its log says).
        let rows = try c.workerRows(read)
        for name in ["wa", "wb"] {
            let row = rows.first { $0["name"] as? String == name }
            #expect((row?["jobsDone"] as? Int ?? 0) > 0, "\(name): \(rows)")
            #expect(row?["jobsDone"] as? Int == done.filter { $0.worker == name }.count, "\(name): \(rows)")
        }
        // `stackline workers --json` prints the same rows from the database (which the master
        // writes from time to time, so they may come a little later than the API's).
        var listed: [[String: Any]] = []
        try c.waitUntil("`stackline workers` to list both workers", timeout: 120) {
            let out = try c.h.stackline(["workers", "--json", "--db", c.h.dbPath])
            #expect(out.status == 0, "\(out.stderr)")
            listed = (try? JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any])?["workers"] as? [[String: Any]] ?? []
            return Set(listed.compactMap { $0["name"] as? String }) == ["wa", "wb"]
        }
        for row in listed {
            let api = rows.first { $0["name"] as? String == row["name"] as? String }
            #expect(row["id"] as? String == api?["id"] as? String && row["slots"] as? Int == 2, "CLI \(row), API \(String(describing: api))")
        }

        // Fetches, from the master's request log (one line per request, carrying the token id):
        // every debug file that was served (200) went at most once to each worker, and the
        // program's went exactly once to each (its cache started empty and it has no store).
        let log = c.masterLog
        for (name, token) in [("wa", a), ("wb", b)] {
            let fetched = buildIdRequests(log, tokenId: token.id)
            let served = fetched.filter { $0.status == 200 }
            let perPath = Dictionary(grouping: served, by: \.path).mapValues(\.count)
            #expect(perPath.values.allSatisfy { $0 == 1 }, "\(name) fetched a debug file more than once: \(perPath)")
            #expect(
                served.filter { $0.path == "/buildid/\(program.buildID)/debuginfo" }.count == 1,
                "\(name) fetched \(program.name)'s debug file \(served.count) times: \(fetched.map(\.path))")
        }

        print("end to end: jobs done by wa \(done.filter { $0.worker == "wa" }.count), by wb \(done.filter { $0.worker == "wb" }.count); "
            + "debuginfod requests by wa \(buildIdRequests(log, tokenId: a.id).map { "\($0.path) \($0.status)" }), by wb \(buildIdRequests(log, tokenId: b.id).map { "\($0.path) \($0.status)" })")

        // The same 500 reports done entirely locally: a database of their own, two local workers
        // over the same store. Paired by digest, every report's threads are the same.
        let local = try Harness()
        let localIds = try local.submit(paths)
        try #require(localIds.count == 500)
        let run = try runProcess(
            TestPaths.stackline, ["master", "--once", "--workers", "2", "--symbols", c.h.symbolsPath],
            environment: local.environment, timeout: 1800)
        #expect(run.status == 0, "local master: \(run.stderr.suffix(2000))")
        let remoteByDigest = try digests(c.h.dbPath), localByDigest = try digests(local.dbPath)
        #expect(Set(remoteByDigest.keys) == Set(localByDigest.keys))
        let pairs = remoteByDigest.compactMap { digest, id in localByDigest[digest].map { (id, $0) } }
        #expect(pairs.count == 500, "reports paired by digest")
        let mismatches = Locked<[String]>([])
        let failures = Locked<[String]>([])
        let (remoteDB, localDB) = (c.h.dbPath, local.dbPath)
        DispatchQueue.concurrentPerform(iterations: 2) { half in
            for (remoteId, localId) in pairs.enumerated().filter({ $0.offset % 2 == half }).map(\.element) {
                do {
                    let r = try storedReport(db: remoteDB, id: remoteId), l = try storedReport(db: localDB, id: localId)
                    for key in ["threads", "status", "missingBuildIds"] {
                        let same = (r[key] as? NSObject).map { $0.isEqual(l[key]) } ?? (l[key] == nil)
                        if !same { mismatches.mutate { $0.append("report \(remoteId) vs local \(localId): \(key) differs") } }
                    }
                } catch { failures.mutate { $0.append("\(error)") } }
            }
        }
        #expect(failures.value.isEmpty, "\(failures.value.prefix(5))")
        #expect(mismatches.value.isEmpty, "\(mismatches.value.count) differ from the local run: \(mismatches.value.prefix(5))")

        // Debug files in neither store (the Swift runtime's libraries the crashes load) stay listed
        // by `symbols missing`, each a build id the raw reports name; the program's, which the
        // workers fetched, is not listed.
        let missingOut = try c.h.stackline(["symbols", "missing", "--symbols", c.h.symbolsPath, "--json"])
        #expect(missingOut.status == 0, "\(missingOut.stderr)")
        let missingIds = ((try? JSONSerialization.jsonObject(with: Data(missingOut.stdout.utf8))) as? [[String: Any]] ?? [])
            .compactMap { $0["buildId"] as? String }
        #expect(!missingIds.isEmpty, "the runtime's libraries are listed as missing: \(missingOut.stdout.prefix(500))")
        #expect(!missingIds.contains(program.buildID), "\(missingIds)")
        for id in missingIds {
            #expect(bases.contains { String(decoding: $0, as: UTF8.self).lowercased().contains(id) }, "\(id) is an image of the reports")
        }

        // And against an independent oracle: llvm-symbolizer on the program for each crash's frames,
        // checked in reports each worker did.
        for (k, base) in bases.enumerated() {
            let oracle = try llvmSymbolizerFrames(report: base, program: program)
            #expect(oracle.count >= 3, "the program's frames of crash \(k): \(oracle)")
            for name in ["wa", "wb"] {
                let line = done.first { $0.worker == name && (ids.firstIndex(of: $0.report) ?? -1) % 2 == k }
                #expect(line != nil, "\(name) did a report of crash \(k)")
                if let line { expectFramesMatch(try storedReport(db: c.h.dbPath, id: line.report), oracle, "crash \(k) by \(name)") }
            }
        }
    }

    /// report digest → id, by plain SQL.
    func digests(_ db: String) throws -> [String: Int64] {
        var map: [String: Int64] = [:]
        for row in try sqlite(db, "SELECT id, digest FROM reports") {
            if let digest = row["digest"] as? String, let id = row["id"] as? Int { map[digest] = Int64(id) }
        }
        return map
    }

    // MARK: - 2. Symbol affinity

    /// Worker A holds program X's debug file in its own store and B holds Y's; interleaved reports
    /// of X and Y go to their holder, and nothing is fetched for them.
    @Test func jobsGoToTheWorkerThatHoldsTheirDebugFiles() throws {
        let c = try RemoteCluster()
        defer { c.shutdown() }
        let x = try CrashProgram.build("ProgX", in: c.h.dir.path)
        let y = try CrashProgram.build("ProgY", in: c.h.dir.path)
        try #require(x.buildID != y.buildID)
        // Each worker's own store. The master's store holds neither program: then a worker can
        // only ever hold what its own store has (a fetch of X or Y would be a 404), so which worker
        // holds what stays fixed for the whole run and the test measures the claim policy alone.
        // (With both in the master's store, one fallback claim would make A fetch Y and hold both,
        // and from then on every claim of A's would be a "hit".)
        let storeA = c.h.dir.file("store-a"), storeB = c.h.dir.file("store-b")
        for (store, program) in [(storeA, x), (storeB, y)] {
            let out = try c.h.stackline(["symbols", "add", "--symbols", store, program.binary])
            #expect(out.status == 0, "symbols add: \(out.stderr)")
        }
        let (a, b, read) = (try c.token("worker", name: "wa"), try c.token("worker", name: "wb"), try c.token("read", name: "reader"))
        try c.startMaster()
        try c.startWorker("wa", on: "a", token: a, slots: 2, symbols: [storeA])
        try c.startWorker("wb", on: "b", token: b, slots: 2, symbols: [storeB])
        // Both connected (and announcing what they hold) before any job is queued.
        try c.waitUntil("both workers to connect", timeout: 120) {
            let rows = try c.workerRows(read)
            return ["wa", "wb"].allSatisfy { name in rows.contains { $0["name"] as? String == name && ($0["holds"] as? Int ?? 0) >= 1 } }
        }

        let reportX = try x.report(), reportY = try y.report()
        let reports = (0..<200).map { variant(of: $0 % 2 == 0 ? reportX : reportY, number: $0) }
        let ids = try c.h.submit(try c.h.write(reports))
        try #require(ids.count == 200)
        try c.waitForAllDone(200)
        #expect(try c.count("done") == 200)

        let done = doneLines(c.masterLog)
        #expect(done.map(\.report).sorted() == ids.sorted(), "each report completes exactly once")
        let byReport = Dictionary(done.map { ($0.report, $0.worker) }) { first, _ in first }
        let xIds = ids.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        let yIds = ids.enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        let xByA = xIds.filter { byReport[$0] == "wa" }.count, yByB = yIds.filter { byReport[$0] == "wb" }.count
        #expect(xByA * 10 >= xIds.count * 9, "\(xByA) of \(xIds.count) reports of X were done by A, which holds X")
        #expect(yByB * 10 >= yIds.count * 9, "\(yByB) of \(yIds.count) reports of Y were done by B, which holds Y")

        // Nothing fetched for X or Y by their holder.
        let log = c.masterLog
        for (token, program) in [(a, x), (b, y)] {
            let fetched = buildIdRequests(log, tokenId: token.id).filter { $0.path.hasPrefix("/buildid/\(program.buildID)/") }
            #expect(fetched.isEmpty, "\(program.name)'s holder requested it: \(fetched.map(\.path))")
        }
        // Every claim that found its files at the worker counted as a hit.
        let hits = try c.metric("stackline_affinity_claims_total", #"match="hit""#, read: read)
        print("affinity: X by A \(xByA)/\(xIds.count), Y by B \(yByB)/\(yIds.count), hits \(String(describing: hits))")
        #expect((hits ?? 0) >= Double(xByA + yByB), "hits \(String(describing: hits)) for \(xByA + yByB) reports done by their holder")

        // The holder's results are symbolicated from its own store (checked by llvm-symbolizer).
        for (program, base, worker, idsOf) in [(x, reportX, "wa", xIds), (y, reportY, "wb", yIds)] {
            let oracle = try llvmSymbolizerFrames(report: base, program: program)
            #expect(oracle.count >= 3)
            if let id = idsOf.first(where: { byReport[$0] == worker }) {
                expectFramesMatch(try storedReport(db: c.h.dbPath, id: id), oracle, "\(program.name) by \(worker)")
            }
        }
    }

    // MARK: - 3. Failures: a partition, a killed worker, a killed master

    /// `count` distinct reports of the shared demo, the first `sleepers` carrying the marker that
    /// makes a worker sleep on a job's first attempt (TestHooks; the next attempt runs normally).
    /// Submitted in that order, so claimed in that order. Returns all ids and the sleepers'.
    func submitReports(_ c: RemoteCluster, count: Int, sleepers: Int = 0, first: Int = 0) throws -> (ids: [Int64], sleepers: Set<Int64>) {
        let base = try CrashFixture.shared.report(symbolicate: "off")
        let reports = (0..<sleepers).map { variant(of: base, number: first + 100_000 + $0, marker: Self.sleepMarker) }
            + (0..<count).map { variant(of: base, number: first + $0) }
        let ids = try c.h.submit(try c.h.write(reports, subdir: "in-\(first)"))
        try #require(ids.count == reports.count)
        return (ids, Set(ids.prefix(sleepers)))
    }

    /// A cluster for the failure tests: the program in the master's store, the master started with
    /// `lease` and `jobTimeout`, worker A started; B is the test's to start. `--affinity-wait 0`:
    /// these tests are about failures, so a job goes to whichever worker is free (with the default,
    /// a worker that has not fetched the program yet gets only jobs that waited 2 s for the one
    /// that has, and a fast A leaves B nothing to do).
    func failureCluster(lease: Int, jobTimeout: Int) throws -> (RemoteCluster, a: RemoteCluster.Token, b: RemoteCluster.Token, read: RemoteCluster.Token) {
        let c = try RemoteCluster()
        let added = try c.h.stackline(["symbols", "add", "--symbols", c.h.symbolsPath, try CrashFixture.shared.binary()])
        #expect(added.status == 0, "symbols add: \(added.stderr)")
        let (a, b, read) = (try c.token("worker", name: "wa"), try c.token("worker", name: "wb"), try c.token("read", name: "reader"))
        try c.startMaster(["--lease", "\(lease)", "--job-timeout", "\(jobTimeout)", "--retry-delay", "0.2", "--affinity-wait", "0"])
        try c.startWorker("wa", on: "a", token: a, slots: 2)
        return (c, a, b, read)
    }

    /// The sleepers worker `name` started (attempt 1), from the hook's lines in its log (a slot
    /// process logs to the worker's standard error).
    func sleeping(_ c: RemoteCluster, _ name: String, among sleepers: Set<Int64>) -> Set<Int64> {
        Set(hookLines(c.workers[name]?.log ?? "").filter { sleepers.contains($0.report) && ($0.attempt ?? 1) == 1 }.map(\.report))
    }

    /// A alone works a while with one slot asleep in a job; then B joins, and A's link goes down
    /// for three leases and comes back. B finishes A's job, every report is done exactly once, a
    /// late result from A (if one arrives) is refused, and A works again.
    @Test func aPartitionedWorkersJobIsTakenOverAndItsLateResultRefused() throws {
        let lease = 3
        let (c, _, b, read) = try failureCluster(lease: lease, jobTimeout: 60)
        defer { c.shutdown() }
        // A alone: one slot takes the sleeper (claimed first), the other does most of the rest. (A
        // slot leases a few jobs at a time; those behind the sleeper are handed back after a second.)
        let (first, sleepers) = try submitReports(c, count: 30, sleepers: 1)
        try c.waitUntil("A to do jobs with its slot asleep in one", timeout: 300) {
            try !sleeping(c, "wa", among: sleepers).isEmpty && c.count("done") >= 20
        }
        // B joins with more work; the partition comes once B is under way.
        try c.startWorker("wb", on: "b", token: b, slots: 2)
        let (second, _) = try submitReports(c, count: 600, first: 1000)
        try c.waitUntil("B to do some jobs", timeout: 300) { doneLines(c.masterLog).contains { $0.worker == "wb" } }

        // The cable pulled on A's side for three leases: the master hears nothing from A, and its
        // lease on A's job runs out meanwhile.
        try c.net.setLink("to-m", in: "a", up: false)
        Thread.sleep(forTimeInterval: Double(3 * lease))
        try c.net.setLink("to-m", in: "a", up: true)
        let linkUp = Date()
        let ids = first + second
        try c.waitForAllDone(ids.count)

        #expect(try c.count("done") == ids.count)
        #expect(try c.count("failed") == 0)
        var done = doneLines(c.masterLog)
        #expect(done.map(\.report).sorted() == ids.sorted(), "each report completes exactly once")
        for report in sleepers {
            let line = done.first { $0.report == report }
            #expect(line?.worker == "wb", "report \(report), held by A across the partition, was finished by B: \(String(describing: line))")
            #expect((line?.attempt ?? 2) >= 2, "report \(report) was retried after its lease expired")
        }
        let stored = try c.metric("stackline_remote_results_total", #"outcome="stored""#, read: read) ?? 0
        #expect(Int(stored) == ids.count, "every report stored once, from a remote result")

        // A reconnects and takes work again. New reports come once A says, after the partition,
        // that none of its slots is busy (its sleeping slot killed, its refused results answered),
        // so its slots are asking for work. A round of 40 can still all go to B: B's claims wait
        // too, and A's 5 s claim may have just ended empty when they arrive (seen in about one
        // run in ten). So up to five rounds: A must do one of them.
        try c.waitUntil("A to heartbeat again after the partition, its slots idle", timeout: 180) {
            let row = try c.workerRows(read).first { $0["name"] as? String == "wa" }
            return (parseISO8601(row?["lastHeartbeat"] as? String) ?? .distantPast) > linkUp && row?["busy"] as? Int == 0
        }
        var more: [Int64] = []
        for round in 0..<5 {
            more += try submitReports(c, count: 40, first: 2000 + 100 * round).ids
            try c.waitForAllDone(ids.count + more.count)
            done = doneLines(c.masterLog)
            if done.contains(where: { more.contains($0.report) && $0.worker == "wa" }) { break }
        }
        #expect(done.map(\.report).sorted() == (ids + more).sorted(), "each report completes exactly once")
        #expect(done.contains { more.contains($0.report) && $0.worker == "wa" }, "A did work after the partition")

        // A result A sends late (finished while its link was down, delivered once it is back) is
        // refused, never stored: a warning naming A, counted stale. (Whether one arrives is up to
        // A: a result whose lease its heartbeat already reported lost may be dropped unsent.)
        let staleLines = c.masterLog.split(separator: "\n").filter { $0.contains("lease lost before completion; result discarded") }
        #expect(staleLines.allSatisfy { logField("worker", in: $0) == "wa" }, "only A was partitioned: \(staleLines)")
        let stale = try c.metric("stackline_remote_results_total", #"outcome="stale""#, read: read) ?? 0
        #expect(Int(stale) >= staleLines.count, "stale results \(stale), warnings \(staleLines.count)")
        print("partition: late results from A refused by the master: \(staleLines.count) (reports \(staleLines.compactMap { logField("report", in: $0) }))")
    }

    /// A remote worker killed with SIGKILL while it holds a job: the job is retried on B once its
    /// lease runs out, each report is done exactly once, and A's slot processes do not linger.
    @Test func aKilledRemoteWorkersJobIsRetriedElsewhere() throws {
        let (c, _, b, _) = try failureCluster(lease: 3, jobTimeout: 60)
        defer { c.shutdown() }
        let (first, sleepers) = try submitReports(c, count: 20, sleepers: 1)
        try c.waitUntil("A to do jobs with its slot asleep in one", timeout: 300) {
            try !sleeping(c, "wa", among: sleepers).isEmpty && c.count("done") >= 10
        }
        try c.startWorker("wb", on: "b", token: b, slots: 2)
        let (second, _) = try submitReports(c, count: 100, first: 1000)

        let workerA = try #require(c.workers["wa"])
        let children = childPids(of: workerA.pid)
        #expect(!children.isEmpty, "A runs its jobs in slot processes")
        workerA.signal(SIGKILL)
        let exit = try workerA.waitForExit(timeout: 30)
        #expect(exit.signaled && exit.status == SIGKILL)

        let ids = first + second
        try c.waitForAllDone(ids.count)
        #expect(try c.count("done") == ids.count)
        #expect(try c.count("failed") == 0)
        let done = doneLines(c.masterLog)
        #expect(done.map(\.report).sorted() == ids.sorted(), "each report completes exactly once")
        for report in sleepers {
            let line = done.first { $0.report == report }
            #expect(line?.worker == "wb", "report \(report), held by the killed A, was done by B: \(String(describing: line))")
        }
        // The killed worker's slot processes exit with it (the one asleep would otherwise sleep on).
        try c.waitUntil("A's slot processes to exit", timeout: 60) { children.allSatisfy { !processExists($0) } }
    }

    /// The master killed with SIGKILL while every slot of both workers is inside a job, then
    /// restarted on the same database and port: the workers (still running) reconnect and deliver
    /// to the new master, and every report is done exactly once.
    @Test func workersReconnectToARestartedMaster() throws {
        let lease = 3, jobTimeout = 8
        let (c, _, b, read) = try failureCluster(lease: lease, jobTimeout: jobTimeout)
        defer { c.shutdown() }
        try c.startWorker("wb", on: "b", token: b, slots: 2)
        // Twelve sleepers after 50 plain reports, claimed in id order: a slot leases a few jobs at
        // a time and hands back those waiting behind a job still running after a second, so every
        // slot ends up running a sleeper; once the results finished before are delivered (at most
        // a second or so later), nothing can complete around the kill: no "job done" line can be
        // lost with the master. The workers end each sleeper at the job timeout and report it to
        // whichever master is up; second attempts run normally.
        let base = try CrashFixture.shared.report(symbolicate: "off")
        let reports = (0..<50).map { variant(of: base, number: $0) }
            + (0..<12).map { variant(of: base, number: 100_000 + $0, marker: Self.sleepMarker) }
            + (50..<150).map { variant(of: base, number: $0) }
        let ids = try c.h.submit(try c.h.write(reports))
        try #require(ids.count == reports.count)
        let sleepers = Set(ids[50..<62])
        try c.waitUntil("all four slots to sleep in a job", timeout: 600) {
            sleeping(c, "wa", among: sleepers).count + sleeping(c, "wb", among: sleepers).count >= 4
        }
        // Every slot asleep: what finished before is delivered within about a second, then the
        // count stands still until the sleepers end.
        Thread.sleep(forTimeInterval: 2.5)
        let doneBeforeKill = try c.count("done")
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try c.count("done") == doneBeforeKill, "nothing completes while every slot is asleep")
        let first = try #require(c.master)
        first.signal(SIGKILL)
        _ = try first.waitForExit(timeout: 30)
        #expect(doneBeforeKill >= 50 && doneBeforeKill < ids.count - 4, "the kill comes mid-run, with every slot asleep (\(doneBeforeKill) done)")
        Thread.sleep(forTimeInterval: 1)
        let restarted = Date()
        try c.startMaster(["--lease", "\(lease)", "--job-timeout", "\(jobTimeout)", "--retry-delay", "0.2", "--affinity-wait", "0"])
        try c.waitForAllDone(ids.count)

        #expect(try c.count("done") == ids.count)
        #expect(try c.count("failed") == 0)
        #expect(doneLines(c.masterLog).map(\.report).sorted() == ids.sorted(), "each report completes exactly once")
        let stillRunning = c.workers.values.allSatisfy { $0.isRunning }
        #expect(stillRunning, "the workers rode out the restart")
        #expect(doneLines(c.masters.last?.log ?? "").contains { $0.worker == "wa" } && doneLines(c.masters.last?.log ?? "").contains { $0.worker == "wb" },
                "both workers did jobs for the restarted master")
        try c.waitUntil("both workers to be listed again", timeout: 120) {
            let rows = try c.workerRows(read)
            return ["wa", "wb"].allSatisfy { name in
                rows.contains { $0["name"] as? String == name && (parseISO8601($0["lastHeartbeat"] as? String) ?? .distantPast) > restarted }
            }
        }
    }

    // MARK: - 4. Tokens that are refused

    /// A worker whose token was revoked, and one whose token has scope `ingest`: each exits non-zero
    /// with a message naming the refusal (never the token), and gets no job.
    @Test func aWorkerWithARefusedTokenExitsAndGetsNoJob() throws {
        let c = try RemoteCluster()
        defer { c.shutdown() }
        let revoked = try c.token("worker", name: "gone")
        let revokedOut = try c.h.stackline(["tokens", "revoke", "--db", c.h.dbPath, "\(revoked.id)"])
        #expect(revokedOut.status == 0, "\(revokedOut.stderr)")
        let ingest = try c.token("ingest", name: "sdk")
        try c.startMaster()
        let base = try CrashFixture.shared.report(symbolicate: "off")
        let ids = try c.h.submit(try c.h.write((0..<3).map { variant(of: base, number: $0) }))
        try #require(ids.count == 3)

        // The revoked one on the command line, the ingest one through STACKLINE_TOKEN.
        let cases: [(name: String, token: RemoteCluster.Token, process: NamespaceProcess)] = [
            ("revoked", revoked, try c.startWorker("revoked", on: "a", token: revoked)),
            ("ingestonly", ingest, try c.startWorker("ingestonly", on: "b", token: nil, environment: ["STACKLINE_TOKEN": ingest.secret])),
        ]
        for (name, token, process) in cases {
            let exit = try process.waitForExit(timeout: 120)
            #expect(!exit.signaled && exit.status != 0, "\(name) exited \(exit)")
            let output = process.log
            let lowered = output.lowercased()
            #expect(
                ["refused", "rejected", "unauthorized", "forbidden", "401", "403", "revoked", "not allowed", "scope"].contains { lowered.contains($0) },
                "\(name)'s message names the refusal: \(output)")
            let secret = String(token.secret.split(separator: "_").last ?? "")
            #expect(!output.contains(token.secret) && !output.contains(secret), "\(name) printed its token")
        }
        // No job went to either: the master never logged them as a worker, and the queue is as it was.
        let log = c.masterLog
        #expect(!log.contains("worker=revoked") && !log.contains("worker=ingestonly"), "\(log.suffix(3000))")
        #expect(try c.count("queued") == 3)
        #expect(try c.count("running") == 0)
        #expect(try c.count("done") == 0)
    }

    // MARK: - 5. Grouping rules

    /// The master's grouping rules reach a remote worker's slot processes in their own spawn
    /// environment (the worker sets nothing in its own at run time). The worker is started with
    /// STACKLINE_GROUPING_RULES naming rules of version 44, which must lose to the master's: a
    /// master with rules of version 43 makes groups of version 43, and a master without a rules
    /// file makes the built-in version 1. The oracle is the version each test wrote in its file,
    /// read back from the master's `groups` table with the sqlite3 shell.
    @Test func theMastersGroupingRulesReachTheSlotProcesses() throws {
        for (masterVersion, expected) in [(Optional(43), "43"), (nil, "1")] {
            let c = try RemoteCluster(workerHosts: ["a"])
            defer { c.shutdown() }
            let workerRules = c.h.dir.file("worker-rules.json")
            try GroupingRulesEndToEndTests.rules(version: 44).write(to: URL(fileURLWithPath: workerRules))
            var masterArguments: [String] = []
            if let masterVersion {
                let masterRules = c.h.dir.file("master-rules.json")
                try GroupingRulesEndToEndTests.rules(version: masterVersion).write(to: URL(fileURLWithPath: masterRules))
                masterArguments = ["--grouping-rules", masterRules]
            }
            let token = try c.token("worker", name: "rules")
            try c.startMaster(masterArguments)
            let base = try CrashFixture.shared.report(symbolicate: "off")
            let ids = try c.h.submit(try c.h.write((0..<3).map { variant(of: base, number: $0) }))
            try #require(ids.count == 3)
            try c.startWorker("rules", on: "a", token: token, slots: 2, environment: ["STACKLINE_GROUPING_RULES": workerRules])
            try c.waitForAllDone(3, timeout: 300)
            let out = try runProcess("sqlite3", [c.h.dbPath, "SELECT DISTINCT rules_version FROM groups ORDER BY 1"])
            #expect(out.status == 0, "\(out.stderr)")
            #expect(out.stdout.split(separator: "\n").map(String.init) == [expected], "master rules \(masterVersion.map(String.init) ?? "none")")
        }
    }
}
