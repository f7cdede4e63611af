import ReportModel

/// One node of a flame graph: a frame and how many samples passed through it.
public struct FlameNode: Sendable, Equatable {
    /// What the rectangle is labelled with: the function (outermost inline level), else the address.
    public var label: String
    /// `image!function`, compared with the lag key's frames.
    public var signature: String
    public var count: Int
    /// Index of the parent in the node list (parents come first), nil for a root.
    public var parent: Int?
    /// Distance from the root (0 for a root), as reconstructed from the tree, not as claimed.
    public var level: Int
    public var inApp: Bool
    /// One of the frames the group's lag key was made of.
    public var isKey: Bool

    public init(label: String, signature: String, count: Int, parent: Int?, level: Int, inApp: Bool = false, isKey: Bool = false) {
        self.label = label
        self.signature = signature
        self.count = count
        self.parent = parent
        self.level = level
        self.inApp = inApp
        self.isKey = isKey
    }
}

/// One rectangle of the drawn graph, for the node at `node` in the list.
public struct FlameRect: Sendable, Equatable {
    public var node: Int
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double
}

/// Geometry of a whole graph: every rectangle, and what was left out.
public struct FlameLayout: Sendable, Equatable {
    public var rects: [FlameRect]
    public var width: Double
    public var height: Double
    /// Samples across all roots (the whole that every share is a part of).
    public var total: Int
    /// Nodes not drawn because they lie deeper than `FlameGraph.maxLevels`.
    public var omitted: Int
}

/// Flame graphs of lag reports, laid out on the server: from the SDK's profile tree (one node
/// per profile node) or, without one, from the stack samples merged into a tree.
/// Rectangles hang from the root at the top (an icicle), each as wide as its count.
public enum FlameGraph {
    /// Levels drawn at most: a profile may claim any depth, the page stays bounded.
    public static let maxLevels = 256

    /// The profile tree as nodes, in the profile's own (pre-)order: a node's parent is the
    /// nearest earlier node with a smaller depth, as the SDK defines it.
    public static func nodes(profile: [SymbolicatedProfileNode], keyFrames: [String]) -> [FlameNode] {
        let keys = Set(keyFrames)
        var nodes: [FlameNode] = []
        nodes.reserveCapacity(profile.count)
        var open: [(depth: Int, index: Int)] = []
        for entry in profile {
            while let top = open.last, top.depth >= entry.node.depth { open.removeLast() }
            let (label, signature, inApp) = describe(entry.frames, fallback: entry.node)
            nodes.append(FlameNode(
                label: label, signature: signature, count: max(entry.node.count, 0), parent: open.last?.index,
                level: open.count, inApp: inApp, isKey: keys.contains(signature)))
            open.append((entry.node.depth, nodes.count - 1))
        }
        return nodes
    }

    /// Samples merged root first into a tree: a node per distinct path, counting the samples
    /// that pass through it. Children keep the order they were first seen in.
    public static func nodes(samples: [SymbolicatedSample], keyFrames: [String]) -> [FlameNode] {
        let keys = Set(keyFrames)
        final class Trie {
            var label = "", signature = "", inApp = false, count = 0
            var children: [Trie] = []
            var byLabel: [String: Trie] = [:]
        }
        let root = Trie()
        for sample in samples {
            // Inline levels of one raw frame share its index; innermost first, so reverse.
            var rawFrames: [[SymbolicatedFrame]] = []
            for frame in sample.frames {
                if let last = rawFrames.last?.last, last.index == frame.index { rawFrames[rawFrames.count - 1].append(frame) } else {
                    rawFrames.append([frame])
                }
            }
            var at = root
            for levels in rawFrames.reversed() {
                let (label, signature, inApp) = describe(levels, fallback: nil)
                let child: Trie
                if let existing = at.byLabel[signature] { child = existing } else {
                    child = Trie()
                    (child.label, child.signature, child.inApp) = (label, signature, inApp)
                    at.byLabel[signature] = child
                    at.children.append(child)
                }
                child.count += 1  // overflow: one per sample, and the samples are an array
                at = child
            }
        }
        var nodes: [FlameNode] = []
        // Depth-first, pre-order, iteratively: a sampled stack may be deep.
        var pending: [(Trie, Int?, Int)] = root.children.reversed().map { ($0, Int?.none, 0) }
        while let item = pending.popLast() {
            let (trie, parent, level) = item
            nodes.append(FlameNode(
                label: trie.label, signature: trie.signature, count: trie.count, parent: parent, level: level,
                inApp: trie.inApp, isKey: keys.contains(trie.signature)))
            let index = nodes.count - 1
            pending += trie.children.reversed().map { ($0, Int?.some(index), level + 1) }
        }
        return nodes
    }

    /// Rectangles for `nodes` (parents before children): width = count × width / total, where
    /// total is the roots' counts (or more, if a node's children claim more than it has, so
    /// nothing is drawn outside the graph); children start at their parent's left edge.
    public static func layout(_ nodes: [FlameNode], width: Double = 1200, rowHeight: Double = 18) -> FlameLayout {
        var needed = nodes.map { Double($0.count) }
        var childSum = [Double](repeating: 0, count: nodes.count)
        for i in nodes.indices.reversed() {
            needed[i] = max(needed[i], childSum[i])
            if let p = nodes[i].parent { childSum[p] += needed[i] }
        }
        // Doubles of Ints: at most 100,000 × 2^63, finite. The stored report was validated at
        // intake (its counts sum within ReportLimits.maxProfileSamples), but a result stored
        // before that rule, or nodes from elsewhere, must not trap a page: `total` saturates.
        let rootsNeeded = nodes.indices.filter { nodes[$0].parent == nil }.reduce(0.0) { $0 + needed[$1] }  // overflow: Double
        let total = nodes.filter { $0.parent == nil }.map(\.count).saturatingSum()
        let scale = rootsNeeded > 0 ? width / rootsNeeded : 0
        var nextX = [Double](repeating: 0, count: nodes.count)
        var x = [Double](repeating: 0, count: nodes.count)
        var rootX = 0.0
        var rects: [FlameRect] = []
        var omitted = 0
        var deepest = 0
        for (i, node) in nodes.enumerated() {
            if let p = node.parent {
                x[i] = nextX[p]
                nextX[p] += needed[i] * scale
            } else {
                x[i] = rootX
                rootX += needed[i] * scale
            }
            nextX[i] = x[i]
            guard node.level < maxLevels else {
                omitted += 1
                continue
            }
            deepest = max(deepest, node.level + 1)
            rects.append(FlameRect(
                node: i, x: x[i], y: Double(node.level) * rowHeight, width: Double(node.count) * scale, height: rowHeight))
        }
        return FlameLayout(rects: rects, width: width, height: Double(deepest) * rowHeight, total: total, omitted: omitted)
    }

    /// The graph as SVG: one `rect` per drawn node carrying its label, count and share for the
    /// hover script (web.js) and a `title` for a plain tooltip; labels where they fit.
    public static func svg(_ nodes: [FlameNode], _ layout: FlameLayout) -> String {
        var body = ""
        for rect in layout.rects {
            let node = nodes[rect.node]
            let share = layout.total > 0 ? Double(node.count) * 100 / Double(layout.total) : 0
            let shareText = Charts.fmt(share) + "%"
            var classes: [String] = []
            if node.inApp { classes.append("in-app") }
            if node.isKey { classes.append("key") }
            let classAttribute = classes.isEmpty ? "" : " class=\"\(classes.joined(separator: " "))\""
            body += "<g><rect\(classAttribute) data-k=\"flame-node:\(rect.node)\" data-label=\"\(HTML.escape(node.label))\" "
                + "data-count=\"\(node.count)\" data-share=\"\(shareText)\" x=\"\(Charts.fmt(rect.x))\" y=\"\(Charts.fmt(rect.y))\" "
                + "width=\"\(Charts.fmt(rect.width))\" height=\"\(Charts.fmt(rect.height - 1))\">"
                + "<title>\(HTML.escape(node.label)) — \(node.count) (\(shareText))</title></rect>"
            let fits = Int.clamping((rect.width - 6) / 7)
            if fits >= 3 {
                let text = node.label.count > fits ? String(node.label.prefix(fits - 1)) + "…" : node.label
                body += "<text\(node.isKey ? " class=\"on-key\"" : "") x=\"\(Charts.fmt(rect.x + 3))\" y=\"\(Charts.fmt(rect.y + rect.height - 5))\">"
                    + HTML.escape(text) + "</text>"
            }
            body += "</g>"
        }
        let w = Charts.fmt(layout.width)
        let h = Charts.fmt(max(layout.height, 1))
        return "<svg class=\"flame\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(w)\" height=\"\(h)\" viewBox=\"0 0 \(w) \(h)\" "
            + "role=\"img\" aria-label=\"flame graph, \(layout.total) samples\">" + body + "</svg>"
    }

    /// Label, signature and in-app flag of one raw frame's inline levels (innermost first).
    static func describe(_ levels: [SymbolicatedFrame], fallback: ProfileNode?) -> (String, String, Bool) {
        guard let outer = levels.last else {
            if let method = fallback?.methodId { return ("method \(method)", "method \(method)", false) }
            if let address = fallback?.address { return (address.description, address.description, false) }
            return ("?", "?", false)
        }
        let function = outer.function ?? outer.symbol
        let label = function ?? outer.address.description
        let image = outer.image.map { String($0.split(separator: "/").last ?? Substring($0)) } ?? "?"
        let signature = function.map { image + "!" + $0 } ?? label
        let inlined = levels.dropLast().compactMap { $0.function }
        let shown = inlined.isEmpty ? label : label + " [inlined: " + inlined.reversed().joined(separator: " → ") + "]"
        return (shown, signature, levels.contains { $0.inApp == true })
    }
}
