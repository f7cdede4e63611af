import Foundation
import Storage

/// Where `WaitProgress` reads job states: the database (`submit --wait`) or a server
/// (`symbols upload --wait`).
protocol JobStateSource {
    /// The newest job state of each of `reportIds` that has a job.
    func states(reportIds: [Int64]) throws -> [Int64: JobState]
    /// Jobs running anywhere in the queue.
    func runningCount() throws -> Int
    /// What to say when nothing runs: who should be claiming the work.
    var idleHint: String { get }
}

/// The database's job states, whichever the backend.
struct StoreJobStates: JobStateSource {
    let store: any SQLStore

    func states(reportIds: [Int64]) throws -> [Int64: JobState] { try store.states(reportIds: reportIds) }
    func runningCount() throws -> Int { try store.stateCounts()[.running] ?? 0 }
    var idleHint: String { "waiting for a master: run `stackline master`" }
}

/// Polls until the given reports' jobs are all done or failed, showing progress on stderr:
/// a bar with rate and ETA on a terminal, a plain line every few seconds otherwise.
struct WaitProgress {
    let db: any JobStateSource
    let reportIds: [Int64]
    /// Seconds before giving up; nil waits for ever.
    var timeout: Double?
    var pollInterval = 0.2
    /// Seconds without progress, and without any job running, before the hint that no master
    /// seems to be running.
    var hintAfter = 3.0

    /// True when every report finished, false when `timeout` ran out first.
    func run() throws -> Bool {
        let start = Date()
        let total = reportIds.count
        let tty = isatty(2) == 1
        var lastLine = Date.distantPast
        var lastProgress = start
        var hinted = false
        var pending = Set(reportIds)
        defer { if tty && total > 1 { FileHandle.standardError.write(Data("\n".utf8)) } }
        while true {
            let states = try db.states(reportIds: Array(pending))
            let before = pending.count
            pending = pending.filter { states[$0] != .done && states[$0] != .failed }
            if pending.count < before || pending.contains(where: { states[$0] == .running }) { lastProgress = Date() }
            let done = total - pending.count
            if total > 1 {
                let elapsed = Date().timeIntervalSince(start)
                let rate = elapsed > 0 ? Double(done) / elapsed : 0
                let eta = rate > 0 ? Double(total - done) / rate : nil
                if tty {
                    FileHandle.standardError.write(Data(("\r" + bar(done, total, rate: rate, eta: eta)).utf8))
                } else if pending.isEmpty || Date().timeIntervalSince(lastLine) >= 2 {
                    lastLine = Date()
                    FileHandle.standardError.write(Data((plain(done, total, rate: rate, eta: eta) + "\n").utf8))
                }
            }
            if pending.isEmpty { return true }
            if let timeout, Date().timeIntervalSince(start) >= timeout { return false }
            // No job of the whole queue running: nobody is claiming work.
            if !hinted, Date().timeIntervalSince(lastProgress) >= hintAfter, try db.runningCount() == 0 {
                hinted = true
                FileHandle.standardError.write(Data(((tty && total > 1 ? "\n" : "") + db.idleHint + "\n").utf8))
            }
            Thread.sleep(forTimeInterval: pollInterval)
        }
    }

    private func bar(_ done: Int, _ total: Int, rate: Double, eta: Double?) -> String {
        let width = 30
        let filled = total == 0 ? width : width * done / total
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            + plain(done, total, rate: rate, eta: eta)
    }

    private func plain(_ done: Int, _ total: Int, rate: Double, eta: Double?) -> String {
        let etaText = eta.map { String(format: "ETA %.0fs", $0) } ?? "ETA ?"
        return String(format: "%d/%d done, %.1f reports/s, ", done, total, rate) + etaText
    }
}
