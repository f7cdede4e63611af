import Foundation
import ReportModel

/// Crash grouping: the crashing thread's frames (inline levels expanded), minus the
/// crash-handling machinery at the top, recursion collapsed, in-app frames first.
public struct CrashFingerprinter: Sendable {
    public let rules: GroupingRules
    let skipFunctions: GlobList
    let skipImages: GlobList
    /// Whether a name (or an image) is machinery, per unique one: each top frame's name,
    /// normalised name and image tried against every pattern showed in a worker's profile
    /// (scripts/bench-queue.sh).
    private let machineryNames = BoundedMemo<FunctionNormalizer.Name, Bool>(limit: 50_000)
    private let machineryImages = BoundedMemo<String, Bool>(limit: 10_000)

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
    func skippingMachinery(_ frames: [SymbolicatedFrame]) -> ArraySlice<SymbolicatedFrame> {
        // A stack made only of machinery still groups by that machinery.
        frames[(frames.firstIndex { !isMachinery($0) } ?? frames.startIndex)...]
    }

    func isMachinery(_ frame: SymbolicatedFrame) -> Bool {
        if let function = frame.function ?? frame.symbol {
            let byFunction = machineryNames.value(for: FunctionNormalizer.Name(function, symbol: frame.symbol)) { name in
                skipFunctions.matches(name.function) || skipFunctions.matches(FunctionNormalizer.normalize(name))
            }
            if byFunction { return true }
        }
        guard let image = frame.image else { return false }
        return machineryImages.value(for: image) { skipImages.matches(basename($0)) }
    }

    public func key(for report: SymbolicatedReport) -> GroupKey {
        let exception = Self.exceptionName(report.exception)
        // The message says more than the signal (`Fatal error: Index out of range`), so titles lead
        // with it; it is never hashed, because messages carry indices and addresses that vary.
        let message = Self.headline(report.exception)
        let headline = message ?? exception
        let frames = Self.crashingThread(of: report)?.frames ?? []
        let decisive = FrameSelection.decide(skippingMachinery(frames), maxFrames: rules.maxFrames)
        guard let top = decisive.first else {
            // Nothing to group by but what went wrong (a memory termination has no stack): the
            // app's version and the stated reason then keep unrelated events apart.
            return GroupKey(
                kind: .crash, title: "\(headline) (no stack)", rulesVersion: rules.version, app: report.app?.name,
                frames: ["<no frames>", exception, "version:\(report.app?.version ?? "")", "reason:\(message ?? "")"])
        }
        return GroupKey(
            kind: .crash, title: "\(headline) in \(top.display)", rulesVersion: rules.version, app: report.app?.name,
            frames: decisive.map(\.signature))
    }

    /// The message's first non-empty line, shortened for a title; nil when the report has none.
    static func headline(_ exception: ExceptionInfo?) -> String? {
        guard let message = exception?.message, let line = firstLine(of: message) else { return nil }
        // `count` walks grapheme clusters; a line of at most 120 bytes has at most 120 of them.
        return line.utf8.count > 120 && line.count > 120 ? String(line.prefix(119)) + "…" : line
    }

    /// The first line of `message` that is not blank, without leading and trailing whitespace:
    /// the message split at newlines (`Character.isNewline`) and each line trimmed of
    /// `CharacterSet.whitespaces`, as Foundation does it.
    ///
    /// A byte scan: Foundation's split and trim (through NSString) showed in a worker's profile
    /// on one-line messages (scripts/bench-queue.sh). The newlines are scanned as their UTF-8 bytes (each is a
    /// grapheme cluster of its own, CR LF aside, so a split at scalars splits at Characters), and
    /// spaces and tabs, the only ASCII members of `.whitespaces`, are trimmed here; a line whose
    /// first or last other byte is not ASCII (a Unicode space such as U+00A0 or U+3000 may be
    /// trimmed there, or a combining mark may join a space) is left to Foundation.
    static func firstLine(of message: String) -> String? {
        var message = message
        let scanned = message.withUTF8 { bytes -> String?? in
            var start = 0
            while start < bytes.count {
                var end = start
                var next = bytes.count
                while end < bytes.count {
                    if let length = newlineLength(bytes, at: end) {
                        next = end + length
                        break
                    }
                    end += 1
                }
                while start < end, bytes[start] == UInt8(ascii: " ") || bytes[start] == UInt8(ascii: "\t") { start += 1 }
                while end > start, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\t") { end -= 1 }
                if start < end {
                    guard bytes[start] < 0x80, bytes[end - 1] < 0x80 else { return nil }
                    return .some(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self))
                }
                start = next
            }
            return .some(nil)
        }
        if let scanned { return scanned }
        return message.split(whereSeparator: \.isNewline).lazy
            .map { $0.trimmingCharacters(in: .whitespaces) }.first { !$0.isEmpty }
    }

    /// The length in bytes of the newline at `i` (LF, VT, FF, CR, NEL, LS, PS: the scalars
    /// `Character.isNewline` looks for), nil when there is none.
    private static func newlineLength(_ bytes: UnsafeBufferPointer<UInt8>, at i: Int) -> Int? {
        switch bytes[i] {
        case 0x0A...0x0D: return 1
        case 0xC2 where i + 1 < bytes.count && bytes[i + 1] == 0x85: return 2
        case 0xE2 where i + 2 < bytes.count && bytes[i + 1] == 0x80 && (bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9):
            return 3
        default: return nil
        }
    }

    /// `SIGSEGV`, `EXC_BAD_ACCESS (SIGSEGV)` style name for titles.
    static func exceptionName(_ exception: ExceptionInfo?) -> String {
        guard let exception else { return "Crash" }
        if let type = exception.type, !type.isEmpty {
            if let signal = exception.signal, !signal.isEmpty, !UTF8Search.contains(type, signal) { return "\(type) (\(signal))" }
            return type
        }
        if let signal = exception.signal, !signal.isEmpty { return signal }
        return "Crash"
    }
}
