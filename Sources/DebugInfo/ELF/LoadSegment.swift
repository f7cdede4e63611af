import CElfUtils
import Foundation
import ReportModel

/// A `PT_LOAD` program header.
public struct LoadSegment: Sendable {
    public let virtualAddress: UInt64
    public let memorySize: UInt64
    public let fileOffset: UInt64
    public let fileSize: UInt64
    public let alignment: UInt64
}
