import Foundation
import JobQueue
import ReportFormats
import ReportModel

/// Where raw report bytes become stored reports and queued jobs: `stackline submit` and the
/// HTTP ingest endpoints both come through here, so both split, parse, tag and refuse alike.
public struct ReportIntake: Sendable {
    /// What the sender says about reports that do not say it themselves.
    public struct Defaults: Sendable {
        public var app: String?
        public var version: String?
        /// The SDK namespace the reports were uploaded into; tags every report of the input.
        public var namespace: String?
        public init(app: String? = nil, version: String? = nil, namespace: String? = nil) {
            self.app = app
            self.version = version
            self.namespace = namespace
        }
    }

    /// What happened to one report of an input.
    public enum Outcome: Sendable {
        case stored(SubmitOutcome, format: String)
        /// This part could not be parsed; its neighbours are unaffected.
        case refused(ReportParseError)
    }

    public let db: JobDatabase
    public let registry: FormatRegistry

    public init(db: JobDatabase, registry: FormatRegistry = .standard) {
        self.db = db
        self.registry = registry
    }

    /// Stores every report the (already decompressed) bytes hold. Throws `ReportParseError` when
    /// the input as a whole is no report and `acceptUnparsed` is false; with it, such input is
    /// stored as format `unparsed` with its job already failed, so nothing sent is lost.
    public func submit(_ data: Data, defaults: Defaults = Defaults(), acceptUnparsed: Bool = false) throws -> [Outcome] {
        try prepare(data, compressed: nil, defaults: defaults, acceptUnparsed: acceptUnparsed).map { prepared in
            switch prepared {
            case .report(let storable): .stored(try db.submit([storable])[0], format: storable.report.format)
            case .refused(let error): .refused(error)
            }
        }
    }

    /// `submit` for the server: the reports are written by `writer` in transactions shared with
    /// concurrent requests. `compressed` is the sender's gzip of `data`, kept as the stored form
    /// when the input is a single report, so the server never compresses it again.
    public func submit(
        _ data: Data, compressed: Data?, defaults: Defaults = Defaults(), through writer: GroupCommit
    ) async throws -> [Outcome] {
        var outcomes: [Outcome] = []
        for prepared in try prepare(data, compressed: compressed, defaults: defaults, acceptUnparsed: false) {
            switch prepared {
            case .report(let storable): outcomes.append(.stored(try await writer.submit(storable), format: storable.report.format))
            case .refused(let error): outcomes.append(.refused(error))
            }
        }
        return outcomes
    }

    private enum Prepared {
        case report(StorableReport)
        case refused(ReportParseError)
    }

    /// Splits and parses the input, and readies each report for the database (digest and stored
    /// form) on the caller's thread.
    private func prepare(_ data: Data, compressed: Data?, defaults: Defaults, acceptUnparsed: Bool) throws -> [Prepared] {
        let parts: [ReportPart]
        do {
            parts = try registry.detectAndParseAll(data)
        } catch {
            guard acceptUnparsed else { throw error }
            return [.report(StorableReport(NewReport(
                raw: data, format: "unparsed", kind: .crash, app: defaults.app, version: defaults.version,
                namespace: defaults.namespace, rejectedBecause: "input error: \(error)")))]
        }
        return parts.map { part in
            switch part.outcome {
            case .success(let report):
                let new = NewReport(
                    raw: part.data, format: report.format, kind: report.kind,
                    app: report.app?.name ?? defaults.app, version: report.app?.version ?? defaults.version,
                    namespace: defaults.namespace, buildIds: report.referencedBuildIds.map(\.hex))
                // The sender's gzip inflates to the whole input: it is this part's stored form
                // only when the part is the input byte for byte (not a split, not trimmed).
                return .report(StorableReport(new, alreadyCompressed: part.data == data ? compressed : nil))
            case .failure(let error):
                return .refused(error)
            }
        }
    }
}
