import Foundation
import ReportModel

/// Crash grouping: the crashing thread's frames (inline levels expanded), minus the
/// crash-handling machinery at the top, recursion collapsed, in-app frames first.
public struct CrashFingerprinter: Sendable {
    public let rules: GroupingRules
    let skipFunctions: GlobList
    let skipImages: GlobList

    public init(rules: GroupingRules = .standard) {
        self.rules = rules
        skipFunctions = GlobList(patterns: rules.skipTop.functions)
        skipImages = GlobList(patterns: rules.skipTop.images)
    }

    /// The thread whose stack decides the group: Apple's "Last Exception Backtrace" when the
    /// report has one (the crashed thread is then only `abort` machinery), else the crashed
    /// thread, else the first.
    public static func crashingThread(of report: SymbolicatedReport) -> SymbolicatedThread? {
        report.threads.first { $0.name == "Last Exception Backtrace" && !$0.frames.isEmpty }
            ?? report.threads.first(where: \.crashed) ?? report.threads.first
    }

    /// Frames of `frames` after dropping crash-handling machinery from the top.
    func skippingMachinery(_ frames: [SymbolicatedFrame]) -> [SymbolicatedFrame] {
        let firstReal = frames.firstIndex { frame in
            let function = frame.function ?? frame.symbol
            let byFunction = function.map { skipFunctions.matches($0) || skipFunctions.matches(FunctionNormalizer.normalize($0, symbol: frame.symbol)) } ?? false
            let byImage = frame.image.map { skipImages.matches(basename($0)) } ?? false
            return !(byFunction || byImage)
        }
        // A stack made only of machinery still groups by that machinery.
        guard let firstReal else { return frames }
        return Array(frames[firstReal...])
    }

    public func key(for report: SymbolicatedReport) -> GroupKey {
        let exception = Self.exceptionName(report.exception)
        // The message says more than the signal (`Fatal error: Index out of range`), so titles lead
        // with it; it is never hashed, because messages carry indices and addresses that vary.
        let headline = Self.headline(report.exception) ?? exception
        let frames = Self.crashingThread(of: report)?.frames ?? []
        let signatures = skippingMachinery(frames).compactMap(FrameSignature.init)
        let decisive = FrameSelection.decide(signatures, maxFrames: rules.maxFrames)
        guard let top = decisive.first else {
            // Nothing to group by but what went wrong (a memory termination has no stack): the
            // app's version and the stated reason then keep unrelated events apart.
            let reason = Self.headline(report.exception) ?? ""
            return GroupKey(
                kind: .crash, title: "\(headline) (no stack)", rulesVersion: rules.version, app: report.app?.name,
                frames: ["<no frames>", exception, "version:\(report.app?.version ?? "")", "reason:\(reason)"])
        }
        return GroupKey(
            kind: .crash, title: "\(headline) in \(top.display)", rulesVersion: rules.version, app: report.app?.name,
            frames: decisive.map(\.signature))
    }

    /// The message's first non-empty line, shortened for a title; nil when the report has none.
    static func headline(_ exception: ExceptionInfo?) -> String? {
        guard let message = exception?.message else { return nil }
        let line = message.split(whereSeparator: \.isNewline).lazy
            .map { $0.trimmingCharacters(in: .whitespaces) }.first { !$0.isEmpty }
        guard let line else { return nil }
        return line.count > 120 ? String(line.prefix(119)) + "…" : line
    }

    /// `SIGSEGV`, `EXC_BAD_ACCESS (SIGSEGV)` style name for titles.
    static func exceptionName(_ exception: ExceptionInfo?) -> String {
        guard let exception else { return "Crash" }
        if let type = exception.type, !type.isEmpty {
            if let signal = exception.signal, !signal.isEmpty, !type.contains(signal) { return "\(type) (\(signal))" }
            return type
        }
        if let signal = exception.signal, !signal.isEmpty { return signal }
        return "Crash"
    }
}
