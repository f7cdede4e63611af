import Foundation
import ReportModel

/// A `LC_SEGMENT_64`.
public struct MachOSegment: Sendable, Equatable {
    public let name: String
    public let vmAddress: UInt64
    public let vmSize: UInt64
    public let fileOffset: UInt64
    public let fileSize: UInt64
}
