import Foundation
import ReportFormats
import Synchronization

/// A property a fuzz target checks after the code under test returned. The libFuzzer harness
/// aborts on it, so libFuzzer keeps the input as a crash; the replayer exits non-zero.
public struct FuzzFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// One input path of Stackline that hostile bytes reach, run on one input.
///
/// Each target feeds the bytes to the real entry point (a parser, the debug-file readers
/// `symbols add` uses, the zip ingest, the worker's frame decoder). Input errors are the
/// expected outcome for most inputs and are swallowed; a crash, a hang, runaway memory or a
/// `FuzzFailure` is a finding.
public struct FuzzTarget: Sendable {
    public let name: String
    public let summary: String
    let body: @Sendable (Data) throws(FuzzFailure) -> String

    /// Runs the input; returns what became of it ("refused: …", "parsed: …") for the replayer to print.
    @discardableResult
    public func run(_ data: Data) throws(FuzzFailure) -> String { try body(data) }

    /// What the entry point read from its environment (`StacklineEnvironment`), set before the
    /// first input: libFuzzer calls the targets through a C callback, which takes no settings.
    public struct Settings: Sendable {
        /// STACKLINE_FUZZ_VALID_UTF8_ONLY=1: the report targets (and the reports in frames) skip
        /// bytes that are not valid UTF-8. A known crash on such bytes (the JSON5 decoder, issue 10
        /// defect 1) otherwise ends every run of the JSON targets within seconds.
        public var validUTF8Only: Bool
        /// TMPDIR: where the scratch directory goes.
        public var temporaryDirectory: String

        public init(validUTF8Only: Bool = false, temporaryDirectory: String = "/tmp") {
            self.validUTF8Only = validUTF8Only
            self.temporaryDirectory = temporaryDirectory
        }
    }

    private static let configured = Mutex(Settings())

    /// Called once by the entry point, before any target runs.
    public static func use(_ settings: Settings) { configured.withLock { $0 = settings } }

    static var settings: Settings { configured.withLock { $0 } }

    static var validUTF8Only: Bool { settings.validUTF8Only }

    static func isValidUTF8(_ data: Data) -> Bool { String(validating: data, as: UTF8.self) != nil }

    /// Every target: one per report format (from `FormatRegistry.standard`, so a new format
    /// gets one), then format detection, the debug-file readers, the zip ingest and the frames.
    public static let all: [FuzzTarget] =
        FormatRegistry.standard.formats.map { format in
            FuzzTarget(name: format.id, summary: "\(format.id) parse") { data throws(FuzzFailure) in
                try ReportTargets.parse(data, as: format)
            }
        } + [
            FuzzTarget(name: "detect-and-parse", summary: "FormatRegistry.standard.detectAndParseAll: detection, split, parse, as submit runs them") { data throws(FuzzFailure) in
                try ReportTargets.detectAndParse(data)
            },
            FuzzTarget(name: "apple-ips-decoders", summary: "the .ips fast reader against JSONDecoder: what the cursor reads, JSONDecoder reads alike") { data throws(FuzzFailure) in
                try ReportTargets.ipsDecodersAgree(data)
            },
            FuzzTarget(name: "swift-backtrace-decoders", summary: "the Swift runtime JSON report's fast reader against JSONDecoder: what the cursor reads, JSONDecoder reads alike") { data throws(FuzzFailure) in
                try ReportTargets.swiftBacktraceDecodersAgree(data)
            },
            FuzzTarget(name: "elf", summary: "ElfFile + DebugFile as symbols add opens them, then lookups") { data throws(FuzzFailure) in
                try DebugFileTargets.elf(data)
            },
            FuzzTarget(name: "mach-o", summary: "MachOFile + DebugFile per slice as symbols add opens them, then lookups") { data throws(FuzzFailure) in
                try DebugFileTargets.machO(data)
            },
            FuzzTarget(name: "zip", summary: "symbols add of a zip archive into a scratch store") { data throws(FuzzFailure) in
                try ZipTarget.ingest(data)
            },
            FuzzTarget(name: "inflate", summary: "gzip/zlib bodies through libdeflate (Zlib.inflate) against zlib's streaming inflate: the same bytes or both refused") { data throws(FuzzFailure) in
                try InflateTarget.agree(data)
            },
            FuzzTarget(name: "symcache", summary: "SymbolCache(path:expecting:) as is and resealed (checksums recomputed), then lookups and the zero-copy visitor") { data throws(FuzzFailure) in
                try SymbolCacheTarget.openAndLookUp(data)
            },
            FuzzTarget(name: "intake-to-page", summary: "a request body as serve takes it (gzip, detect, split, parse, validate; an SDK batch's payloads), a worker's result without debug files, and every page, rendering and JSON answer of it") { data throws(FuzzFailure) in
                try IntakeToPageTarget.run(data)
            },
            FuzzTarget(name: "native-unwind", summary: "a minidump or core file read, then every thread walked by NativeUnwinder (libdwfl reading the capture's registers and memory through the callbacks) with the harness's own executable as the first module") { data throws(FuzzFailure) in
                try NativeUnwindTarget.unwind(data)
            },
            FuzzTarget(name: "search-query", summary: "a --where expression parsed (ReportQuery), and every accepted one run as a search and as facets on a real database") { data throws(FuzzFailure) in
                try SearchQueryTarget.run(data)
            },
            FuzzTarget(name: "frame", summary: "FrameReader and Framing.unbundle on the input, each frame decoded as a JobRequest (and parsed) or a JobReply, and encoded again") { data throws(FuzzFailure) in
                try FrameTarget.decode(data)
            },
        ]

    public static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }

    /// Removes the files the targets wrote for their inputs (a libFuzzer run leaves them to TMPDIR).
    public static func removeScratchFiles() { Scratch.shared.removeAll() }
}
