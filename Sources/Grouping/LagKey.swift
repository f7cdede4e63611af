import ReportModel

/// Lag (main-thread hang) grouping, the SDK design's server-side aggregation
/// (docs/formats.md, "SDK lag report"): from stack samples, the stack whose (top-frame address, depth)
/// recurs most; from a thread-profile tree, the in-app method closest to the top whose cost
/// dominates its parent's.
public struct LagKeyMaker: Sendable {
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
                kind: .lag, title: "Main-thread hang (no stack)", rulesVersion: rules.version, app: report.app?.name,
                frames: ["<no frames>"])
        }
        let decisive = FrameSelection.decide(stack.frames, maxFrames: rules.maxFrames)
        guard let top = decisive.first else {
            return GroupKey(
                kind: .lag, title: "Main-thread hang (no stack)", rulesVersion: rules.version, app: report.app?.name,
                frames: ["<no frames>"])
        }
        return GroupKey(
            kind: .lag, title: "Hang in \(top.display)", rulesVersion: rules.version, app: report.app?.name,
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
        struct Tally { var count: Int; var latest: Int }
        var tallies: [Pair: Tally] = [:]
        var order: [Pair] = []
        for (i, sample) in samples.enumerated() {
            guard let top = sample.frames.first else { continue }
            let pair = Pair(top: top.address.value, depth: rawFrameCount(sample.frames))
            if let tally = tallies[pair] {
                tallies[pair] = Tally(count: tally.count + 1, latest: i)  // overflow: at most one per sample of an array
            } else {
                order.append(pair)
                tallies[pair] = Tally(count: 1, latest: i)
            }
        }
        var best: Tally?
        for pair in order {
            // Every count is at least 1, so the first pair always takes the lead.
            if let tally = tallies[pair], tally.count > best?.count ?? 0 { best = tally }
        }
        guard let best else { return nil }
        return samples[best.latest].frames
    }

    /// Depth counts raw frames, not inline levels: the distinct frame indices. A raw frame's
    /// levels are adjacent and indices ascend, so runs are counted without building a Set for
    /// every sample; any other order is counted with one.
    static func rawFrameCount(_ frames: [SymbolicatedFrame]) -> Int {
        var runs = 0
        var previous: Int?
        for frame in frames {
            if let previous, frame.index < previous { return Set(frames.map(\.index)).count }
            if frame.index != previous { runs += 1 }
            previous = frame.index
        }
        return runs
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
        // Nothing to drop is the common case (a tree within the SDK's limits): no copy of it then.
        guard let firstDropped = nodes.firstIndex(where: drop) else { return nodes }
        var out = Array(nodes[..<firstDropped])
        var droppingBelow: Int?
        for node in nodes[firstDropped...] {
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
        // By index, reading only `node`: enumerating copied every node with its frames (perf:
        // retain and release were most of this function).
        for i in tree.indices {
            let depth = tree[i].node.depth
            while let last = stack.last, tree[last].node.depth >= depth { stack.removeLast() }
            parent[i] = stack.last
            stack.append(i)
            atDepth[depth, default: 0] += 1
        }
        var rootCost = 0.0
        for i in tree.indices where parent[i] == nil { rootCost += tree[i].node.costTime }
        var best: Int?
        for i in tree.indices {
            let node = tree[i].node
            let parentCost = parent[i].map { tree[$0].node.costTime } ?? rootCost
            let n = Double(atDepth[node.depth] ?? 1)
            let cost = node.costTime
            guard cost > parentCost * 1.1 / n && cost > parentCost * 0.2 else { continue }
            guard tree[i].frames.contains(where: { $0.inApp == true }) else { continue }
            if let b = best {
                let current = tree[b].node
                if node.depth < current.depth || (node.depth == current.depth && cost <= current.costTime) { continue }
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
