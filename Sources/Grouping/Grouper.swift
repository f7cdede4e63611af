import ReportModel

/// Marks in-app frames and computes a report's group key: a crash fingerprint or a lag key.
/// Runs in the worker, right after symbolication.
public struct Grouper: Sendable {
    public let rules: GroupingRules
    public let classifier: InAppClassifier
    public let crashes: CrashFingerprinter
    public let lags: LagKeyMaker

    public init(rules: GroupingRules = .standard) {
        self.rules = rules
        classifier = InAppClassifier(rules: rules)
        crashes = CrashFingerprinter(rules: rules)
        lags = LagKeyMaker(rules: rules)
    }

    public func group(_ report: inout SymbolicatedReport) -> GroupKey {
        classifier.mark(&report)
        switch report.kind {
        case .crash: return crashes.key(for: report)
        case .lag: return lags.key(for: report)
        }
    }
}
