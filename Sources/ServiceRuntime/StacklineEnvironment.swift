import Foundation
import WorkerProtocol

/// Every environment variable a Stackline program reads, read once by the program's entry point
/// (`stackline`, `stackline-worker`, `stackline-fuzz`) and passed down as values: library modules
/// take parameters and never look at the process environment, and nothing sets a variable at
/// run time (`setenv` is not thread-safe, and a value set there reached children only by
/// accident). Tests/ModuleGraphTests/EnvironmentRulesTests enforces both.
///
/// An empty value counts as unset everywhere. Each field's comment is its documentation:
/// the variable, what it means, and its default.
public struct StacklineEnvironment: Sendable, Equatable {
    /// `STACKLINE_DB`: the service database when `--db` is not given. Default
    /// `./data/stackline.sqlite` (`DatabaseLocation.defaultPath`).
    public var database: String?
    /// `STACKLINE_DB_PASSWORD`: the password of a `postgres://` database, kept off the command
    /// line (a URL with a password in it is refused there). libpq's own `PGPASSWORD` and
    /// `PGPASSFILE` apply too. No default.
    public var databasePassword: String?
    /// `STACKLINE_DB_PASSWORD_FILE`: a file whose first line is that password (a secret mounted
    /// as a file). Used when `STACKLINE_DB_PASSWORD` is not set. No default.
    public var databasePasswordFile: String?
    /// `STACKLINE_SYMBOLS`: the debug-file store when `--symbols` is not given. Default `./symbols`.
    public var symbols: String?
    /// `STACKLINE_WORKER`: the `stackline-worker` executable `master` and `serve` start. Default:
    /// `stackline-worker` beside the running `stackline`.
    public var worker: String?
    /// `STACKLINE_GROUPING_RULES`: a grouping rules file (docs/grouping.md) when
    /// `--grouping-rules` is not given; `master` and `serve` hand it to their workers with
    /// `--grouping-rules`, a remote worker to its slot processes in their environment
    /// (`groupingRulesVariable`). Default: the built-in rules.
    public var groupingRules: String?
    /// The name of `groupingRules`' variable, for the one program that sets it for a child.
    public static let groupingRulesVariable = "STACKLINE_GROUPING_RULES"
    /// `STACKLINE_ALERTS`: the alert rules file of `stackline alerts` when `--alerts` is not
    /// given (docs/alerts.md). No default: those commands need one.
    public var alerts: String?
    /// `STACKLINE_SERVER`: the `stackline serve` URL of `symbols upload` when `--server` is not
    /// given. No default.
    public var server: String?
    /// `STACKLINE_TOKEN`: the token of `symbols upload` (scope `symbols`) and of
    /// `stackline-worker --connect` (scope `worker`) when `--token` is not given; keeps it off the
    /// command line. No default.
    public var token: String?
    /// `STACKLINE_MAX_FRAME_BYTES`: the largest master↔worker frame, in bytes, from 1024 to
    /// 2^32-1. A master and its workers must agree (workers inherit the master's environment).
    /// Default 128 MiB. `master`, `serve` and the worker refuse to start on an unusable value;
    /// other commands use the default.
    public var maxFrameBytes: String?
    /// `STACKLINE_UNZIP_MAX_BYTES`: the most one zip or tar archive given to the store may unpack
    /// to, in bytes (the free space of the temporary directory caps it too). Default 16 GiB.
    /// Checked when an archive arrives: a value that is not a byte count refuses the archive.
    public var unpackMaxBytes: String?
    /// `STACKLINE_SYMBOLS_MAX_UPLOAD_BYTES`: the most one `POST /api/v1/symbols` body may hold, in
    /// bytes (the store's free space caps it too). Default 8 GiB. Checked when an upload
    /// arrives: a value that is not a byte count refuses the upload.
    public var uploadMaxBytes: String?
    /// `TMPDIR`: where archives are unpacked and the fuzz targets keep their scratch files.
    /// Default `/tmp`.
    public var temporaryDirectory: String
    /// `STACKLINE_TEST_HOOKS=1`: the worker and the parse children obey the
    /// `STACKLINE_TEST_HOOK_*` markers in reports (crash, hang, corrupt a result), for the
    /// end-to-end tests. Default off; never set it in production.
    public var testHooks: Bool
    /// `STACKLINE_FUZZ_TARGET`: the target the libFuzzer build of `stackline-fuzz` runs
    /// (docs/fuzzing.md). No default.
    public var fuzzTarget: String?
    /// `STACKLINE_FUZZ_VALID_UTF8_ONLY=1`: the fuzz targets skip report bytes that are not valid
    /// UTF-8. Default off.
    public var fuzzValidUTF8Only: Bool
    /// The whole environment as the program started with it, for the one reader of arbitrary
    /// names: alert rules name their secrets' variables (`urlEnv`, `passwordEnv`).
    public var variables: [String: String]

    /// The values of `environment`, as the entry point read it at start.
    public init(_ environment: [String: String]) {
        func value(_ name: String) -> String? {
            guard let v = environment[name], !v.isEmpty else { return nil }
            return v
        }
        database = value("STACKLINE_DB")
        databasePassword = value("STACKLINE_DB_PASSWORD")
        databasePasswordFile = value("STACKLINE_DB_PASSWORD_FILE")
        symbols = value("STACKLINE_SYMBOLS")
        worker = value("STACKLINE_WORKER")
        groupingRules = value(Self.groupingRulesVariable)
        alerts = value("STACKLINE_ALERTS")
        server = value("STACKLINE_SERVER")
        token = value("STACKLINE_TOKEN")
        maxFrameBytes = value(Framing.limitVariable)
        unpackMaxBytes = value("STACKLINE_UNZIP_MAX_BYTES")
        uploadMaxBytes = value("STACKLINE_SYMBOLS_MAX_UPLOAD_BYTES")
        temporaryDirectory = value("TMPDIR") ?? "/tmp"
        testHooks = environment["STACKLINE_TEST_HOOKS"] == "1"
        fuzzTarget = value("STACKLINE_FUZZ_TARGET")
        fuzzValidUTF8Only = environment["STACKLINE_FUZZ_VALID_UTF8_ONLY"] == "1"
        variables = environment
    }

    /// The frame limit `STACKLINE_MAX_FRAME_BYTES` asks for, or the default; throws on an
    /// unusable value, which `master`, `serve` and the worker refuse at start.
    public func maxFrame() throws(FrameLimitError) -> Int {
        try Framing.maxFrame(parsing: maxFrameBytes)
    }
}

extension StacklineEnvironment {
    /// The database password: `STACKLINE_DB_PASSWORD`, else the first line of
    /// `STACKLINE_DB_PASSWORD_FILE`, else nil (libpq then reads `PGPASSWORD`/`PGPASSFILE`).
    public func databasePasswordValue() throws(DatabasePasswordError) -> String? {
        if let databasePassword { return databasePassword }
        guard let path = databasePasswordFile else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadable(path) }
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).first ?? ""
        let password = line.hasSuffix("\r") ? String(line.dropLast()) : String(line)
        guard !password.isEmpty else { throw .empty(path) }
        return password
    }
}

/// Why the database password could not be read.
public enum DatabasePasswordError: Error, CustomStringConvertible {
    case unreadable(String)
    case empty(String)

    public var description: String {
        switch self {
        case .unreadable(let path): "STACKLINE_DB_PASSWORD_FILE: cannot read \(path)"
        case .empty(let path): "STACKLINE_DB_PASSWORD_FILE: \(path) holds no password on its first line"
        }
    }
}
