/// What a lag (main-thread hang) report carries besides threads: the SDK's stack samples
/// and/or its thread-profile tree (docs/formats.md, "SDK lag report").
public struct LagData: Codable, Sendable, Hashable {
    /// Main-thread stacks sampled every ~50 ms, oldest first (the SDK keeps the last 30).
    public var samples: [LagSample]
    /// The thread-profile tree flattened in depth-first pre-order.
    public var profile: [ProfileNode]
    public init(samples: [LagSample] = [], profile: [ProfileNode] = []) {
        self.samples = samples
        self.profile = profile
    }
}

/// One sampled main-thread stack.
public struct LagSample: Codable, Sendable, Hashable {
    /// When the sample was taken, as the report states it.
    public var timestamp: String?
    /// Top of stack (innermost) first, like a thread's frames.
    public var frames: [RawFrame]
    public init(timestamp: String? = nil, frames: [RawFrame]) {
        self.timestamp = timestamp
        self.frames = frames
    }
}

/// One node of the SDK's thread-profile tree. A node's parent is the nearest earlier node
/// with a smaller depth; the root is at depth 0.
public struct ProfileNode: Codable, Sendable, Hashable {
    public var depth: Int
    /// How many samples passed through this node.
    public var count: Int
    /// Milliseconds spent in this node and below.
    public var costTime: Double
    /// The method's address (iOS). Absent on Android, which sends `methodId` instead.
    public var address: Address?
    /// Android's instrumentation id for the method.
    public var methodId: Int?
    public init(depth: Int, count: Int, costTime: Double, address: Address? = nil, methodId: Int? = nil) {
        self.depth = depth
        self.count = count
        self.costTime = costTime
        self.address = address
        self.methodId = methodId
    }
}

/// Lag data with every address resolved.
public struct SymbolicatedLag: Codable, Sendable, Hashable {
    public var samples: [SymbolicatedSample]
    public var profile: [SymbolicatedProfileNode]
    public init(samples: [SymbolicatedSample] = [], profile: [SymbolicatedProfileNode] = []) {
        self.samples = samples
        self.profile = profile
    }
}

/// One sample, each raw frame expanded to its inline levels (innermost first), as in a thread.
public struct SymbolicatedSample: Codable, Sendable, Hashable {
    public var timestamp: String?
    public var frames: [SymbolicatedFrame]
    public init(timestamp: String? = nil, frames: [SymbolicatedFrame]) {
        self.timestamp = timestamp
        self.frames = frames
    }
}

/// One profile node with its method resolved (one entry per inline level, innermost first;
/// empty when the node has no address).
public struct SymbolicatedProfileNode: Codable, Sendable, Hashable {
    public var node: ProfileNode
    public var frames: [SymbolicatedFrame]
    public init(node: ProfileNode, frames: [SymbolicatedFrame]) {
        self.node = node
        self.frames = frames
    }
}
