/// What the server does with a record of a given `monitor_type` (the SDK's `PCTItemModel.type`).
public enum MonitorClass: String, Sendable, Codable, Equatable, Comparable {
    /// `appCrash`: becomes a report; uploaded and processed first, as the SDK's aggregation
    /// takes crash records before any other type.
    case crash
    /// `appLag`: a hang (lag) report; becomes a report after the crashes of its batch.
    case hang
    /// `appBoot`: one launch, counted into the session counters of its app, version, day, OS
    /// and device model (release health); never a report.
    case session
    /// Every other type (`net`, `netError`, memory, CPU …): acknowledged, counted, dropped.
    case other

    /// The class of a `monitor_type` value. Matching is exact: the SDK sends the type names of
    /// its configuration's `monitorList`.
    public init(monitorType: String) {
        switch monitorType {
        case MonitorClass.crashType: self = .crash
        case MonitorClass.hangType: self = .hang
        case MonitorClass.sessionType: self = .session
        default: self = .other
        }
    }

    /// The SDK's crash type name.
    public static let crashType = "appCrash"
    /// The SDK's hang (lag) type name.
    public static let hangType = "appLag"
    /// The SDK's launch type name.
    public static let sessionType = "appBoot"

    /// Processing order within a batch: crashes, then hangs, then launches and the rest.
    public var processingRank: Int {
        switch self {
        case .crash: 0
        case .hang: 1
        case .session, .other: 2
        }
    }

    public static func < (lhs: MonitorClass, rhs: MonitorClass) -> Bool { lhs.processingRank < rhs.processingRank }

    /// True for the classes that become reports.
    public var becomesReport: Bool { self == .crash || self == .hang }
}
