import ReportModel

/// Counts the master logs per job.
public struct ReportCounts: Codable, Sendable, Equatable {
    /// Raw frames (inline levels not counted).
    public var frames = 0
    /// Raw frames resolved to a function.
    public var symbolicated = 0
    /// Raw frames whose image's debug file is not in the store.
    public var missing = 0

    /// Counts read back from a reply frame (the worker counted them with `init(_:)`).
    public init(frames: Int, symbolicated: Int, missing: Int) {
        self.frames = frames
        self.symbolicated = symbolicated
        self.missing = missing
    }

    public init(_ report: SymbolicatedReport) {
        for thread in report.threads {
            for frame in thread.frames where !frame.inlined {
                frames += 1
                switch frame.status {
                case .symbolicated, .noLineInfo: symbolicated += 1
                case .missingDebugFile: missing += 1
                default: break
                }
            }
        }
    }
}
