import ArgumentParser
import Foundation
import Storage
import JSONFormat
import ReportModel
import APIModel
import SymbolStore

extension SymbolsCommand {
    /// `stackline symbols upload`: what a build machine runs after each build.
    struct Upload: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send debug files to a `stackline serve`, only those it lacks.",
            discussion: """
                Files and directories are walked as `symbols add` walks them (zips and tar \
                archives included) and every debug file is identified locally. The server is \
                asked which of them it lacks (POST /api/v1/symbols/missing) and only those are \
                sent, each streamed from disk (POST /api/v1/symbols); an archive is sent whole \
                when any file in it is wanted. A second run over the same files sends nothing. \
                The token (scope `symbols`) comes from --token or $STACKLINE_TOKEN and is never \
                printed. Exits 1 when a file was refused, locally or by the server.
                """)

        @Option(help: "The server's base URL, e.g. http://symbols.example:8080 (default: $STACKLINE_SERVER).")
        var server: String?
        @Option(help: "A token of scope `symbols` (default: $STACKLINE_TOKEN, which keeps it off the command line).")
        var token: String?
        @Flag(help: "Wait until the reports requeued by these debug files are processed.")
        var wait = false
        @Option(help: "With --wait, give up after this many seconds (exit status 1).")
        var timeout: Double?
        @Flag(help: "Machine-readable output.")
        var json = false
        @Argument(help: "Files or directories holding debug files.")
        var paths: [String]

        /// The files to send, in the order found: for each build-id the server wants, the local
        /// file with the most debug information, plus an image when that one is not (the
        /// executable role). A stripped binary beside its unstripped build is not sent.
        static func choose(_ found: [LocalDebugFile], missing: Set<BuildID>) -> [String] {
            var picked: Set<String> = []
            let offers = found.flatMap { file in file.offers.map { (upload: file.upload, offer: $0) } }
            for id in missing {
                let candidates = offers.filter { $0.offer.buildId == id }
                let rank = { (o: StoreOffer) in o.quality * 2 + (o.executable ? 1 : 0) }
                guard let best = candidates.max(by: { rank($0.offer) < rank($1.offer) }) else { continue }
                picked.insert(best.upload)
                if !best.offer.executable, let image = candidates.filter(\.offer.executable).max(by: { rank($0.offer) < rank($1.offer) }) {
                    picked.insert(image.upload)
                }
            }
            var ordered: [String] = []
            for file in found where picked.contains(file.upload) && !ordered.contains(file.upload) { ordered.append(file.upload) }
            return ordered
        }

        func validate() throws {
            if timeout != nil && !wait { throw ValidationError("--timeout only applies with --wait") }
        }

        func run() throws {
            guard let base = server ?? processEnvironment.server else {
                throw ValidationError("no server: pass --server URL or set STACKLINE_SERVER")
            }
            guard let secret = token ?? processEnvironment.token else {
                throw ValidationError("no token: pass --token or set STACKLINE_TOKEN (a token of scope symbols)")
            }
            let client: ServerClient
            do { client = try ServerClient(base: base, token: secret) } catch { throw fail("stackline symbols upload: \(error)") }

            // 1. What is here.
            var skipped: [String] = []
            var found: [LocalDebugFile] = []
            var outcome = UploadJSON()
            for path in paths {
                for (file, result) in SymbolStoreDirectory.identifyTree(path: path, limits: processEnvironment.storeLimits, skipped: &skipped) {
                    switch result {
                    case .success(let local): found.append(local)
                    case .failure(let error):
                        outcome.refusedLocally.append(RefusedFile(path: file, error: error.description))
                        printError("stackline symbols upload: refused \(error)")
                    }
                }
            }
            outcome.skipped = skipped.count

            // 2. What the server lacks, and the files that carry it (an archive once).
            let offers = Array(Set(found.flatMap(\.offers))).sorted { ($0.buildId, $0.executable ? 1 : 0) < ($1.buildId, $1.executable ? 1 : 0) }
            let missing: Set<BuildID>
            do { missing = offers.isEmpty ? [] : Set(try client.missing(offers).missing) } catch {
                throw fail("stackline symbols upload: \(error)")
            }
            let uploads = Self.choose(found, missing: missing)
            outcome.upToDate = found.map(\.path).filter { path in !uploads.contains { path == $0 || path.hasPrefix($0 + "/") } }

            // 3. Send them, one request per file, streamed from disk.
            let progress = UploadProgress(files: uploads)
            for (index, path) in uploads.enumerated() {
                let answer: AddReport
                do {
                    answer = try client.upload(path) { sent, total in progress.update(file: index, sent: sent, total: total) }
                } catch {
                    progress.finish()
                    throw fail("stackline symbols upload: \(path): \(error)")
                }
                progress.done(file: index)
                outcome.uploaded.append(UploadedFile(path: path, answer: answer))
                outcome.requeuedReportIds += answer.requeuedReportIds
                if !json {
                    for line in answer.files {
                        let id = line.buildId?.hex ?? ""
                        switch line.outcome {
                        case "refused": printError("stackline symbols upload: the server refused \(line.error ?? line.path)")
                        case "kept": printLine("kept     \(id)  \(line.path): \(line.reason ?? "")")
                        default: printLine("\(line.outcome.padding(toLength: 8, withPad: " ", startingAt: 0)) \(id)  \(line.path)")
                        }
                    }
                }
            }
            progress.finish()
            outcome.bytesSent = progress.totalSent

            // 4. Wait for the reports the new files requeued.
            var finished = true
            if wait && !outcome.requeuedReportIds.isEmpty {
                finished = try WaitProgress(db: RemoteJobStates(client: client), reportIds: outcome.requeuedReportIds, timeout: timeout).run()
            }

            if json {
                print(try encodeJSON(outcome))
            } else {
                print(outcome.summaryLine)
                if !outcome.requeuedReportIds.isEmpty {
                    let n = outcome.requeuedReportIds.count
                    print("requeued \(n) report\(n == 1 ? "" : "s") that lacked these debug files" + (wait && finished ? "; all processed" : ""))
                }
            }
            if !finished { throw fail("stackline symbols upload: gave up waiting after \(timeout ?? 0) s; the reports stay queued") }
            if outcome.refusedCount > 0 { throw ExitCode(1) }
        }
    }
}

/// The `symbols upload --json` document.
struct UploadJSON: Encodable {
    /// Each file sent and the server's answer for what was in it.
    var uploaded: [UploadedFile] = []
    /// Debug files not sent: the server had them (as good, in every role), or a file sent
    /// carries the same build-id with at least as much.
    var upToDate: [String] = []
    /// Files refused before sending (not readable, corrupt, …).
    var refusedLocally: [RefusedFile] = []
    /// Files passed over: not debug files.
    var skipped = 0
    var bytesSent: Int64 = 0
    var requeuedReportIds: [Int64] = []

    var refusedCount: Int { refusedLocally.count.saturatingAdding(uploaded.map(\.answer.summary.refused).saturatingSum()) }

    var summaryLine: String {
        let stored = uploaded.map(\.answer.summary.stored).saturatingSum()
        let kept = uploaded.map(\.answer.summary.alreadyPresent).saturatingSum()
        return "uploaded \(uploaded.count) file\(uploaded.count == 1 ? "" : "s") (\(bytesSent) bytes): stored \(stored), already present \(kept); "
            + "up to date \(upToDate.count), skipped \(skipped) (not debug files), refused \(refusedCount)"
    }
}

/// One file sent, with the server's `AddReport` for it.
struct UploadedFile: Encodable {
    var path: String
    var answer: AddReport
}

/// One file refused before it was sent.
struct RefusedFile: Encodable {
    var path: String
    var error: String
}

/// Job states from the server, for `WaitProgress`.
struct RemoteJobStates: JobStateSource {
    let client: ServerClient

    func states(reportIds: [Int64]) throws -> [Int64: JobState] {
        var states: [Int64: JobState] = [:]
        for report in try client.reprocessing(reportIds).reports {
            guard let state = JobState(rawValue: report.state) else {
                throw ServerClientError(.transport, "the server's answer names an unknown job state \"\(TerminalText.escape(report.state))\"")
            }
            states[report.id] = state
        }
        return states
    }

    func runningCount() throws -> Int { try client.reprocessing([]).running }

    var idleHint: String { "waiting for the server's workers: none is running a job (is `stackline serve` started with --workers 0?)" }
}

/// Upload progress on stderr, on a terminal only: a bar over the bytes of all files.
/// Sendable: `lock` guards `sent` and `shown`; the rest is immutable after init.
final class UploadProgress: @unchecked Sendable {
    private let lock = NSLock()
    private let names: [String]
    private let sizes: [Int64]
    private let total: Int64
    private var sent: [Int64]
    private let tty = isatty(2) == 1
    private var shown = false

    init(files: [String]) {
        names = files.map { ($0 as NSString).lastPathComponent }
        sizes = files.map { path in (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? 0 }
        total = sizes.saturatingSum()
        sent = Array(repeating: 0, count: files.count)
    }

    var totalSent: Int64 { lock.withLock { sent.saturatingSum() } }

    func update(file: Int, sent bytes: Int64, total _: Int64) {
        lock.withLock {
            sent[file] = min(bytes, sizes[file])
            draw(file: file)
        }
    }

    func done(file: Int) {
        lock.withLock {
            sent[file] = sizes[file]
            draw(file: file)
        }
    }

    func finish() {
        lock.withLock {
            if shown { FileHandle.standardError.write(Data("\n".utf8)) }
            shown = false
        }
    }

    private func draw(file: Int) {
        guard tty else { return }
        shown = true
        let done = sent.saturatingSum()
        let width = 30
        let filled = total == 0 ? width : Int(Int64(width) * done / total)
        let bar = "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "]"
        let mib = { (bytes: Int64) in String(format: "%.1f", Double(bytes) / 1_048_576) }
        let line = "\(bar) \(mib(done))/\(mib(total)) MiB  file \(file + 1)/\(names.count) \(names[file])"
        FileHandle.standardError.write(Data(("\r\u{1b}[K" + TerminalText.escape(line)).utf8))
    }
}
