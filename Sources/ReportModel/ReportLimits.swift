/// How much one report may hold. Past any of these a report is refused when it is parsed, with
/// the limit in the message, so that memory stays proportional to the input and a job that cannot
/// succeed never reaches a worker. The numbers and their reasons are in docs/formats.md ("Limits").
public enum ReportLimits {
    /// Decompressed bytes of one report.
    public static let maxReportBytes = 64 << 20
    /// Apple reports list up to about a thousand images.
    public static let maxImages = 10_000
    public static let maxThreads = 10_000
    /// Deep recursion on an 8 MiB stack reaches about 100,000 frames; Apple and the Swift
    /// runtime truncate far below this.
    public static let maxFramesPerThread = 131_072
    /// Every thread's frames plus every lag sample's frames together.
    public static let maxFrames = 262_144
    /// The SDK keeps the last 30 samples; a generous multiple of that.
    public static let maxLagSamples = 10_000
    public static let maxProfileNodes = 100_000
    /// A profile tree deeper than this is not a call stack any renderer could show.
    public static let maxProfileDepth = 4_096
    /// Samples counted over every node of a lag profile tree together (so also over its roots,
    /// or any node's children), and so the largest count of one node. A day of 1 ms samples is
    /// under 10^8 a node; 2^40 is far past any real hang, and leaves every sum a page makes of
    /// them far inside `Int` and exact in `Double`.
    public static let maxProfileSamples = 1 << 40
    /// Milliseconds one profile node may cost (about 31 years): finite, so sums of costs stay finite.
    public static let maxProfileCostMilliseconds = 1e12
    /// Frames a KSCrash profile's repeated samples (`count`) may copy, per byte of the report:
    /// without it 114 bytes made 10,000 samples (1.6 MB as JSON). A real profile names its frames
    /// in far more bytes than this takes.
    public static let maxRepeatedFramesPerByte = 16
    /// Parse warnings kept per report; the rest are counted in one last line.
    public static let maxWarnings = 200
    /// JSON values (objects, arrays, numbers, strings) in a JSON report, counted before it is
    /// decoded: the decoders hold each value as an object, so this bounds their memory.
    public static let maxJSONValues = 4_000_000
    /// JSON nesting; real reports nest fewer than 20 levels, and the decoders recurse.
    public static let maxJSONDepth = 100
    /// Bytes of one identity value: an SDK meta's app, version, user, device or session, and a
    /// report's own device model, OS version and device key (`DeviceInfo`). Real ones are
    /// under 64; longer ones are refused in the meta and dropped from a report.
    public static let maxIdentityBytes = 256
}
