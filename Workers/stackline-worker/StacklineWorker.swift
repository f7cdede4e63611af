#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import Grouping
import IsolatedParsing
import Logging
import StacklineLogging
import WorkerProtocol
import ReportFormats
import ReportModel
import ServiceRuntime
import SymbolStore
import Symbolication
import SystemCalls

/// A stateless symbolication worker. Started by `stackline master` (or by a remote worker's
/// connection, for each of its slots), it reads job frames on stdin and writes reply frames on
/// stdout, logs on stderr. With `--connect` it is a worker on another machine: it connects to a
/// `stackline serve` and runs its slots as such child processes. It never opens the job database.
@main
struct StacklineWorker: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stackline-worker",
        abstract: "Symbolicates jobs: framed on stdin (started by `stackline master`), or from a master over the network (--connect).",
        discussion: """
            With --connect, the worker connects to a `stackline serve` over HTTP with a token of \
            scope `worker` (--token or $STACKLINE_TOKEN), runs --slots jobs at once, each in a \
            child process, and uses the debug files of its --symbols stores (a build machine's \
            own output) and of its --cache, which it fills from the master's debuginfod \
            endpoint as jobs need them. See docs/workers.md.
            """)

    @Option(help: "Debug-file store; repeat to search several in order (default without --connect: $STACKLINE_SYMBOLS or ./symbols).")
    var symbols: [String] = []

    @Option(name: .customLong("store-name"), help: "What reports call each --symbols store, in the same order (`imageSymbols[].searched`); default: \"symbol store\" for one, the paths for several.")
    var storeNames: [String] = []

    @Option(help: "Debug files kept open across jobs.")
    var cacheCapacity = 32

    @Option(help: "The master's URL, e.g. https://master:8080: work for a `stackline serve` over the network.")
    var connect: String?

    @Option(help: "With --connect: a token of scope `worker` (default: $STACKLINE_TOKEN, which keeps it off the command line).")
    var token: String?

    @Option(help: "With --connect: jobs run at once, each in its own child process.")
    var slots = 2

    @Option(help: "With --connect: where fetched debug files are kept (the store layout).")
    var cache = "stackline-cache"

    @Option(help: "With --connect: the cache's size bound (bytes, or with K, M, G, T); least recently used files go first.")
    var cacheSize = "20G"

    @Option(help: "With --connect: the name `stackline workers` shows (default: the host name).")
    var name: String?

    @Option(help: "Grouping rules file (default: $STACKLINE_GROUPING_RULES, else the built-in rules); `stackline master` passes its own.")
    var groupingRules: String?

    @Flag(help: "Parse reports only (framed on stdin, summaries on stdout): how `stackline serve` parses untrusted input outside its own process.")
    var parse = false

    func validate() throws {
        guard !parse || connect == nil else { throw ValidationError("--parse and --connect exclude each other") }
        guard connect != nil || (token == nil && name == nil) else { throw ValidationError("--token and --name need --connect") }
        guard (1...256).contains(slots) else { throw ValidationError("--slots must be between 1 and 256") }
        guard storeNames.isEmpty || storeNames.count == symbols.count else {
            throw ValidationError("--store-name is given \(storeNames.count) times for \(symbols.count) --symbols stores; give one per store")
        }
        guard ByteSize.parse(cacheSize) != nil else {
            throw ValidationError("--cache-size \(cacheSize) is not a size such as 20G, 500M or 1073741824")
        }
    }

    func run() throws {
        SystemCall.keepFreedMemoryForReuse()
        LoggingSystem.bootstrap { EscapingLogHandler.standardError(label: $0) }
        var logger = Logger(label: "stackline.worker")
        logger[metadataKey: "pid"] = "\(getpid())"
        // The one read of the environment: everything below takes values from it.
        let environment = StacklineEnvironment(ProcessInfo.processInfo.environment)
        // Read once; a parse child uses the default on an unusable value, the other modes refuse it.
        let maxFrame = Result { () throws(FrameLimitError) in try environment.maxFrame() }
        Framing.use(maxFrame: (try? maxFrame.get()) ?? Framing.defaultMaxFrame)
        if let connect {
            try runConnected(to: connect, environment: environment, maxFrame: maxFrame, logger: logger)
            return
        }
        if parse {
            try runParseService(hooks: TestHooks(enabled: environment.testHooks, logger: logger), logger: logger)
            return
        }
        let rules: GroupingRules
        do { rules = try GroupingRules.load(fileOrStandard: groupingRules ?? environment.groupingRules) } catch {
            // Every job would be grouped wrongly: refuse to start, so the master reports it.
            logger.error("\(error.description)")
            throw ExitCode(2)
        }
        // The master checks this too; a worker started by hand must not guess.
        if case .failure(let error) = maxFrame {
            logger.error("\(error.description)")
            throw ExitCode(2)
        }
        let symbolicator = Symbolicator(
            stores: symbols.isEmpty
                ? [SymbolStoreDirectory.resolve(option: nil, variable: environment.symbols)] : symbols.map { SymbolStoreDirectory(root: $0) },
            cacheCapacity: cacheCapacity, storeNames: storeNames.isEmpty ? nil : storeNames)
        symbolicator.debugFiles.warn = { logger.warning("\($0.description)") }
        let worker = JobRunner(
            symbolicator: symbolicator,
            grouper: Grouper(rules: rules),
            hooks: TestHooks(enabled: environment.testHooks, logger: logger))
        exitWithParent()
        let replies = try replyChannel(logger: logger)
        let reader = FrameReader(fd: 0)
        while true {
            let frame: Data?
            do { frame = try reader.read() } catch FrameError.endOfStream { return } catch {
                logger.error("cannot read job frame", metadata: ["error": "\(error)"])
                throw ExitCode(2)
            }
            guard let frame else { continue }
            let reply = worker.replyFrame(for: frame)
            do {
                try Framing.write(reply, to: replies)
            } catch {
                // The master is gone or the pipe broke: nothing left to serve.
                logger.error("cannot write reply", metadata: ["error": "\(error)"])
                throw ExitCode(3)
            }
        }
    }

    /// Frames get a private copy of stdout; fd 1 then points at stderr, so a stray print (ours or
    /// a library's) lands in the log instead of corrupting the protocol.
    private func replyChannel(logger: Logger) throws -> Int32 {
        let replies = dup(1)
        guard replies >= 0, dup2(2, 1) >= 0 else {
            logger.error("cannot set up the reply channel", metadata: ["errno": "\(errno)"])
            throw ExitCode(2)
        }
        return replies
    }

    /// `--parse`: `serve`'s parse child. Its address space is capped, so an input that makes a
    /// parser allocate without bound ends this process, which `serve` replaces.
    private func runParseService(hooks: TestHooks, logger: Logger) throws {
        do { try SystemCall.limitAddressSpace(to: ParseService.addressSpaceLimit) } catch {
            logger.warning("cannot cap the parse child's address space", metadata: ["error": "\(error)"])
        }
        exitWithParent()
        let replies = try replyChannel(logger: logger)
        do { try ParseService.serve(input: 0, output: replies, beforeParse: { hooks.apply(toInput: $0, stage: .parse) }) } catch {
            logger.error("\(error.description)")
            throw ExitCode(3)
        }
    }

    /// `--connect`: a worker on another machine. Its slots are this program in pipe mode,
    /// searching the local stores, then the cache.
    private func runConnected(
        to server: String, environment: StacklineEnvironment, maxFrame: Result<Int, FrameLimitError>, logger: Logger
    ) throws {
        guard let secret = token ?? environment.token, !secret.isEmpty else {
            logger.error("--connect needs a token of scope `worker`: --token or $STACKLINE_TOKEN")
            throw ExitCode(2)
        }
        if case .failure(let error) = maxFrame {
            logger.error("\(error.description)")
            throw ExitCode(2)
        }
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let cacheRoot = URL(fileURLWithPath: cache).standardizedFileURL.path
        let stores = symbols.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        let settings = RemoteSettings(
            server: server, token: secret, slots: slots, name: name ?? ProcessInfo.processInfo.hostName,
            localStores: stores.map { SymbolStoreDirectory(root: $0) }, cacheDirectory: cacheRoot,
            cacheBytes: ByteSize.parse(cacheSize) ?? 0, slotExecutable: me,
            // The cache is named by role in reports; the build machine's own stores as given.
            slotArguments: (stores + [cacheRoot]).flatMap { ["--symbols", $0] }
                + ((storeNames.isEmpty ? stores : storeNames) + ["debug files fetched from the master"]).flatMap { ["--store-name", $0] }
                + ["--cache-capacity", "\(cacheCapacity)"],
            environment: environment.variables)
        do {
            try RemoteConnection(settings: settings, logger: logger).run()
        } catch let error as RemoteFatalError {
            logger.error("\(error.description)")
            throw ExitCode(2)
        } catch {
            logger.error("cannot run: \(error)")
            throw ExitCode(2)
        }
    }

    /// A worker whose master was killed with -9 must not linger: poll for re-parenting.
    private func exitWithParent() {
        let parent = getppid()
        let thread = Thread {
            while true {
                if getppid() != parent { _exit(0) }
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
        thread.start()
    }
}

/// Parses and symbolicates one job; keeps the Symbolicator (and its debug-file cache) across jobs.
final class JobRunner {
    let symbolicator: Symbolicator
    let grouper: Grouper
    let hooks: TestHooks
    let registry = FormatRegistry.standard

    init(symbolicator: Symbolicator, grouper: Grouper, hooks: TestHooks) {
        self.symbolicator = symbolicator
        self.grouper = grouper
        self.hooks = hooks
    }

    /// The encoded reply to one job frame, always under the frame limit: a result too large
    /// to send becomes a permanent failure naming its size, since every attempt would make
    /// the same reply (and a worker that cannot send it would only exit and be retried).
    func replyFrame(for frame: Data) -> Data {
        let reply = handle(frame)
        // The report travels compressed, but the limit holds for its JSON: that is what the
        // master's readers inflate, so a result is as large as it always was, whatever it compresses to.
        var size = reply.result?.size ?? 0
        if size <= Framing.maxFrame {
            do { return try reply.encodedFrame() } catch {
                if case .tooLarge(let frameSize) = error { size = frameSize }
            }
        }
        let what = reply.kind == .result ? "symbolicated report" : "reply"
        return JobReply.failureFrame(
            .permanentError, jobId: reply.jobId,
            message: "\(what) is \(size) bytes, over the frame limit of \(Framing.describe(bytes: Framing.maxFrame))")
    }

    func handle(_ frame: Data) -> JobReply {
        let request: JobRequest
        do { request = try JobRequest(frame: frame) } catch {
            return JobReply(kind: .internalError, jobId: -1, message: "malformed job frame: \(error)")
        }
        hooks.apply(to: request)
        let raw: RawReport
        do { raw = try registry.parse(request.raw, format: request.format) } catch {
            return JobReply(kind: .inputError, jobId: request.jobId, message: error.description)
        }
        var report = symbolicator.symbolicate(raw)
        let group = grouper.group(&report)
        report.id = request.reportId
        do {
            var result = try CompressedResult(report)
            hooks.apply(to: &result, of: request)
            return JobReply(kind: .result, jobId: request.jobId, result: result, group: group)
        } catch {
            return JobReply(kind: .internalError, jobId: request.jobId, message: "cannot encode the report: \(error)")
        }
    }
}

/// Misbehaviour on demand for the end-to-end tests; inert unless STACKLINE_TEST_HOOKS=1.
/// A report containing a marker string makes the worker hang or crash. A parse child
/// (`--parse`) answers the same markers with `PARSE_` after `STACKLINE_TEST_HOOK_`
/// (`STACKLINE_TEST_HOOK_PARSE_SEGV`), so a report meant to crash its symbolication still gets
/// past `serve`'s parse and is stored.
struct TestHooks {
    static let sleepFirstAttempt = "SLEEP_FIRST_ATTEMPT"
    static let hang = "HANG"
    static let segfault = "SEGV"
    static let sigkill = "SIGKILL"
    static let corruptResult = "STACKLINE_TEST_HOOK_CORRUPT_RESULT"

    enum Stage: String {
        case symbolication = "STACKLINE_TEST_HOOK_"
        case parse = "STACKLINE_TEST_HOOK_PARSE_"
    }

    let enabled: Bool
    let logger: Logger

    /// `enabled`: `STACKLINE_TEST_HOOKS=1` (`StacklineEnvironment.testHooks`).
    init(enabled: Bool, logger: Logger) {
        self.enabled = enabled
        self.logger = logger
    }

    /// A result whose bytes are cut in half, as a faulty worker or link would deliver it.
    func apply(to result: inout CompressedResult, of request: JobRequest) {
        guard enabled, String(decoding: request.raw, as: UTF8.self).contains(Self.corruptResult) else { return }
        logger.warning("test hook: corrupting the result", metadata: ["report": "\(request.reportId)"])
        result.compressed = result.compressed.prefix(result.compressed.count / 2)
    }

    func apply(to request: JobRequest) {
        apply(toInput: request.raw, stage: .symbolication, attempt: request.attempt, report: "\(request.reportId)")
    }

    /// A job's report, or a parse child's input (`attempt` 1, no report id yet).
    func apply(toInput raw: Data, stage: Stage, attempt: Int = 1, report: String = "unstored") {
        guard enabled else { return }
        let text = String(decoding: raw, as: UTF8.self)
        func marked(_ name: String) -> Bool { text.contains(stage.rawValue + name) }
        if marked(Self.segfault) {
            logger.warning("test hook: crashing with SIGSEGV", metadata: ["report": "\(report)"])
            // Default disposition, so the Swift backtracer does not intercept the signal.
            signal(SIGSEGV, SIG_DFL)
            raise(SIGSEGV)
        }
        if marked(Self.sigkill) {
            // What the kernel's OOM killer does to a worker that allocates too much.
            logger.warning("test hook: killing myself with SIGKILL", metadata: ["report": "\(report)"])
            raise(SIGKILL)
        }
        if marked(Self.sleepFirstAttempt) && attempt == 1 || marked(Self.hang) {
            logger.warning("test hook: sleeping", metadata: ["report": "\(report)", "attempt": "\(attempt)"])
            sleep(3600)
        }
    }
}

/// `20G`, `500M`, `64K`, `1T` (powers of 1024, an optional trailing `B` or `iB`) or plain bytes.
enum ByteSize {
    static func parse(_ text: String) -> Int64? {
        var digits = Substring(text.uppercased())
        for suffix in ["IB", "B"] where digits.hasSuffix(suffix) && digits.count > suffix.count {
            digits = digits.dropLast(suffix.count)
            break
        }
        let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        var unit: Int64 = 1
        if let last = digits.last, let u = units[last] {
            unit = u
            digits = digits.dropLast()
        }
        guard let n = Int64(digits), n > 0 else { return nil }
        let (product, overflow) = n.multipliedReportingOverflow(by: unit)
        return overflow ? nil : product
    }
}
