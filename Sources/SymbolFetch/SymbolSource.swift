import Foundation
import Metrics
import ReportModel
import ServiceClient

/// One place debug files are fetched from: a server speaking the debuginfod web API
/// (`GET /buildid/ID/debuginfo`, `…/executable`): elfutils' `debuginfod`, a distribution's,
/// or a Stackline master (a remote worker's only source).
///
/// Each source keeps its own state, so one that is slow or down costs only itself:
/// - **Remembered misses.** An id it has not got (404 for both roles) or answered with a
///   wrong file is not asked of it again for `rememberMisses`.
/// - **Backoff.** After an error (no answer, a timeout, a status other than 200 and 404) it is
///   skipped until `retryDelay(failures)` has passed; any answer resets the count. So a source
///   that is down costs each report at most one timeout per backoff step, never a stuck queue.
/// - **Concurrency.** At most `Settings.concurrency` requests to it at once; more wait.
/// - **Metrics** (`/metrics`, labelled `source`): requests by outcome, bytes, latency.
/// Sendable: `lock` guards `misses`, `failures`, `skipUntil` and `counts`; the rest is immutable.
public final class SymbolSource: @unchecked Sendable {
    /// How a source is reached: what `serve --symbol-source URL` and the sources file say.
    public struct Settings: Sendable, Equatable, Codable {
        /// The server's base URL (`https://debuginfod.example.org/`): requests go to `URL/buildid/…`.
        public var url: String
        /// Sent with every request to it (a token: `{"Authorization": "Bearer …"}`).
        public var headers: [String: String]
        /// Seconds a request may go without an answer or a byte of the file before it is given up.
        public var timeoutSeconds: Double
        /// Requests to it at once.
        public var concurrency: Int

        public static let defaultTimeoutSeconds = 10.0
        public static let defaultConcurrency = 4

        public init(
            url: String, headers: [String: String] = [:], timeoutSeconds: Double = Self.defaultTimeoutSeconds,
            concurrency: Int = Self.defaultConcurrency
        ) {
            self.url = url
            self.headers = headers
            self.timeoutSeconds = timeoutSeconds
            self.concurrency = concurrency
        }

        enum CodingKeys: String, CodingKey { case url, headers, timeoutSeconds, concurrency }

        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            url = try c.decode(String.self, forKey: .url)
            headers = try c.decodeIfPresent([String: String].self, forKey: .headers) ?? [:]
            timeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .timeoutSeconds) ?? Self.defaultTimeoutSeconds
            concurrency = try c.decodeIfPresent(Int.self, forKey: .concurrency) ?? Self.defaultConcurrency
        }
    }

    /// The counters of one source since the process started.
    public struct Counters: Sendable, Equatable {
        /// Files it sent that were kept.
        public var hits = 0
        /// Ids it had in neither role.
        public var misses = 0
        /// Files it sent that were not the file of the id asked for.
        public var refused = 0
        /// Requests without a usable answer (no answer, timeout, other status).
        public var errors = 0
        /// Asks passed over while it backed off after errors.
        public var skipped = 0
        /// HTTP requests made.
        public var requests = 0
        /// Bytes of files downloaded.
        public var bytes: Int64 = 0
    }

    public let settings: Settings
    /// Its URL without credentials or query: how logs, metrics and answers name it.
    public let name: String
    let client: ServiceClient
    /// How long a miss is believed.
    public let rememberMisses: Duration
    private let retryDelay: @Sendable (Int) -> Duration
    private let slots: DispatchSemaphore

    private let lock = NSLock()
    private var misses: [BuildID: ContinuousClock.Instant] = [:]
    private var failures = 0
    private var skipUntil: ContinuousClock.Instant?
    private var counts = Counters()

    private let requestsMetric: [SymbolSourceAnswer.Outcome: Counter]
    private let bytesMetric: Counter
    private let latencyMetric: Timer

    /// `option` names where the URL came from in errors (`--symbol-source`, `--connect`).
    /// `retryDelay(n)` is the wait after the n-th error in a row (the service's `Backoff`).
    public convenience init(
        _ settings: Settings, option: String, rememberMisses: Duration = .seconds(600),
        retryDelay: @escaping @Sendable (Int) -> Duration
    ) throws(ServiceClientError) {
        guard settings.timeoutSeconds > 0, settings.timeoutSeconds.isFinite else {
            throw ServiceClientError(.transport, "\(option) \(settings.url): the timeout must be a positive number of seconds")
        }
        guard (1...64).contains(settings.concurrency) else {
            throw ServiceClientError(.transport, "\(option) \(settings.url): concurrency must be between 1 and 64")
        }
        self.init(
            client: try ServiceClient(base: settings.url, headers: settings.headers, option: option), settings: settings,
            rememberMisses: rememberMisses, retryDelay: retryDelay)
    }

    /// A source reached with an existing client (a remote worker's master, with its token).
    public convenience init(client: ServiceClient, rememberMisses: Duration, retryDelay: @escaping @Sendable (Int) -> Duration) {
        self.init(
            client: client, settings: Settings(url: client.base.absoluteString, concurrency: 64), rememberMisses: rememberMisses,
            retryDelay: retryDelay)
    }

    private init(
        client: ServiceClient, settings: Settings, rememberMisses: Duration, retryDelay: @escaping @Sendable (Int) -> Duration
    ) {
        self.client = client
        self.settings = settings
        name = Self.displayName(client.base)
        self.rememberMisses = rememberMisses
        self.retryDelay = retryDelay
        slots = DispatchSemaphore(value: settings.concurrency)
        var requests: [SymbolSourceAnswer.Outcome: Counter] = [:]
        for outcome in SymbolSourceAnswer.Outcome.allCases {
            requests[outcome] = Counter(
                label: "stackline_symbol_source_requests_total", dimensions: [("source", name), ("outcome", outcome.rawValue)])
        }
        requestsMetric = requests
        bytesMetric = Counter(label: "stackline_symbol_source_bytes_total", dimensions: [("source", name)])
        latencyMetric = Timer(label: "stackline_symbol_source_seconds", dimensions: [("source", name)], preferredDisplayUnit: .seconds)
    }

    public var counters: Counters { lock.withLock { counts } }

    /// `url` without user, password, query or fragment.
    static func displayName(_ url: URL) -> String {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url.absoluteString }
        parts.user = nil
        parts.password = nil
        parts.query = nil
        parts.fragment = nil
        return parts.string ?? url.absoluteString
    }

    // MARK: What the fetcher asks

    /// Whether to ask this source for an id now.
    enum Turn: Equatable {
        case ask
        /// It answered "not found" (or sent a wrong file) lately: not news, not recorded again.
        case rememberedMiss
        /// It failed lately and is skipped until its backoff has passed; says so in one line.
        case backingOff(String)
    }

    func turn(for id: BuildID, at now: ContinuousClock.Instant) -> Turn {
        lock.withLock {
            if let until = misses[id] {
                if until > now { return .rememberedMiss }
                misses[id] = nil
            }
            if let until = skipUntil, until > now {
                counts.skipped += 1
                let seconds = Self.seconds(until - now)
                return .backingOff(
                    "not asked: backing off for \(String(format: "%.1f", seconds)) s more after \(failures) error\(failures == 1 ? "" : "s") in a row")
            }
            return .ask
        }
    }

    /// Downloads `path` (relative to the source) into `destination`, holding one of the
    /// source's request slots. Returns the status, or throws when there was no answer.
    func download(_ path: String, to destination: String, maxBytes: Int64) throws(ServiceClientError) -> Int {
        slots.wait()
        defer { slots.signal() }
        lock.withLock { counts.requests += 1 }
        let started = ContinuousClock.now
        defer { latencyMetric.record(duration: ContinuousClock.now - started) }
        return try client.download(path, to: destination, maxBytes: maxBytes, timeout: settings.timeoutSeconds)
    }

    /// Believes an earlier "not found" (or refused file) about `id` until `until`: what a
    /// restarted master read back from the answers it recorded, so a restart does not ask again
    /// for every id the stored reports lack.
    public func rememberMiss(_ id: BuildID, answeredAt: Date) {
        let left = answeredAt.addingTimeInterval(Self.seconds(rememberMisses)).timeIntervalSinceNow
        guard left > 0 else { return }
        lock.withLock { rememberLocked(id, for: .milliseconds(Int64(left * 1000))) }
    }

    /// Believes a miss of `id` for `duration`, keeping at most 10,000 (expired ones go first).
    /// Lock held.
    private func rememberLocked(_ id: BuildID, for duration: Duration) {
        let now = ContinuousClock.now
        if misses.count >= 10_000 { misses = misses.filter { $0.value > now } }
        guard misses.count < 10_000 else { return }
        misses[id] = now + duration
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Records what this source answered about `id`.
    func record(_ outcome: SymbolSourceAnswer.Outcome, for id: BuildID, bytes: Int64 = 0) {
        requestsMetric[outcome]?.increment()
        lock.withLock {
            switch outcome {
            case .found:
                counts.hits += 1
                counts.bytes += bytes
                bytesMetric.increment(by: Int(clamping: bytes))
                failures = 0
                skipUntil = nil
            case .notFound, .refused:
                if outcome == .notFound { counts.misses += 1 } else { counts.refused += 1 }
                rememberLocked(id, for: rememberMisses)
                failures = 0
                skipUntil = nil
            case .failed:
                counts.errors += 1
                failures += 1
                skipUntil = ContinuousClock.now + retryDelay(failures)
            }
        }
    }
}
