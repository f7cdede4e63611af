import Foundation
import JSONFormat
import ReportModel

/// The `parse --json` shape: the raw report with every address absolute.
public struct ParsedReportJSON: Encodable {
    public struct Frame: Encodable {
        var address: Address
        var kind: FrameKind
        var imageIndex: Int?
        /// The report's address for this frame could not be read (a warning says why).
        var malformed: Bool?
        /// The name the device resolved the frame to, and the distance from it.
        var symbol: String?
        var symbolOffset: UInt64?
    }
    public struct Thread: Encodable {
        var index: Int
        var name: String?
        var crashed: Bool
        var part: String?
        var frames: [Frame]
    }
    var format: String
    var kind: ReportKind
    var arch: Arch?
    var app: AppInfo?
    var os: String?
    var exception: ExceptionInfo?
    var images: [BinaryImage]
    var threads: [Thread]
    var lag: LagData?
    var warnings: [String]

    public static func render(_ report: RawReport) throws -> String {
        let value = ParsedReportJSON(
            format: report.format, kind: report.kind, arch: report.arch, app: report.app, os: report.os,
            exception: report.exception, images: report.images,
            threads: report.threads.map { thread in
                Thread(
                    index: thread.index, name: thread.name, crashed: thread.crashed, part: thread.part,
                    frames: thread.frames.map {
                        Frame(
                            address: $0.address, kind: $0.kind, imageIndex: $0.imageIndex, malformed: $0.malformed,
                            symbol: $0.symbol, symbolOffset: $0.symbolOffset)
                    })
            }, lag: report.lag, warnings: report.warnings)
        return try encodeJSON(value)
    }
}
