/// What a report is grouped by: a fingerprint (crashes) or lag key (hangs), made with a
/// given rules version, plus a title for people. The worker computes it (Grouping), the
/// result frame carries it (WorkerProtocol) and the queue files the report under it (Storage).
public struct GroupKey: Codable, Sendable, Hashable {
    /// 32 lowercase hex digits (Grouping: the first 128 bits of a SHA-256 over kind, rules version and frames).
    public var fingerprint: String
    public var kind: ReportKind
    /// e.g. `SIGSEGV in Parser.next() — Lexer.swift`.
    public var title: String
    public var rulesVersion: Int
    /// The frame signatures that decided the group, top of stack first.
    public var frames: [String]

    /// A key whose fingerprint was computed elsewhere (Grouping makes new ones from the frames).
    public init(fingerprint: String, kind: ReportKind, title: String, rulesVersion: Int, frames: [String]) {
        self.fingerprint = fingerprint
        self.kind = kind
        self.title = title
        self.rulesVersion = rulesVersion
        self.frames = frames
    }
}
