import APIModel
import ArgumentParser
import Foundation
import Logging
import Master
import ServiceRuntime
import SymbolFetch
import SymbolStore

/// `--symbol-source URL` (repeatable) and `--symbol-sources FILE`: upstream debuginfod servers
/// the master asks for the debug files processed reports lacked (docs/symbol-sources.md).
struct SymbolSourceOptions: ParsableArguments {
    @Option(
        name: .customLong("symbol-source"),
        help: "Upstream debuginfod server asked for debug files no store holds; repeat for several, asked in order (after those of --symbol-sources).")
    var urls: [String] = []

    @Option(
        name: .customLong("symbol-sources"),
        help: "JSON file of upstream symbol sources with their headers, timeouts and concurrency (docs/symbol-sources.md).")
    var file: String?

    @Option(name: .customLong("symbol-source-cache"), help: "Where fetched debug files are kept (default: the store's folder name + \"-fetched\", beside it).")
    var cacheDirectory: String?

    @Option(name: .customLong("symbol-source-cache-size"), help: "Bytes the fetched debug files may take; the least recently used go first.")
    var cacheSize: Int64 = 10 << 30

    @Option(name: .customLong("symbol-source-cache-age"), help: "Fetched debug files unused for this long are removed (30m, 24h, 30d, 2w).")
    var cacheAge: SinceDate = SinceDate(argument: "30d")!

    @Option(name: .customLong("symbol-source-remember-misses"), help: "Seconds a source's \"not found\" for a build id is believed before it is asked again.")
    var rememberMisses: Double = 600

    func validate() throws {
        guard cacheSize > 0 else { throw ValidationError("--symbol-source-cache-size must be positive") }
        guard cacheAge.duration.map({ $0 > 0 }) == true else {
            throw ValidationError("--symbol-source-cache-age takes a positive duration such as 30d, not a date")
        }
        guard rememberMisses >= 0, rememberMisses.isFinite else {
            throw ValidationError("--symbol-source-remember-misses must be 0 or more seconds")
        }
    }

    /// Every source, the file's first, each with where it was given (for errors); empty when
    /// none is configured.
    func settings() throws -> [(settings: SymbolSource.Settings, origin: String)] {
        var sources: [(SymbolSource.Settings, String)] = []
        if let file {
            sources += try SymbolSourcesFile.load(path: file).enumerated().map { ($1, "--symbol-sources \(file): sources[\($0)]:") }
        }
        sources += urls.map { (SymbolSource.Settings(url: $0), "--symbol-source") }
        return sources
    }

    /// The fetcher over the configured sources, with its cache beside `store`; nil when no
    /// source is configured. Errors name the option and the source.
    func fetcher(store: SymbolStoreDirectory, command: String) throws -> SymbolSourceFetcher? {
        let settings: [(settings: SymbolSource.Settings, origin: String)]
        do { settings = try self.settings() } catch { throw fail("stackline \(command): \(error)") }
        guard !settings.isEmpty else { return nil }
        let remember = Duration.milliseconds(Int64(rememberMisses * 1000))
        // A source that is down is skipped for a second after its first error, then doubling
        // up to five minutes: the schedule of every retry here, with a fifth taken off at random.
        let backoff = Backoff(initialMs: 1000, maxMs: 300_000, jitter: 80...100)
        var sources: [SymbolSource] = []
        for (source, origin) in settings {
            do {
                sources.append(try SymbolSource(
                    source, option: origin, rememberMisses: remember,
                    retryDelay: { .milliseconds(backoff.delay(afterAttempt: $0)) }))
            } catch {
                throw fail("stackline \(command): \(error.description)")
            }
        }
        let directory = cacheDirectory ?? Self.defaultCache(beside: store)
        let logger = Logger(label: "stackline.symbol-sources")
        let cache: FetchedDebugFiles
        do {
            cache = try FetchedDebugFiles(
                directory: directory, capacityBytes: cacheSize, maxAge: cacheAge.duration.map { .milliseconds($0) },
                sources: sources, localStores: [store], logger: { logger.notice("\($0)") }, notFoundRetention: remember)
        } catch {
            throw fail("stackline \(command): \(error.description)")
        }
        return SymbolSourceFetcher(cache: cache, logger: logger)
    }

    /// `/srv/symbols` → `/srv/symbols-fetched`: beside the store, never inside it (the store's
    /// own listing would count the cache's files as uploads).
    static func defaultCache(beside store: SymbolStoreDirectory) -> String {
        let root = URL(fileURLWithPath: store.root).standardizedFileURL
        return root.deletingLastPathComponent().appendingPathComponent(root.lastPathComponent + "-fetched").path
    }
}

/// The sources file: `{"sources": [{"url": …, "headers": {…}, "timeoutSeconds": 10, "concurrency": 4}]}`.
/// Unknown keys are refused, so a misspelt setting is not silently ignored.
enum SymbolSourcesFile {
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    static let keys: Set<String> = ["url", "headers", "timeoutSeconds", "concurrency"]

    static func load(path: String) throws -> [SymbolSource.Settings] {
        // A sources file is a few lines; a megabyte is far past any real one.
        guard let handle = FileHandle(forReadingAtPath: path) else { throw Problem(description: "\(path): cannot be read") }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: 1 << 20)) ?? Data()
        guard data.count < 1 << 20 else { throw Problem(description: "\(path): larger than 1 MiB") }
        guard let top = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let list = top["sources"] as? [Any] else {
            throw Problem(description: "\(path): expected a JSON object with a \"sources\" array")
        }
        if let extra = Set(top.keys).subtracting(["sources"]).sorted().first {
            throw Problem(description: "\(path): unknown key \"\(extra)\" (expected \"sources\")")
        }
        for (index, item) in list.enumerated() {
            guard let object = item as? [String: Any] else { throw Problem(description: "\(path): sources[\(index)] is not an object") }
            if let extra = Set(object.keys).subtracting(keys).sorted().first {
                throw Problem(description: "\(path): sources[\(index)]: unknown key \"\(extra)\" (expected \(keys.sorted().joined(separator: ", ")))")
            }
        }
        do {
            return try JSONDecoder().decode(Contents.self, from: data).sources
        } catch {
            throw Problem(description: "\(path): \(Self.reason(error))")
        }
    }

    private struct Contents: Decodable {
        var sources: [SymbolSource.Settings]
    }

    /// `sources[1].timeoutSeconds has the wrong type`: where, in the file's own terms.
    private static func reason(_ error: Error) -> String {
        func place(_ path: [CodingKey]) -> String {
            path.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().drop { $0 == "." }.description
        }
        switch error {
        case DecodingError.keyNotFound(let key, let context): return "\(place(context.codingPath + [key])) is missing"
        case DecodingError.typeMismatch(_, let context), DecodingError.dataCorrupted(let context), DecodingError.valueNotFound(_, let context):
            return "\(place(context.codingPath)) has the wrong type"
        default: return "\(error)"
        }
    }
}
