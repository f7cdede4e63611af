import Foundation
import ReportModel

/// The Swift runtime backtracer's JSON crash report
/// (`SWIFT_BACKTRACE=enable=yes,format=json,output-to=…`), symbolicated or not, alone or inside
/// captured stderr (after the runtime's `Fatal error: …` and `*** Signal N: …` lines).
public struct SwiftBacktraceJSONFormat: ReportFormat {
    public let id = "swift-backtrace-json"

    public init() {}

    public func matches(_ data: Data) -> Bool {
        guard JSONText.head(data, contains: "\"crashReport\"") && JSONText.head(data, contains: "\"threads\"") else { return false }
        return JSONText.looksLikeJSON(data) || SwiftBacktraceOutput.jsonStart(data) != nil
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        var json = data
        var output: SwiftBacktraceOutput?
        if !JSONText.looksLikeJSON(data) {
            guard let start = SwiftBacktraceOutput.jsonStart(data) else {
                throw .invalidReport(format: id, reason: "no JSON report (a line starting with { and holding \"kind\": \"crashReport\") in the first 64 KiB")
            }
            output = SwiftBacktraceOutput(data, before: start)
            // The report is one JSON object; anything after its closing brace is more stderr.
            let end = data[start...].lastIndex(of: UInt8(ascii: "}")).map { $0 + 1 } ?? data.endIndex
            json = data[start..<end]
        }
        // JSONDecoder into structs, not JSONSerialization: its NSDictionary per frame took
        // 60 times the report's size in memory.
        let report = try ExactJSON.decode(SwiftBacktraceJSON.self, from: json, format: id)
        guard report.kind == "crashReport" else {
            throw .invalidReport(format: id, reason: "kind: expected \"crashReport\", found \"\(report.kind.prefix(40))\"")
        }
        var warnings = WarningLog()
        var images: [BinaryImage] = []
        for (i, image) in (report.images ?? []).enumerated() {
            let base = image.baseAddress.address
            var size: UInt64?
            if let end = image.endOfText?.address {
                guard end >= base else {
                    throw .invalidReport(format: id, reason: "images[\(i)].endOfText: lies before baseAddress")
                }
                size = end.value - base.value
            }
            let name = image.name ?? image.path.map(ReportText.basename) ?? "?"
            let buildID = BuildID.reported(image.buildId, image: name, lengths: .gnu, warnings: &warnings)
            images.append(BinaryImage(name: name, path: image.path, id: buildID, loadAddress: base, size: size))
        }
        var threads: [RawThread] = []
        for (index, thread) in report.threads.enumerated() {
            threads.append(parseThread(thread, index: index, warnings: &warnings))
        }
        if let omitted = report.omittedImages, omitted > 0 {
            // The runtime lists only images that frames point into; the rest are counted.
            warnings.append("\(omitted) images not listed by the runtime")
        }
        return RawReport(
            format: id, kind: .crash, platform: report.platform, arch: report.architecture.map { Arch($0) },
            app: SwiftBacktraceOutput.executable(images: images, mainThreadName: threads.first?.name).map { AppInfo(name: $0) },
            os: report.platform, timestamp: report.timestamp,
            exception: ExceptionInfo(
                type: report.description, signal: output?.signal, faultAddress: report.faultAddress?.address,
                message: output?.trapMessage ?? report.description),
            images: images, threads: threads, warnings: warnings.all)
    }

    private func parseThread(_ thread: SwiftBacktraceJSON.Thread, index: Int, warnings: inout WarningLog) -> RawThread {
        var frames: [RawFrame] = []
        for frame in thread.frames ?? [] {
            switch frame.kind {
            case "programCounter", "returnAddress", "asyncResumePoint":
                // A symbolicated report repeats an address once per inline level; the
                // non-inlined entry is the real frame.
                if frame.inlined == true { continue }
                // Async resume points are return addresses into the continuation.
                let kind: FrameKind = frame.kind == "programCounter" ? .pc : .returnAddress
                if let address = frame.address {
                    frames.append(address.frame(kind: kind, context: "thread \(index) frame \(frames.count)", warnings: &warnings))
                } else {
                    warnings.append("thread \(index) frame \(frames.count): no address; frame marked malformed")
                    frames.append(RawFrame(address: 0, kind: kind, malformed: true))
                }
            case "omittedFrames":
                warnings.append("thread \(index): \(frame.count ?? 0) frames omitted by the runtime")
            case "truncated":
                warnings.append("thread \(index): backtrace truncated by the runtime")
            default:
                warnings.append("thread \(index): unknown frame kind '\(frame.kind.prefix(40))' skipped")
            }
        }
        return RawThread(index: index, name: thread.name, crashed: thread.crashed ?? false, frames: frames)
    }
}

/// The fields of the runtime's JSON report that Stackline reads.
struct SwiftBacktraceJSON: Decodable {
    struct Image: Decodable {
        var name: String?
        var path: String?
        var buildId: String?
        var baseAddress: JSONAddress
        var endOfText: JSONAddress?
    }
    struct Frame: Decodable {
        var kind: String
        var address: JSONFrameAddress?
        var inlined: Bool?
        var count: Int?
    }
    struct Thread: Decodable {
        var name: String?
        var crashed: Bool?
        var frames: [Frame]?
    }
    var kind: String
    var description: String?
    var platform: String?
    var architecture: String?
    var timestamp: String?
    var faultAddress: JSONAddress?
    var omittedImages: Int?
    var images: [Image]?
    var threads: [Thread]
}
