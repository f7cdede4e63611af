import Foundation
import ReportModel

/// The Swift runtime backtracer's JSON crash report
/// (`SWIFT_BACKTRACE=enable=yes,format=json,output-to=…`), symbolicated or not.
public struct SwiftBacktraceJSONFormat: ReportFormat {
    public let id = "swift-backtrace-json"

    public init() {}

    public func matches(_ data: Data) -> Bool {
        JSONText.looksLikeJSON(data) && JSONText.head(data, contains: "\"crashReport\"")
            && JSONText.head(data, contains: "\"threads\"")
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        let root = JSONObject(format: id, path: "", values: try JSONText.object(data))
        let kind = try root.requiredString("kind")
        guard kind == "crashReport" else { throw root.error("kind", "expected \"crashReport\", found \"\(kind)\"") }

        var warnings = WarningLog()
        var images: [BinaryImage] = []
        for image in try root.array("images") ?? [] { images.append(try parseImage(image, warnings: &warnings)) }
        guard let threadObjects = try root.array("threads") else { throw root.error("threads", "missing") }
        var threads: [RawThread] = []
        for (index, thread) in threadObjects.enumerated() {
            threads.append(try parseThread(thread, index: index, warnings: &warnings))
        }
        if let omitted = root.int("omittedImages"), omitted > 0 {
            // The runtime lists only images that frames point into; the rest are counted.
            warnings.append("\(omitted) images not listed by the runtime")
        }

        let description = root.string("description")
        return RawReport(
            format: id, kind: .crash, platform: root.string("platform"), arch: root.string("architecture"),
            // The runtime lists the main executable first.
            app: images.first.map { AppInfo(name: $0.name) }, os: root.string("platform"),
            timestamp: root.string("timestamp"),
            exception: ExceptionInfo(
                type: description, signal: description, faultAddress: try root.address("faultAddress")),
            images: images, threads: threads, warnings: warnings.all)
    }

    private func parseImage(_ image: JSONObject, warnings: inout WarningLog) throws(ReportParseError) -> BinaryImage {
        let base = try image.requiredAddress("baseAddress")
        var size: UInt64?
        if let end = try image.address("endOfText") {
            guard end >= base else { throw image.error("endOfText", "lies before baseAddress") }
            size = end.value - base.value
        }
        let path = image.string("path")
        let name = image.string("name") ?? path.map { ($0 as NSString).lastPathComponent } ?? "?"
        let id = ImageIdentifier.validated(
            image.string("buildId"), image: name, byteCounts: ImageIdentifier.elfByteCounts, warnings: &warnings)
        return BinaryImage(name: name, path: path, id: id, loadAddress: base, size: size)
    }

    private func parseThread(_ thread: JSONObject, index: Int, warnings: inout WarningLog) throws(ReportParseError) -> RawThread {
        var frames: [RawFrame] = []
        for frame in try thread.array("frames") ?? [] {
            let kind = try frame.requiredString("kind")
            switch kind {
            case "programCounter", "returnAddress", "asyncResumePoint":
                // A symbolicated report repeats an address once per inline level; the
                // non-inlined entry is the real frame.
                if frame.bool("inlined") { continue }
                // Async resume points are return addresses into the continuation.
                let frameKind: FrameKind = kind == "programCounter" ? .pc : .returnAddress
                if let address = try? frame.requiredAddress("address") {
                    frames.append(RawFrame(address: address, kind: frameKind))
                } else {
                    warnings.append("thread \(index) frame \(frames.count): \(frame.describe("address")) is not an address; frame marked malformed")
                    frames.append(RawFrame(address: 0, kind: frameKind, malformed: true))
                }
            case "omittedFrames":
                warnings.append("thread \(index): \(frame.int("count") ?? 0) frames omitted by the runtime")
            case "truncated":
                warnings.append("thread \(index): backtrace truncated by the runtime")
            default:
                warnings.append("thread \(index): unknown frame kind '\(kind)' skipped")
            }
        }
        return RawThread(index: index, name: thread.string("name"), crashed: thread.bool("crashed"), frames: frames)
    }
}
