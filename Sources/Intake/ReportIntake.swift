import Foundation
import Storage
import IsolatedParsing
import ReportModel
import WorkerProtocol

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
        case refused(ParseRefusal)
    }

    public let db: any SQLStore
    /// In process for the CLI; `serve` parses in child processes (`ParserPool`), so a parser
    /// defect costs a request, never the server.
    public let parser: any ReportParser

    public init(db: any SQLStore, parser: any ReportParser = InProcessParser()) {
        self.db = db
        self.parser = parser
    }

    /// Stores every report the (already decompressed) bytes hold. Throws `ParseRefusal` when
    /// the input as a whole is no report and `acceptUnparsed` is false; with it, such input is
    /// stored as format `unparsed` with its job already failed, so nothing sent is lost.
    public func submit(_ data: Data, defaults: Defaults = Defaults(), acceptUnparsed: Bool = false) throws -> [Outcome] {
        try prepare(data, compressed: nil, defaults: defaults, acceptUnparsed: acceptUnparsed).parts.map { prepared in
            switch prepared {
            case .report(let storable): .stored(try db.submit([storable])[0], format: storable.report.format)
            case .refused(let error): .refused(error)
            }
        }
    }

    /// An input parsed and readied for the database, not yet stored: `prepare` is the blocking
    /// half (the parse, the digest, the stored form), for the server's blocking-work pool;
    /// `store(_:through:)` the waiting half.
    public struct Prepared: Sendable {
        fileprivate enum Part: Sendable {
            case report(StorableReport)
            case refused(ParseRefusal)
        }
        fileprivate var parts: [Part]
    }

    /// Parses the input (throwing `ParseRefusal` when it is no report at all) and readies each
    /// report for the database. Blocking. `compressed` is the sender's gzip of `data`, kept as
    /// the stored form when the input is a single report, so the server never compresses it again.
    public func prepare(_ data: Data, compressed: Data?, defaults: Defaults) throws(ParseRefusal) -> Prepared {
        try prepare(data, compressed: compressed, defaults: defaults, acceptUnparsed: false)
    }

    /// Stores what `prepare` readied through `writer`, in transactions shared with concurrent
    /// requests.
    public func store(_ prepared: Prepared, through writer: GroupCommit) async throws -> [Outcome] {
        var outcomes: [Outcome] = []
        for part in prepared.parts {
            switch part {
            case .report(let storable): outcomes.append(.stored(try await writer.submit(storable), format: storable.report.format))
            case .refused(let error): outcomes.append(.refused(error))
            }
        }
        return outcomes
    }

    private func prepare(_ data: Data, compressed: Data?, defaults: Defaults, acceptUnparsed: Bool) throws(ParseRefusal) -> Prepared {
        let parts: [ParsedPartSummary]
        switch parser.parse(data) {
        case .parts(let parsed):
            parts = parsed
        case .refused(let error):
            guard acceptUnparsed else { throw error }
            return Prepared(parts: [.report(StorableReport(NewReport(
                raw: data, format: "unparsed", kind: .crash, app: defaults.app, version: defaults.version,
                namespace: defaults.namespace, rejectedBecause: "input error: \(error)")))])
        }
        return Prepared(parts: parts.map { part in
            switch part.outcome {
            case .success(let report):
                let new = NewReport(
                    raw: part.data ?? data, format: report.format, kind: report.kind,
                    app: report.app ?? defaults.app, version: report.version ?? defaults.version,
                    namespace: defaults.namespace, buildIds: report.buildIds, device: report.device)
                // The sender's gzip inflates to the whole input: it is this part's stored form
                // only when the part is the input byte for byte (not a split, not trimmed).
                return .report(StorableReport(new, alreadyCompressed: part.data == nil ? compressed : nil))
            case .failure(let error):
                return .refused(error)
            }
        })
    }
}
