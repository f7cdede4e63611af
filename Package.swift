// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Stackline",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "stackline", targets: ["stackline"]),
        .executable(name: "stackline-worker", targets: ["stackline-worker"]),
        // Plain build: replays inputs through a fuzz target. Built by scripts/fuzz.sh with
        // -sanitize=fuzzer and -DSTACKLINE_LIBFUZZER: the libFuzzer harness (docs/fuzzing.md).
        .executable(name: "stackline-fuzz", targets: ["stackline-fuzz"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.20"),
        // `stackline serve`: the HTTP server, its lifecycle, metrics, and token/namespace crypto.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // Already resolved for Hummingbird; named for the alerts' SMTP client (NIOCore, NIOPosix).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.81.0"),
    ],
    targets: [
        // libdw + libelf (+ zlib for compressed sections): the only place their C headers enter.
        .systemLibrary(
            name: "CElfUtils",
            path: "Sources/CElfUtils",
            pkgConfig: "libdw",
            providers: [.apt(["libdw-dev", "libelf-dev", "zlib1g-dev"])]
        ),
        // Declarations of the two runtime demanglers (Swift's and the C++ ABI's).
        .target(
            name: "CDemangle",
            path: "Sources/CDemangle",
            linkerSettings: [.linkedLibrary("stdc++")]
        ),
        // zlib: gzip input on submit (streamed, size-capped) and compressed raw bytes in the DB.
        // Not named CZlib: ZIPFoundation ships a module of that name.
        .systemLibrary(
            name: "StacklineZlib",
            path: "Sources/CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // libdeflate: whole-buffer inflate, about twice zlib's speed; every report body and stored
        // report is inflated once per use, and zlib's streaming inflate was 11% of ingest CPU.
        .systemLibrary(
            name: "StacklineDeflate",
            path: "Sources/CDeflate",
            pkgConfig: "libdeflate",
            providers: [.apt(["libdeflate-dev"])]
        ),
        // libzstd: ELF sections compressed with ELFCOMPRESS_ZSTD, which Debian 12's libelf cannot inflate.
        .systemLibrary(
            name: "StacklineZstd",
            path: "Sources/CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"])]
        ),
        // liblzma: MiniDebugInfo (`.gnu_debugdata`, an xz-compressed ELF file of symbols).
        .systemLibrary(
            name: "StacklineLzma",
            path: "Sources/CLzma",
            pkgConfig: "liblzma",
            providers: [.apt(["liblzma-dev"])]
        ),
        .target(name: "Compression", dependencies: ["StacklineZlib", "StacklineDeflate", "StacklineZstd", "StacklineLzma"]),
        // The one JSON-writing family (no dependencies): `JSONBytes` for the hot paths, `JSONStyle`
        // (the one configured encoder: `document`, `compact`) for everything else, and `JSONValue`.
        .target(name: "JSONFormat"),
        // The data every module shares and its coding: reports raw and symbolicated, addresses,
        // build ids, architectures, group keys, namespaces, limits; the one report JSON writer
        // (`SymbolicatedReportJSON`); and the small rules over that data that several modules
        // must agree on: the address → image search (`ImageLocator`), pointer authentication,
        // the order of app versions (`VersionOrder`), searching and escaping report text.
        .target(name: "ReportModel", dependencies: ["JSONFormat"]),
        .target(name: "Hashing", dependencies: ["ReportModel", .product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "Grouping", dependencies: ["ReportModel", "Hashing"]),
        // glibc's malloc.h (mallopt), which the Glibc module leaves out; used by SystemCalls only.
        .systemLibrary(name: "StacklineMalloc", path: "Sources/CMalloc"),
        // errno-checked system calls, file locks and the directory walk: the one place that calls
        // strerror or flock (Tests/DebugInfoTests/SystemCallsTests).
        .target(name: "SystemCalls", dependencies: ["StacklineMalloc"]),
        .target(name: "DebugInfo", dependencies: ["CElfUtils", "Compression", "ReportModel", "SystemCalls"]),
        // Mangled names to readable ones, through the Swift runtime's and the C++ ABI's demanglers.
        .target(name: "Demangling", dependencies: ["CDemangle"]),
        // The symcache: a debug file's answers precomputed into one memory-mapped, checked index.
        .target(name: "SymbolCache", dependencies: ["Compression", "DebugInfo", "Demangling", "ReportModel", "SystemCalls", "StacklineDeflate"]),
        .target(name: "SymbolStore", dependencies: ["JSONFormat", "ReportModel", "DebugInfo", "SymbolCache", "SystemCalls", .product(name: "ZIPFoundation", package: "ZIPFoundation")]),
        // Where a native crash's stacks are walked: libdwfl over a minidump's registers and memory.
        .target(name: "Unwinding", dependencies: ["CElfUtils", "ReportModel"]),
        .target(
            name: "Symbolication",
            dependencies: ["JSONFormat", "DebugInfo", "SymbolCache", "SymbolStore", "ReportModel", "Demangling", "SystemCalls", "Unwinding"]
        ),
        // Parsers only: raw report bytes in, RawReport out.
        .target(name: "ReportFormats", dependencies: ["ReportModel"]),
        // Every human and JSON view of a report: symbolicated (text, JSON, Apple) and parsed.
        .target(name: "ReportRendering", dependencies: ["JSONFormat", "ReportModel"]),
        // The search language (`--where`, `?where=`): a parser from text to typed terms, pure; the
        // database compiles the terms, binding every value (docs/search.md).
        .target(name: "ReportQuery", dependencies: ["ReportModel"]),
        // Everything the service keeps in its database, one folder per family of tables: jobs and
        // their leases, groups and their ledger, tokens and namespaces, workers, alert state, retention.
        // The statements' common ground between the two database backends: values, rows and the
        // one-transaction executor that store code written once for both runs on.
        .target(name: "SQLInterface"),
        // libpq, PostgreSQL's own client library: the only place its C header enters.
        .systemLibrary(
            name: "CLibPQ",
            path: "Sources/CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // The PostgreSQL backend's connection: libpq behind SQLExecutor, synchronous like GRDB,
        // because the store's callers are OS threads and a thread pool, never an event loop.
        .target(name: "PostgresClient", dependencies: ["CLibPQ", "SQLInterface", "ReportModel"]),
        .target(
            name: "Storage",
            dependencies: [
                "JSONFormat", "ReportModel", "ReportQuery", "Compression", "Hashing", "SystemCalls", "ServiceRuntime", "SQLInterface",
                "PostgresClient", .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // The master↔worker wire format (job and reply frames, length-prefixed framing). A worker
        // links this and never Master: it must not reach Storage or GRDB (Tests/ModuleGraphTests).
        .target(name: "WorkerProtocol", dependencies: ["JSONFormat", "ReportModel", "SystemCalls", "Compression"]),
        // What every long-running Stackline process shares, master and worker alike: supervising
        // worker processes, the one job loop over a worker (WorkerSession), retries with backoff,
        // and the environment read once at start (StacklineEnvironment).
        .target(
            name: "ServiceRuntime",
            dependencies: ["WorkerProtocol", "ReportModel", "SystemCalls", .product(name: "Logging", package: "swift-log")]
        ),
        // The HTTP client of a `stackline serve` (URLSession): `symbols upload` and remote workers.
        .target(name: "ServiceClient", dependencies: ["JSONFormat", "ReportModel", "SystemCalls"]),
        // Debug files fetched from debuginfod servers (a remote worker's master, a master's
        // upstream symbol sources) into a bounded, least-recently-used cache in the store
        // layout, each checked by build id.
        .target(
            name: "SymbolFetch",
            dependencies: [
                "SymbolStore", "DebugInfo", "ReportModel", "SystemCalls", "ServiceClient",
                .product(name: "Metrics", package: "swift-metrics"),
            ]),
        // The escaping log handler every Stackline process logs through, master and worker alike.
        .target(
            name: "StacklineLogging",
            dependencies: ["ReportModel", "SystemCalls", .product(name: "Logging", package: "swift-log")]
        ),
        // The reporting SDK's wire format: batch records, payload decoding (base64, AES-CBC, gunzip),
        // monitor types, remote configuration. Pure: no database, no HTTP.
        .target(
            name: "SDKProtocol",
            dependencies: [
                "JSONFormat", "Compression", "ReportFormats", "ReportModel",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // Untrusted bytes parsed in `stackline-worker --parse` children for `serve` (ParserPool),
        // or in process for the CLI: a parser trap costs one child, never the server.
        .target(
            name: "IsolatedParsing",
            dependencies: [
                "ReportFormats", "ReportModel", "WorkerProtocol", "ServiceRuntime", "SystemCalls",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Where a request becomes a job: raw bytes split, parsed, tagged and stored (submit, HTTP ingest).
        .target(name: "Intake", dependencies: ["Storage", "ReportFormats", "ReportModel", "SDKProtocol", "IsolatedParsing", "WorkerProtocol"]),
        .target(
            name: "Master",
            dependencies: [
                "Storage", "SymbolFetch", "SymbolStore", "WorkerProtocol", "ServiceRuntime", "ReportModel", "ReportFormats", "SystemCalls",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // The HTTP API's answer shapes and parameters (GroupJSON, JobStatusJSON, WorkersJSON,
        // MissingSymbolsAnswer, ReprocessingAnswer, SinceDate): what a client decodes, without
        // the server or the database.
        .target(name: "APIModel", dependencies: ["ReportModel", "JSONFormat"]),
        // What the CLI and the HTTP API make of stored data, one definition each: database rows
        // into APIModel answers, a stored result as text, JSON or an Apple report (ReportPrinter),
        // the debug files processed reports lacked. The SQL itself stays in Storage.
        .target(
            name: "Presentation",
            dependencies: ["APIModel", "JSONFormat", "Storage", "ReportModel", "ReportRendering", "SymbolStore"]
        ),
        // Alert rules, their evaluation over the database, webhook and SMTP delivery (docs/alerts.md).
        .target(
            name: "Alerts",
            dependencies: [
                "JSONFormat", "Storage", "ReportModel", "ServiceRuntime",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The web view's pages, charts and flame graphs: query results in, HTML/SVG out (no HTTP).
        .target(name: "WebView", dependencies: ["ReportModel", "APIModel", "Storage"]),
        // `stackline serve`: HTTP routes, authentication, limits, metrics. Runs beside the master.
        .target(
            name: "Server",
            dependencies: [
                "WebView",
                "Storage", "Intake", "IsolatedParsing", "Master", "APIModel", "Presentation", "JSONFormat", "ReportModel", "ReportFormats", "ReportRendering",
                "ReportQuery",
                "Compression", "Hashing", "StacklineLogging", "SymbolStore", "WorkerProtocol", "SDKProtocol", "DebugInfo", "SystemCalls",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            plugins: ["EmbedOpenAPI"]
        ),
        // docs/openapi.yaml compiled into Server, so the served document is the repository's.
        .plugin(name: "EmbedOpenAPI", capability: .buildTool()),
        // `stackline --version`: the git revision, written by a prebuild command (plain git, offline).
        .plugin(name: "GitRevision", capability: .buildTool()),
        .executableTarget(
            name: "stackline",
            dependencies: [
                "DebugInfo", "SymbolCache", "SymbolStore", "Symbolication", "Demangling", "ReportModel", "ReportFormats", "ReportRendering",
                "IsolatedParsing",
                "Storage", "Master", "WorkerProtocol", "StacklineLogging", "Compression", "Grouping", "SystemCalls",
                "Intake", "APIModel", "Presentation", "JSONFormat", "Server", "SDKProtocol", "ServiceClient", "SymbolFetch", "Alerts", "ServiceRuntime",
                "ReportQuery",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            plugins: ["GitRevision"]
        ),
        .executableTarget(
            name: "stackline-worker",
            dependencies: [
                "JSONFormat", "Symbolication", "SymbolStore", "ReportFormats", "ReportModel", "WorkerProtocol", "ServiceRuntime", "StacklineLogging",
                "Grouping", "ServiceClient", "SymbolFetch", "SystemCalls", "IsolatedParsing",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Workers/stackline-worker"
        ),
        // One function per fuzz target: the parsers, the debug-file readers, zip ingest, frames.
        .target(
            name: "FuzzTargets",
            dependencies: [
                "APIModel", "JSONFormat", "ReportFormats", "ReportModel", "DebugInfo", "SymbolCache", "Demangling", "SymbolStore", "WorkerProtocol", "SystemCalls", "Compression",
                // intake-to-page: the server's intake, a worker's processing and the pages of its result.
                "SDKProtocol", "IsolatedParsing", "Symbolication", "Grouping", "Storage", "Presentation", "ReportRendering", "WebView",
                // search-query: a --where expression through the parser and the database.
                "ReportQuery",
                // minidump-unwind: the unwinder's memory callbacks.
                "Unwinding",
            ]),
        // libFuzzer's driver entry point, declared for the -sanitize=fuzzer build only.
        .systemLibrary(name: "CLibFuzzer", path: "Fuzz/CLibFuzzer"),
        .executableTarget(name: "stackline-fuzz", dependencies: ["FuzzTargets", "CLibFuzzer", "ServiceRuntime"], path: "Fuzz/stackline-fuzz"),
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "DebugInfoTests", dependencies: ["DebugInfo", "Symbolication", "ReportModel", "SystemCalls", "TestSupport"]),
        .testTarget(name: "SystemCallsTests", dependencies: ["SystemCalls", "TestSupport"]),
        .testTarget(name: "DemanglingTests", dependencies: ["Demangling", "TestSupport"]),
        .testTarget(name: "ReportModelTests", dependencies: ["ReportModel", "JSONFormat", "TestSupport"]),
        .testTarget(
            name: "SymbolFetchTests",
            dependencies: ["SymbolFetch", "SymbolStore", "Symbolication", "ServiceClient", "ReportModel", "TestSupport"]),
        .testTarget(name: "SymbolCacheTests", dependencies: ["SymbolCache", "DebugInfo", "Demangling", "ReportModel", "TestSupport"]),
        .testTarget(name: "SymbolStoreTests", dependencies: ["SymbolStore", "DebugInfo", "ReportModel", "TestSupport"]),
        .testTarget(
            name: "SymbolicationTests",
            dependencies: ["DebugInfo", "JSONFormat", "SymbolCache", "Symbolication", "Demangling", "SymbolStore", "ReportModel", "TestSupport"]),
        .testTarget(name: "AccuracyTests", dependencies: ["TestSupport"]),
        .testTarget(
            name: "StorageTests",
            dependencies: ["Storage", "Hashing", "ReportModel", "ReportQuery", "SQLInterface", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "GroupingTests", dependencies: ["Hashing", "ReportFormats", "Grouping", "Symbolication", "SymbolStore", "ReportModel", "TestSupport"]),
        .testTarget(name: "CompressionTests", dependencies: ["StacklineZlib", "Compression", "TestSupport"]),
        .testTarget(name: "ReportFormatsTests", dependencies: ["ReportFormats", "ReportRendering", "ReportModel", "TestSupport"]),
        .testTarget(name: "ReportRenderingTests", dependencies: ["ReportRendering", "ReportModel", "TestSupport"]),
        .testTarget(name: "ReportQueryTests", dependencies: ["ReportQuery", "ReportModel"]),
        .testTarget(name: "WorkerProtocolTests", dependencies: ["WorkerProtocol", "ReportModel", "TestSupport"]),
        .testTarget(name: "ServiceRuntimeTests", dependencies: ["ServiceRuntime", "WorkerProtocol", "ReportModel", "TestSupport"]),
        .testTarget(
            name: "ServerTests",
            dependencies: [
                "Server", "Storage", "Intake", "IsolatedParsing", "SymbolStore", "Master", "TestSupport",
                // The routes served on a loopback port to a NIO HTTP/1.1 client (RouteHarness), not
                // HummingbirdTesting, whose client stack (AsyncHTTPClient, NIOHTTP2) the tests would build.
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"), .product(name: "Metrics", package: "swift-metrics"),
            ]),
        .testTarget(name: "WebViewTests", dependencies: ["WebView", "ReportModel", "APIModel", "Presentation", "Storage"]),
        // The one configured encoder and the hot-path writer; the fitness test that keeps them the only ones.
        .testTarget(name: "JSONFormatTests", dependencies: ["JSONFormat", "TestSupport"]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "Storage", "StacklineLogging", "ReportModel", "ReportFormats", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Against a throwaway PostgreSQL 15 cluster per test process (TestSupport's PostgresCluster).
        .testTarget(name: "PostgresClientTests", dependencies: ["PostgresClient", "SQLInterface", "TestSupport"]),
        .testTarget(name: "AlertsTests", dependencies: ["Alerts", "Storage", "ReportModel", "ServiceRuntime", "TestSupport"]),
        // Reads the target graph from `swift package describe` and the linked worker binary.
        .testTarget(name: "ModuleGraphTests", dependencies: ["TestSupport"]),
    ]
)
