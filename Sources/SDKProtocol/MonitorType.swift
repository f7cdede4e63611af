/// What the server does with a record of a given `monitor_type` (the SDK's `PCTItemModel.type`).
public enum MonitorClass: String, Sendable, Codable, Equatable, Comparable {
    /// `appCrash`: becomes a report; uploaded and processed first, as the SDK's aggregation
    /// takes crash records before any other type.
    case crash
    /// `appLag`: a hang (lag) report; becomes a report after the crashes of its batch.
    case hang
    /// Every other type (`appBoot`, `net`, `netError`, memory, CPU …): acknowledged, counted, dropped.
    case other

    /// The class of a `monitor_type` value. Matching is exact: the SDK sends the type names of
    /// its configuration's `monitorList`.
    public init(monitorType: String) {
        switch monitorType {
        case MonitorClass.crashType: self = .crash
        case MonitorClass.hangType: self = .hang
        default: self = .other
        }
    }

    /// The SDK's crash type name.
    public static let crashType = "appCrash"
    /// The SDK's hang (lag) type name.
    public static let hangType = "appLag"

    /// Processing order within a batch: crashes, then hangs, then the rest.
    public var processingRank: Int {
        switch self {
        case .crash: 0
        case .hang: 1
        case .other: 2
        }
    }

    public static func < (lhs: MonitorClass, rhs: MonitorClass) -> Bool { lhs.processingRank < rhs.processingRank }

    /// True for the classes that become reports.
    public var becomesReport: Bool { self != .other }
}
