// The pre-optimisation implementation of Sources/Grouping, kept verbatim as the oracle of
// `PreOptimisationOracleTests`: fingerprints, titles, frames and lag keys are stored group keys,
// so the optimised code must give byte-identical answers for every input. Copied from d7202b0,
// the commit before the `faster-grouping` changes; the only edits are mechanical renames (a
// `PreOptimisation` prefix on every type and free function, `GroupKey.init(preOptimisationKind:…)`),
// so both can live in one test module, and one import list for the files, each marked with its
// path. Never "fix" this file: it is the reference.

import Foundation
import Hashing
import ReportModel
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

@testable import Grouping

// MARK: - Sources/Grouping/Grouper.swift

/// Marks in-app frames and computes a report's group key: a crash fingerprint or a lag key.
/// Runs in the worker, right after symbolication.
public struct PreOptimisationGrouper: Sendable {
    public let rules: GroupingRules
    public let classifier: PreOptimisationInAppClassifier
    public let crashes: PreOptimisationCrashFingerprinter
    public let lags: PreOptimisationLagKeyMaker

    public init(rules: GroupingRules = .standard) {
        self.rules = rules
        classifier = PreOptimisationInAppClassifier(rules: rules)
        crashes = PreOptimisationCrashFingerprinter(rules: rules)
        lags = PreOptimisationLagKeyMaker(rules: rules)
    }

    public func group(_ report: inout SymbolicatedReport) -> GroupKey {
        classifier.mark(&report)
        switch report.kind {
        case .crash: return crashes.key(for: report)
        case .lag: return lags.key(for: report)
        }
    }
}

// MARK: - Sources/Grouping/CrashFingerprint.swift

/// Crash grouping: the crashing thread's frames (inline levels expanded), minus the
/// crash-handling machinery at the top, recursion collapsed, in-app frames first.
public struct PreOptimisationCrashFingerprinter: Sendable {
    public let rules: GroupingRules
    let skipFunctions: PreOptimisationGlobList
    let skipImages: PreOptimisationGlobList

    public init(rules: GroupingRules = .standard) {
        self.rules = rules
        skipFunctions = PreOptimisationGlobList(patterns: rules.skipTop.functions)
        skipImages = PreOptimisationGlobList(patterns: rules.skipTop.images)
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
            let byFunction = function.map { skipFunctions.matches($0) || skipFunctions.matches(PreOptimisationFunctionNormalizer.normalize($0, symbol: frame.symbol)) } ?? false
            let byImage = frame.image.map { skipImages.matches(preOptimisationBasename($0)) } ?? false
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
        let signatures = skippingMachinery(frames).compactMap(PreOptimisationFrameSignature.init)
        let decisive = PreOptimisationFrameSelection.decide(signatures, maxFrames: rules.maxFrames)
        guard let top = decisive.first else {
            // Nothing to group by but what went wrong (a memory termination has no stack): the
            // app's version and the stated reason then keep unrelated events apart.
            let reason = Self.headline(report.exception) ?? ""
            return GroupKey(
                preOptimisationKind: .crash, title: "\(headline) (no stack)", rulesVersion: rules.version, app: report.app?.name,
                frames: ["<no frames>", exception, "version:\(report.app?.version ?? "")", "reason:\(reason)"])
        }
        return GroupKey(
            preOptimisationKind: .crash, title: "\(headline) in \(top.display)", rulesVersion: rules.version, app: report.app?.name,
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

// MARK: - Sources/Grouping/InAppClassifier.swift

/// Decides which images belong to the app (its executable, frameworks and libraries) and
/// marks every symbolicated frame with `inApp`.
public struct PreOptimisationInAppClassifier: Sendable {
    let include: PreOptimisationGlobList
    let exclude: PreOptimisationGlobList

    public init(rules: GroupingRules) {
        include = PreOptimisationGlobList(patterns: rules.inApp.include)
        exclude = PreOptimisationGlobList(patterns: rules.inApp.exclude)
    }

    /// Include patterns win; otherwise an image is the app's unless an exclude pattern
    /// (a system location or a known system library) matches its path or name.
    public func isInApp(_ image: BinaryImage, appName: String? = nil) -> Bool {
        let candidates = [image.path, image.name, preOptimisationBasename(image.name)].compactMap { $0 }
        if let appName, !appName.isEmpty, candidates.contains(where: { preOptimisationBasename($0) == appName }) { return true }
        if candidates.contains(where: include.matches) { return true }
        return !candidates.contains(where: exclude.matches)
    }

    /// Sets `inApp` on every frame of threads and lag data; frames in no image stay nil.
    public func mark(_ report: inout SymbolicatedReport) {
        var byName: [String: Bool] = [:]
        for image in report.images where byName[image.name] == nil {
            byName[image.name] = isInApp(image, appName: report.app?.name)
        }
        func mark(_ frames: inout [SymbolicatedFrame]) {
            for i in frames.indices {
                frames[i].inApp = frames[i].image.flatMap { byName[$0] }
            }
        }
        for t in report.threads.indices { mark(&report.threads[t].frames) }
        if report.lag != nil {
            for s in report.lag!.samples.indices { mark(&report.lag!.samples[s].frames) }
            for n in report.lag!.profile.indices { mark(&report.lag!.profile[n].frames) }
        }
    }
}

/// The file name of an image path: after the last `!` (Android libraries inside an APK are
/// named `base.apk!libfoo.so`), then after the last `/`; empty components (a trailing `/`) are
/// skipped, and a path with no component at all is kept whole.
///
/// A backward byte scan rather than `split`: split built two arrays of substrings for every
/// frame, which made this 14% of a worker's CPU on 30-frame crashes (perf).
func preOptimisationBasename(_ path: String) -> String {
    let afterBang = preOptimisationLastComponent(of: path[...], separatedBy: UInt8(ascii: "!")) ?? path[...]
    return String(preOptimisationLastComponent(of: afterBang, separatedBy: UInt8(ascii: "/")) ?? afterBang)
}

/// The last non-empty run of `text` between `separator` bytes; nil when there is none.
private func preOptimisationLastComponent(of text: Substring, separatedBy separator: UInt8) -> Substring? {
    let bytes = text.utf8
    var end = bytes.endIndex
    while end > bytes.startIndex, bytes[bytes.index(before: end)] == separator { end = bytes.index(before: end) }
    guard end > bytes.startIndex else { return nil }
    var start = end
    while start > bytes.startIndex, bytes[bytes.index(before: start)] != separator { start = bytes.index(before: start) }
    // Split at the byte, as the file system does (`split` compared Characters, so a combining
    // mark right after a `/` hid it); both ends are scalar boundaries, next to an ASCII byte.
    return text[start..<end]
}

// MARK: - Sources/Grouping/FunctionNormalizer.swift

/// Reduces a demangled function name to what identifies the function across builds:
/// no parameters, return types, template or generic arguments, compiler clone suffixes or
/// specialisation prefixes. Hand-written because no library normalises names for grouping;
/// the rules follow Sentry's and Socorro's signature normalisation.
public enum PreOptimisationFunctionNormalizer {
    /// The source language a name was mangled in, judged from its raw linkage name.
    public enum Language: Sendable {
        case cxx, swift, objectiveC, c
    }

    public static func language(symbol: String?, function: String) -> Language {
        if function.hasPrefix("-[") || function.hasPrefix("+[") { return .objectiveC }
        if let symbol {
            if symbol.hasPrefix("_Z") || symbol.hasPrefix("__Z") { return .cxx }
            for prefix in ["$s", "_$s", "$S", "_$S", "$e", "_$e", "_T0", "__T0"] where symbol.hasPrefix(prefix) {
                return .swift
            }
        }
        return .c
    }

    public static func normalize(_ function: String, symbol: String? = nil) -> String {
        let key = CacheKey(function: function, symbol: symbol)
        if let known = cache.withLock({ $0[key] }) { return known }
        let normalized = uncachedNormalize(function, symbol: symbol)
        cache.withLock { entries in
            // Bounded, so hostile names cannot grow a long-lived worker without limit; emptied
            // rather than evicted one by one, since a worker's hot names come straight back.
            if entries.count >= cacheLimit { entries.removeAll(keepingCapacity: true) }
            entries[key] = normalized
        }
        return normalized
    }

    private struct CacheKey: Hashable {
        var function: String
        var symbol: String?
    }

    /// Normalised names per unique symbol, for the life of the process: a worker sees the same
    /// system and app frames in report after report, and normalising was 43% of its CPU on
    /// 30-frame reports (about 28 µs a frame, 5–6× the cost of resolving the frame).
    private static let cache = Mutex<[CacheKey: String]>([:])
    private static let cacheLimit = 50_000

    private static func uncachedNormalize(_ function: String, symbol: String?) -> String {
        switch language(symbol: symbol, function: function) {
        case .objectiveC: return function
        case .swift: return swift(function)
        case .cxx: return cxx(function)
        case .c: return stripCloneSuffixes(function)
        }
    }

    // MARK: C++

    /// `int (anonymous namespace)::Box<int, 3>::area(int) const [clone .cold]` → `{anonymous}::Box<T>::area`.
    public static func cxx(_ name: String) -> String {
        var s = stripCloneSuffixes(name)
        for spelling in ["(anonymous namespace)", "`anonymous namespace'", "{anonymous}"] {
            s = s.replacingOccurrences(of: spelling, with: "{anonymous}")
        }
        s = collapseLambdas(s)
        s = collapseAngleBrackets(s)
        s = dropParameters(s)
        return dropReturnType(s)
    }

    /// `{lambda(int)#1}` → `{lambda}`: the parameter list and ordinal change with unrelated edits.
    static func collapseLambdas(_ s: String) -> String {
        var out = ""
        var rest = Substring(s)
        while let start = rest.range(of: "{lambda(") {
            out += rest[..<start.lowerBound]
            guard let close = rest[start.upperBound...].firstIndex(of: "}") else {
                rest = rest[start.lowerBound...]
                break
            }
            out += "{lambda}"
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    /// Every outermost `<…>` becomes `<T>`; `operator<`, `operator<<`, `operator->` and friends are kept.
    static func collapseAngleBrackets(_ s: String) -> String {
        let chars = Array(s)
        var out = ""
        var i = 0
        while i < chars.count {
            if let op = operatorToken(chars, at: i) {
                out += String(chars[i..<op])
                i = op
                continue
            }
            if chars[i] == "<" {
                var depth = 0
                var j = i
                while j < chars.count {
                    if let op = operatorToken(chars, at: j) { j = op; continue }
                    if chars[j] == "<" { depth += 1 } else if chars[j] == ">" {
                        depth -= 1
                        if depth == 0 { break }
                    }
                    j += 1
                }
                out += "<T>"
                i = j + 1
                continue
            }
            out.append(chars[i])
            i += 1
        }
        return out
    }

    /// If an `operator…` token starts at `i`, the index just past it.
    private static func operatorToken(_ chars: [Character], at i: Int) -> Int? {
        let word = Array("operator")
        guard i + word.count <= chars.count, Array(chars[i..<i + word.count]) == word else { return nil }
        if i > 0, chars[i - 1].isLetter || chars[i - 1].isNumber || chars[i - 1] == "_" { return nil }
        var j = i + word.count
        if j < chars.count, chars[j] == "(" , j + 1 < chars.count, chars[j + 1] == ")" { return j + 2 }
        if j < chars.count, chars[j] == "[", j + 1 < chars.count, chars[j + 1] == "]" { return j + 2 }
        let symbols: Set<Character> = ["<", ">", "=", "!", "+", "-", "*", "/", "%", "^", "&", "|", "~", ",", "-"]
        while j < chars.count, symbols.contains(chars[j]) { j += 1 }
        return j
    }

    /// Cuts at the first top-level `(`: the parameter list and any `const`/`&` qualifiers after it.
    static func dropParameters(_ s: String) -> String {
        let chars = Array(s)
        var i = 0
        while i < chars.count {
            if let op = operatorToken(chars, at: i) { i = op; continue }
            if chars[i] == "(" && i > 0 { return String(chars[..<i]).preOptimisationTrimmingTrailingSpaces() }
            i += 1
        }
        return s
    }

    /// `unsigned long std::foo<T>` → `std::foo<T>`: whatever precedes the last top-level space
    /// is a return type, except in `operator new`, `operator delete` and conversion operators.
    static func dropReturnType(_ s: String) -> String {
        let chars = Array(s)
        var lastSpace: Int?
        var depth = 0
        var i = 0
        while i < chars.count {
            if let op = operatorToken(chars, at: i) {
                // "operator new", "operator bool": the space after `operator` belongs to the name.
                var j = op
                while j < chars.count, chars[j] == " " { j += 1 }
                while j < chars.count, chars[j] != "(" && chars[j] != "<" { j += 1 }
                i = max(j, op)
                continue
            }
            switch chars[i] {
            case "<", "(", "[", "{": depth += 1
            case ">", ")", "]", "}": depth -= 1
            case " " where depth == 0: lastSpace = i
            default: break
            }
            i += 1
        }
        guard let lastSpace else { return s }
        return String(chars[(lastSpace + 1)...])
    }

    // MARK: Swift

    /// `generic specialization <Swift.Int> of Parser.next<A>() -> A?` → `Parser.next()`.
    public static func swift(_ name: String) -> String {
        var s = name
        let prefixes = [
            "specialized ", "merged ", "partial apply for ", "@objc ", "dynamic ", "outlined ",
            "reabstraction thunk helper ", "protocol witness for ", "@nonobjc ",
        ]
        var changed = true
        while changed {
            changed = false
            for prefix in prefixes where s.hasPrefix(prefix) {
                s.removeFirst(prefix.count)
                changed = true
            }
            for kind in ["generic specialization ", "function signature specialization ", "generic partial specialization "]
            where s.hasPrefix(kind) {
                // "<…> of " follows; the bracketed part lists the specialised types.
                if let of = s.range(of: "> of ") {
                    s = String(s[of.upperBound...])
                    changed = true
                }
            }
        }
        if let suffix = s.range(of: " with unmangled suffix ") { s = String(s[..<suffix.lowerBound]) }
        // The full demangler's return type (`-> A?`) and generic arguments vary with specialisation.
        if let arrow = topLevelArrow(s) { s = String(s[..<arrow]).preOptimisationTrimmingTrailingSpaces() }
        return collapseAngleBrackets(s)
    }

    private static func topLevelArrow(_ s: String) -> String.Index? {
        var depth = 0
        var i = s.startIndex
        while i < s.endIndex {
            switch s[i] {
            case "(", "<", "[": depth += 1
            case ")", "]": depth -= 1
            case ">":
                // `->` is not a closing bracket.
                if i > s.startIndex, s[s.index(before: i)] == "-" {
                    if depth == 0 { return s.index(before: i) }
                } else {
                    depth -= 1
                }
            default: break
            }
            i = s.index(after: i)
        }
        return nil
    }

    // MARK: Shared

    /// `foo [clone .cold]`, `foo.cold`, `foo.constprop.0`, `foo.isra.0.part.1`, `foo.llvm.1234` → `foo`.
    public static func stripCloneSuffixes(_ name: String) -> String {
        var s = name
        while let clone = s.range(of: " [clone ") {
            guard let close = s[clone.upperBound...].firstIndex(of: "]") else { break }
            s.removeSubrange(clone.lowerBound...close)
        }
        let suffixes = ["cold", "constprop", "isra", "part", "lto_priv", "llvm", "localalias", "clone", "str"]
        var changed = true
        while changed {
            changed = false
            guard let dot = s.lastIndex(of: "."), dot > s.startIndex else { break }
            let tail = s[s.index(after: dot)...]
            if !tail.isEmpty, tail.allSatisfy(\.isNumber) || suffixes.contains(String(tail)) {
                // A numeric tail only counts after a known suffix (`.constprop.0`), not `v1.2`.
                if tail.allSatisfy(\.isNumber) {
                    let before = s[..<dot]
                    guard let previousDot = before.lastIndex(of: "."),
                        suffixes.contains(String(before[before.index(after: previousDot)...]))
                    else { break }
                }
                s = String(s[..<dot])
                changed = true
            }
        }
        return s
    }
}

extension String {
    func preOptimisationTrimmingTrailingSpaces() -> String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}

// MARK: - Sources/Grouping/LagKey.swift

/// Lag (main-thread hang) grouping, the SDK design's server-side aggregation
/// (docs/formats.md, "SDK lag report"): from stack samples, the stack whose (top-frame address, depth)
/// recurs most; from a thread-profile tree, the in-app method closest to the top whose cost
/// dominates its parent's.
public struct PreOptimisationLagKeyMaker: Sendable {
    public let rules: GroupingRules

    public init(rules: GroupingRules = .standard) { self.rules = rules }

    /// The stack a lag report is grouped by, top of stack first, with how it was chosen.
    public struct LagStack: Sendable, Equatable {
        public enum Source: String, Sendable { case samples, profile, mainThread }
        public var frames: [SymbolicatedFrame]
        public var source: Source
        /// Function names root first, the way the SDK design writes a lag stack: `func1 - func2 - func3`.
        public var description: String {
            frames.reversed().map { $0.function ?? $0.symbol ?? "\($0.image ?? "?")+0x\(String($0.imageOffset?.value ?? 0, radix: 16))" }
                .joined(separator: " - ")
        }
    }

    public func key(for report: SymbolicatedReport) -> GroupKey {
        guard let stack = lagStack(of: report) else {
            return GroupKey(
                preOptimisationKind: .lag, title: "Main-thread hang (no stack)", rulesVersion: rules.version, app: report.app?.name,
                frames: ["<no frames>"])
        }
        let signatures = stack.frames.compactMap(PreOptimisationFrameSignature.init)
        let decisive = PreOptimisationFrameSelection.decide(signatures, maxFrames: rules.maxFrames)
        guard let top = decisive.first else {
            return GroupKey(
                preOptimisationKind: .lag, title: "Main-thread hang (no stack)", rulesVersion: rules.version, app: report.app?.name,
                frames: ["<no frames>"])
        }
        return GroupKey(
            preOptimisationKind: .lag, title: "Hang in \(top.display)", rulesVersion: rules.version, app: report.app?.name,
            frames: decisive.map(\.signature))
    }

    /// Samples when the report has them, else the profile tree, else the main thread's stack.
    public func lagStack(of report: SymbolicatedReport) -> LagStack? {
        if let lag = report.lag {
            if let frames = Self.dominantSample(lag.samples) { return LagStack(frames: frames, source: .samples) }
            if let frames = profileStack(lag.profile) { return LagStack(frames: frames, source: .profile) }
        }
        let main = report.threads.first { $0.index == 0 } ?? report.threads.first
        guard let main, !main.frames.isEmpty else { return nil }
        return LagStack(frames: main.frames, source: .mainThread)
    }

    // MARK: Samples

    /// The sample whose (top-frame address, depth) pair occurs most often: during a hang the
    /// main thread's stack barely changes. Ties go to the pair seen first; the latest sample
    /// with the winning pair is returned.
    static func dominantSample(_ samples: [SymbolicatedSample]) -> [SymbolicatedFrame]? {
        struct Pair: Hashable { var top: UInt64; var depth: Int }
        var counts: [Pair: Int] = [:]
        var order: [Pair] = []
        var latest: [Pair: Int] = [:]
        for (i, sample) in samples.enumerated() {
            guard let top = sample.frames.first else { continue }
            // Depth counts raw frames: inline levels share one address.
            let depth = Set(sample.frames.map(\.index)).count
            let pair = Pair(top: top.address.value, depth: depth)
            if counts[pair] == nil { order.append(pair) }
            counts[pair, default: 0] += 1
            latest[pair] = i
        }
        var best: Pair?
        for pair in order where best == nil || counts[pair, default: 0] > counts[best!, default: 0] {
            best = pair
        }
        guard let best, let index = latest[best] else { return nil }
        return samples[index].frames
    }

    // MARK: Thread-profile tree

    /// The SDK's trimming for oversized trees: nodes deeper than `maxProfileDepth` go; then,
    /// while the tree is larger than `maxProfileNodes`, round k drops every node (with its
    /// subtree) costing at most k × `trimStepMs`, for k = 1…`trimRounds`.
    public func trim(_ nodes: [SymbolicatedProfileNode]) -> [SymbolicatedProfileNode] {
        var kept = Self.dropSubtrees(nodes) { $0.node.depth >= rules.lag.maxProfileDepth }
        var round = 1
        while kept.count > rules.lag.maxProfileNodes && round <= rules.lag.trimRounds {
            let limit = Double(round) * rules.lag.trimStepMs
            kept = Self.dropSubtrees(kept) { $0.node.costTime <= limit }
            round += 1
        }
        return kept
    }

    /// Removes every node matching `drop` together with its descendants (pre-order: the
    /// nodes after it with a greater depth).
    static func dropSubtrees(
        _ nodes: [SymbolicatedProfileNode], where drop: (SymbolicatedProfileNode) -> Bool
    ) -> [SymbolicatedProfileNode] {
        var out: [SymbolicatedProfileNode] = []
        var droppingBelow: Int?
        for node in nodes {
            if let depth = droppingBelow {
                if node.node.depth > depth { continue }
                droppingBelow = nil
            }
            if drop(node) {
                droppingBelow = node.node.depth
                continue
            }
            out.append(node)
        }
        return out
    }

    /// The key node: the in-app node closest to the top of the stack (deepest) with
    /// `cost > parentCost × 1.1 / n && cost > parentCost × 0.2`, n being the number of nodes
    /// at its depth. Roots compare against the sum of the roots. Returns the path from the
    /// key node up to the root, top of stack first; nil when no node qualifies.
    public func keyPath(_ nodes: [SymbolicatedProfileNode]) -> [SymbolicatedProfileNode]? {
        let tree = trim(nodes)
        guard !tree.isEmpty else { return nil }
        var parent = [Int?](repeating: nil, count: tree.count)
        var stack: [Int] = []
        var atDepth: [Int: Int] = [:]
        for (i, node) in tree.enumerated() {
            while let last = stack.last, tree[last].node.depth >= node.node.depth { stack.removeLast() }
            parent[i] = stack.last
            stack.append(i)
            atDepth[node.node.depth, default: 0] += 1
        }
        let rootCost = tree.indices.filter { parent[$0] == nil }.map { tree[$0].node.costTime }.reduce(0, +)
        var best: Int?
        for (i, node) in tree.enumerated() {
            let parentCost = parent[i].map { tree[$0].node.costTime } ?? rootCost
            let n = Double(atDepth[node.node.depth] ?? 1)
            let cost = node.node.costTime
            guard cost > parentCost * 1.1 / n && cost > parentCost * 0.2 else { continue }
            guard node.frames.contains(where: { $0.inApp == true }) else { continue }
            if let b = best {
                let current = tree[b].node
                if node.node.depth < current.depth || (node.node.depth == current.depth && cost <= current.costTime) { continue }
            }
            best = i
        }
        guard let best else { return nil }
        var path: [SymbolicatedProfileNode] = []
        var cursor: Int? = best
        while let c = cursor {
            path.append(tree[c])
            cursor = parent[c]
        }
        return path
    }

    /// The key path's frames, top of stack first (each node's inline levels innermost first).
    func profileStack(_ nodes: [SymbolicatedProfileNode]) -> [SymbolicatedFrame]? {
        guard let path = keyPath(nodes) else { return nil }
        let frames = path.flatMap(\.frames)
        return frames.isEmpty ? nil : frames
    }
}

// MARK: - Sources/Grouping/GroupKey.swift

extension GroupKey {
    /// A key for `frames`; the fingerprint hashes kind, rules version, the app and the frames, so a
    /// rules change can never silently merge or split groups, and two programs never share one.
    init(preOptimisationKind kind: ReportKind, title: String, rulesVersion: Int, app: String?, frames: [String]) {
        let text = (["stackline-group", kind.rawValue, "rules-v\(rulesVersion)", "app:\(app ?? "")"] + frames)
            .joined(separator: "\n")
        self.init(
            fingerprint: String(SHA256.hex(Data(text.utf8)).prefix(32)), kind: kind, title: title,
            rulesVersion: rulesVersion, frames: frames)
    }
}

/// One frame (inline level) reduced to what groups it.
struct PreOptimisationFrameSignature: Equatable {
    /// `image!function`, or `image+0xoffset` when the frame has no symbol.
    var signature: String
    var inApp: Bool
    /// For titles: the normalised function and the source file's basename.
    var function: String?
    var file: String?
    var image: String

    init?(_ frame: SymbolicatedFrame) {
        guard let imageName = frame.image else { return nil }
        image = preOptimisationBasename(imageName)
        inApp = frame.inApp ?? false
        if let name = frame.function ?? frame.symbol, !name.isEmpty {
            let normalized = PreOptimisationFunctionNormalizer.normalize(name, symbol: frame.symbol)
            function = normalized
            signature = "\(image)!\(normalized)"
            file = frame.file.map(preOptimisationBasename)
        } else {
            // Same build, same code: the offset inside the image is stable across launches.
            let offset = frame.imageOffset?.value ?? 0
            signature = "\(image)+0x\(String(offset, radix: 16))"
        }
    }

    /// `func — file`, `func — image` or `image+0x…` for titles.
    var display: String {
        guard let function else { return signature }
        return "\(function) — \(file ?? image)"
    }
}

/// Frame selection shared by crash fingerprints and lag keys: collapse recursion, prefer
/// in-app frames, keep at most `maxFrames`.
enum PreOptimisationFrameSelection {
    static func decide(_ frames: [PreOptimisationFrameSignature], maxFrames: Int) -> [PreOptimisationFrameSignature] {
        var collapsed: [PreOptimisationFrameSignature] = []
        for frame in frames where collapsed.last?.signature != frame.signature {
            collapsed.append(frame)
        }
        let inApp = collapsed.filter(\.inApp)
        return Array((inApp.isEmpty ? collapsed : inApp).prefix(maxFrames))
    }
}

// MARK: - Sources/Grouping/GroupingRules.swift

/// fnmatch(3) globs: `*`, `?`, `[…]`, the same syntax as shell patterns.
struct PreOptimisationGlobList: Sendable {
    let patterns: [String]

    func matches(_ text: String) -> Bool {
        patterns.contains { fnmatch($0, text, 0) == 0 }
    }
}
