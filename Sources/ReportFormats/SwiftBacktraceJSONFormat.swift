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
        let (json, output) = try document(in: data)
        // Into structs, not JSONSerialization: its NSDictionary per frame took 60 times the
        // report's size in memory. `JSONCursor` reads strict JSON of the expected shape;
        // JSONDecoder the rest, and words every error.
        let report = try ExactJSON.decode(SwiftBacktraceJSON.self, from: json, format: id)
        return try rawReport(report, output: output)
    }

    /// `parse` through JSONDecoder alone: the reading the cursor is held to, for tests and the
    /// `swift-backtrace-decoders` fuzz target.
    public func parseWithJSONDecoder(_ data: Data) throws(ReportParseError) -> RawReport {
        let (json, output) = try document(in: data)
        try JSONPreflight.check(json)
        let report = try ExactJSON.decodeChecked(SwiftBacktraceJSON.self, from: json, format: id)
        return try rawReport(report, output: output)
    }

    /// Decodes the report in `data` both ways and compares the values: whatever the cursor
    /// reads, JSONDecoder must read alike.
    public static func compareDecoders(_ data: Data) -> JSONDecoderAgreement {
        let format = SwiftBacktraceJSONFormat()
        let json: Data
        do {
            json = try format.document(in: data).json
            try JSONPreflight.check(json)
        } catch {
            return .notDecoded
        }
        return ExactJSON.compareDecoders(SwiftBacktraceJSON.self, json, part: "report", format: format.id)
    }

    /// The JSON document in `data` and, when it came inside captured stderr, what the runtime
    /// wrote before it.
    private func document(in data: Data) throws(ReportParseError) -> (json: Data, output: SwiftBacktraceOutput?) {
        if JSONText.looksLikeJSON(data) { return (data, nil) }
        guard let start = SwiftBacktraceOutput.jsonStart(data) else {
            throw .invalidReport(format: id, reason: "no JSON report (a line starting with { and holding \"kind\": \"crashReport\") in the first 64 KiB")
        }
        // The report is one JSON object; anything after its closing brace is more stderr.
        let end = data[start...].lastIndex(of: UInt8(ascii: "}")).map { $0 + 1 } ?? data.endIndex
        return (data[start..<end], SwiftBacktraceOutput(data, before: start))
    }

    private func rawReport(_ report: SwiftBacktraceJSON, output: SwiftBacktraceOutput?) throws(ReportParseError) -> RawReport {
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
struct SwiftBacktraceJSON: Decodable, Equatable {
    struct Image: Decodable, Equatable {
        var name: String?
        var path: String?
        var buildId: String?
        var baseAddress: JSONAddress
        var endOfText: JSONAddress?
    }
    struct Frame: Decodable, Equatable {
        var kind: String
        var address: JSONFrameAddress?
        var inlined: Bool?
        var count: Int?
    }
    struct Thread: Decodable, Equatable {
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

// The report read through `JSONCursor`: the fast path of every Swift runtime JSON report, at
// ingest and again in each worker. As for `.ips` (AppleIPSDecoding.swift), each init reads
// exactly the members the `Decodable` conformance reads, with the same types and the same rule
// for null (an optional member that is null is absent); a repeated key, a missing or null
// required member, or any other shape stops the fast path and JSONDecoder decodes and words it.
// `SwiftBacktraceFastPathTests` and the `swift-backtrace-decoders` fuzz target hold the two to
// the same value.

extension SwiftBacktraceJSON: JSONCursorDecodable {
    init(reading c: inout JSONCursor) throws(JSONCursor.Unsupported) {
        var kind: String?, description: String?, platform: String?, architecture: String?, timestamp: String?
        var faultAddress: JSONAddress?, omittedImages: Int?, images: [Image]?, threads: [Thread]?
        var seen: UInt32 = 0
        try c.beginObject()
        while let key = try c.nextKey() {
            if c.key(key, is: "kind") {
                try c.once(&seen, 1 << 0)
                kind = try c.string()
            } else if c.key(key, is: "description") {
                try c.once(&seen, 1 << 1)
                description = try c.stringIfPresent()
            } else if c.key(key, is: "platform") {
                try c.once(&seen, 1 << 2)
                platform = try c.stringIfPresent()
            } else if c.key(key, is: "architecture") {
                try c.once(&seen, 1 << 3)
                architecture = try c.stringIfPresent()
            } else if c.key(key, is: "timestamp") {
                try c.once(&seen, 1 << 4)
                timestamp = try c.stringIfPresent()
            } else if c.key(key, is: "faultAddress") {
                try c.once(&seen, 1 << 5)
                faultAddress = c.null() ? nil : try JSONAddress(reading: &c)
            } else if c.key(key, is: "omittedImages") {
                try c.once(&seen, 1 << 6)
                omittedImages = c.null() ? nil : try c.int()
            } else if c.key(key, is: "images") {
                try c.once(&seen, 1 << 7)
                images = try c.arrayIfPresent { c throws(JSONCursor.Unsupported) in try Image(reading: &c) }
            } else if c.key(key, is: "threads") {
                try c.once(&seen, 1 << 8)
                threads = try c.arrayIfPresent { c throws(JSONCursor.Unsupported) in try Thread(reading: &c) }
            } else {
                try c.skipValue()
            }
        }
        // A missing or null `kind` or `threads` is JSONDecoder's `keyNotFound` or
        // `valueNotFound`: its error, its words.
        guard let kind, let threads else { throw JSONCursor.Unsupported() }
        self.init(
            kind: kind, description: description, platform: platform, architecture: architecture, timestamp: timestamp,
            faultAddress: faultAddress, omittedImages: omittedImages, images: images, threads: threads)
    }
}

extension SwiftBacktraceJSON.Image {
    init(reading c: inout JSONCursor) throws(JSONCursor.Unsupported) {
        var name: String?, path: String?, buildId: String?, baseAddress: JSONAddress?, endOfText: JSONAddress?
        var seen: UInt32 = 0
        try c.beginObject()
        while let key = try c.nextKey() {
            if c.key(key, is: "name") {
                try c.once(&seen, 1 << 0)
                name = try c.stringIfPresent()
            } else if c.key(key, is: "path") {
                try c.once(&seen, 1 << 1)
                path = try c.stringIfPresent()
            } else if c.key(key, is: "buildId") {
                try c.once(&seen, 1 << 2)
                buildId = try c.stringIfPresent()
            } else if c.key(key, is: "baseAddress") {
                try c.once(&seen, 1 << 3)
                // Not optional: a null gives way in `JSONAddress(reading:)`, as it fails in JSONDecoder.
                baseAddress = try JSONAddress(reading: &c)
            } else if c.key(key, is: "endOfText") {
                try c.once(&seen, 1 << 4)
                endOfText = c.null() ? nil : try JSONAddress(reading: &c)
            } else {
                try c.skipValue()
            }
        }
        guard let baseAddress else { throw JSONCursor.Unsupported() }
        self.init(name: name, path: path, buildId: buildId, baseAddress: baseAddress, endOfText: endOfText)
    }
}

extension SwiftBacktraceJSON.Frame {
    init(reading c: inout JSONCursor) throws(JSONCursor.Unsupported) {
        var kind: String?, address: JSONFrameAddress?, inlined: Bool?, count: Int?
        var seen: UInt32 = 0
        try c.beginObject()
        while let key = try c.nextKey() {
            if c.key(key, is: "kind") {
                try c.once(&seen, 1 << 0)
                kind = try c.string()
            } else if c.key(key, is: "address") {
                try c.once(&seen, 1 << 1)
                address = c.null() ? nil : try JSONFrameAddress(reading: &c)
            } else if c.key(key, is: "inlined") {
                try c.once(&seen, 1 << 2)
                inlined = c.null() ? nil : try c.bool()
            } else if c.key(key, is: "count") {
                try c.once(&seen, 1 << 3)
                count = c.null() ? nil : try c.int()
            } else {
                try c.skipValue()
            }
        }
        guard let kind else { throw JSONCursor.Unsupported() }
        self.init(kind: kind, address: address, inlined: inlined, count: count)
    }
}

extension SwiftBacktraceJSON.Thread {
    init(reading c: inout JSONCursor) throws(JSONCursor.Unsupported) {
        var name: String?, crashed: Bool?, frames: [SwiftBacktraceJSON.Frame]?
        var seen: UInt32 = 0
        try c.beginObject()
        while let key = try c.nextKey() {
            if c.key(key, is: "name") {
                try c.once(&seen, 1 << 0)
                name = try c.stringIfPresent()
            } else if c.key(key, is: "crashed") {
                try c.once(&seen, 1 << 1)
                crashed = c.null() ? nil : try c.bool()
            } else if c.key(key, is: "frames") {
                try c.once(&seen, 1 << 2)
                frames = try c.arrayIfPresent { c throws(JSONCursor.Unsupported) in try SwiftBacktraceJSON.Frame(reading: &c) }
            } else {
                try c.skipValue()
            }
        }
        self.init(name: name, crashed: crashed, frames: frames)
    }
}
