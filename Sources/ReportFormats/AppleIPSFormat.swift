import Foundation
import ReportModel

/// Apple's `.ips` crash report (iOS 15+, macOS 12+): a one-line JSON header carrying `bug_type`,
/// then the JSON body with `usedImages`, `threads[].frames[]` (`imageIndex` + `imageOffset`),
/// `faultingThread`, `exception` and `lastExceptionBacktrace`.
public struct AppleIPSFormat: ReportFormat {
    public let id = "apple-ips"
    /// `bug_type` of a crash report; others (hangs, jetsam, …) have a different body.
    static let crashBugTypes: Set<String> = ["309"]

    public init() {}

    public func matches(_ data: Data) -> Bool {
        guard JSONText.looksLikeJSON(data), let (header, rest) = JSONText.headerLine(data) else { return false }
        // The body is a JSON document; old-style reports carry `.crash` text there (AppleLegacyIPSFormat).
        return JSONText.contains(data[header], "\"bug_type\"")
            && data[rest...].first(where: { !TextLine.isWhitespace($0) }) == UInt8(ascii: "{")
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        // Checked on the whole file first, so a bad byte's offset counts from the file's start.
        if let offset = JSONPreflight.firstInvalidUTF8(in: data) { throw .invalidUTF8(offset: offset) }
        guard let (headerRange, rest) = JSONText.headerLine(data) else {
            throw .invalidReport(format: id, reason: "only a header line; the report body is missing")
        }
        let header = try ExactJSON.decode(IPSHeader.self, from: Data(data[headerRange]), format: id)
        if let type = header.bugType?.text, !Self.crashBugTypes.contains(type) {
            throw .invalidReport(format: id, reason: "bug_type \(type) is not a crash report (309)")
        }
        let body = try ExactJSON.decode(IPSBody.self, from: Data(data[rest...]), format: id)
        var warnings = WarningLog()
        let images = (body.usedImages ?? []).enumerated().map { i, image in
            let name = image.name ?? image.path.map(ReportText.basename) ?? "???"
            return BinaryImage(
                name: name, path: image.path,
                id: BuildID.reported(image.uuid, image: name, lengths: .appleReport, warnings: &warnings),
                arch: image.arch.map { Arch($0) }, loadAddress: image.base.address, size: image.size)
        }
        func frames(_ list: [IPSBody.Frame], context: String) -> [RawFrame] {
            list.enumerated().map { i, frame in
                let kind: FrameKind = i == 0 ? .pc : .returnAddress
                guard let index = frame.imageIndex, images.indices.contains(index) else {
                    // Kept with the bare offset so nothing is lost; it will show as outside any image.
                    warnings.append("\(context) frame \(i): imageIndex \(frame.imageIndex.map(String.init) ?? "missing") names no image")
                    return RawFrame(address: Address(frame.imageOffset), kind: kind)
                }
                let (address, overflow) = images[index].loadAddress.value.addingReportingOverflow(frame.imageOffset)
                if overflow {
                    warnings.append("\(context) frame \(i): base + imageOffset overflows 64 bits; frame marked malformed")
                    return RawFrame(address: 0, kind: kind, imageIndex: index, malformed: true)
                }
                return RawFrame(
                    address: Address(address), kind: kind, imageIndex: index, symbol: frame.symbol.flatMap { $0.isEmpty ? nil : $0 },
                    symbolOffset: frame.symbol == nil ? nil : frame.symbolLocation)
            }
        }
        var threads: [RawThread] = []
        if let backtrace = body.lastExceptionBacktrace, !backtrace.isEmpty {
            threads.append(RawThread(
                index: AppleCrashTextFormat.lastExceptionThreadIndex, name: AppleCrashTextFormat.lastExceptionThreadName,
                crashed: false, frames: frames(backtrace, context: "lastExceptionBacktrace")))
        }
        for (i, thread) in (body.threads ?? []).enumerated() {
            threads.append(RawThread(
                index: i, name: thread.name ?? thread.queue,
                crashed: thread.triggered ?? (body.faultingThread == i),
                frames: frames(thread.frames ?? [], context: "thread \(i)")))
        }
        guard threads.contains(where: { !$0.frames.isEmpty }) else {
            throw .invalidReport(format: id, reason: "threads: no frames")
        }
        let message = body.message
        var exception = body.exception.map { e in
            ExceptionInfo(
                type: e.type, signal: e.signal, code: AppleCrashTextParser.code(e.codes, subtype: e.subtype),
                faultAddress: e.subtype.flatMap { subtype in
                    subtype.range(of: " at ").flatMap { Address(parsing: subtype[$0.upperBound...]) }
                }, message: message)
        }
        if exception == nil, let message { exception = ExceptionInfo(message: message) }
        // The header writes "" for versions it does not know.
        func known(_ s: String?) -> String? { s?.isEmpty == false ? s : nil }
        let app = AppInfo(
            name: known(body.procName) ?? known(body.procPath).map(ReportText.basename) ?? known(header.appName) ?? known(header.name),
            version: known(body.bundleInfo?.shortVersion) ?? known(header.appVersion),
            build: known(body.bundleInfo?.version) ?? known(header.buildVersion))
        // "iPhone OS 16.0 (20A362)", as the header and the .crash twin write it.
        let os = body.osVersion.flatMap { v in v.train.map { train in v.build.map { "\(train) (\($0))" } ?? train } } ?? header.osVersion
        // The process's CPU type (ARM-64 → arm64), not an image's (often arm64e).
        let cpu = known(body.cpuType).map { Arch($0) }
        let device = DeviceInfo(model: body.modelCode, osVersion: OSVersionNumber.of(os), id: body.crashReporterKey)
        return RawReport(
            format: id, kind: .crash, platform: os.flatMap(AppleCrashTextParser.platform(os:)),
            arch: cpu.map { $0.isKnown ? $0.canonical : $0 } ?? images.first?.arch, app: app, os: os, device: device,
            timestamp: body.captureTime ?? header.timestamp, exception: exception, images: images, threads: threads,
            warnings: warnings.all)
    }
}

/// The `.ips` header line.
struct IPSHeader: Decodable, Equatable {
    var bugType: JSONLooseString?
    var appName: String?
    var appVersion: String?
    var buildVersion: String?
    var osVersion: String?
    var timestamp: String?
    var name: String?
    enum CodingKeys: String, CodingKey {
        case bugType = "bug_type", appName = "app_name", appVersion = "app_version"
        case buildVersion = "build_version", osVersion = "os_version", timestamp, name
    }
}

/// The parts of an `.ips` body Stackline reads.
struct IPSBody: Decodable, Equatable {
    struct Image: Decodable, Equatable {
        var base: JSONAddress
        var size: UInt64?
        var uuid: String?
        var arch: String?
        var name: String?
        var path: String?
    }
    struct Frame: Decodable, Equatable {
        var imageIndex: Int?
        var imageOffset: UInt64
        /// The name the device resolved, and the distance from its start.
        var symbol: String?
        var symbolLocation: UInt64?
    }
    struct Thread: Decodable, Equatable {
        var name: String?
        var queue: String?
        var triggered: Bool?
        var frames: [Frame]?
    }
    struct Exception: Decodable, Equatable {
        var type: String?
        var signal: String?
        var codes: String?
        var subtype: String?
        var message: String?
    }
    struct Termination: Decodable, Equatable {
        var namespace: String?
        var code: JSONLooseString?
        var indicator: String?
    }
    struct OSVersion: Decodable, Equatable {
        var train: String?
        var build: String?
    }
    struct BundleInfo: Decodable, Equatable {
        var shortVersion: String?
        var version: String?
        enum CodingKeys: String, CodingKey {
            case shortVersion = "CFBundleShortVersionString", version = "CFBundleVersion"
        }
    }
    var usedImages: [Image]?
    var threads: [Thread]?
    var faultingThread: Int?
    var exception: Exception?
    var lastExceptionBacktrace: [Frame]?
    var procName: String?
    var procPath: String?
    /// Application Specific Information: image name → its lines.
    var asi: [String: JSONStringList]?
    var termination: Termination?
    var cpuType: String?
    var osVersion: OSVersion?
    var captureTime: String?
    var bundleInfo: BundleInfo?
    /// The hardware model, e.g. `iPhone15,2`.
    var modelCode: String?
    /// Apple's anonymous per-device key.
    var crashReporterKey: String?
}

extension IPSBody {
    /// What went wrong in words: `exception.message`, then the `asi` lines (images in name order,
    /// a bare `abort() called` last, as it says less than any message beside it); else the
    /// termination reason in the `.crash` wording (`Namespace SIGNAL, Code 6 Abort trap: 6`).
    var message: String? {
        var lines: [String] = []
        func add(_ text: String) {
            let text = text.trimmingWhitespace()
            if !text.isEmpty, !lines.contains(where: { $0.contains(text) }) { lines.append(text) }
        }
        if let message = exception?.message { add(message) }
        let asiLines = (asi ?? [:]).sorted { $0.key < $1.key }.flatMap(\.value.lines)
        for line in asiLines where line != "abort() called" { add(line) }
        for line in asiLines where line == "abort() called" { add(line) }
        if lines.isEmpty, let termination, let namespace = termination.namespace {
            add(["Namespace \(namespace),", termination.code.map { "Code \($0.text)" }, termination.indicator].compactMap { $0 }.joined(separator: " "))
        }
        return lines.isEmpty ? nil : lines.joined(separator: "\n")
    }
}

/// A list of strings some writers give as one string.
struct JSONStringList: Decodable, Equatable {
    let lines: [String]

    init(lines: [String]) { self.lines = lines }

    init(reading c: inout JSONCursor) throws(JSONCursor.Unsupported) {
        if try c.peek() == .string {
            lines = [try c.string()]
        } else {
            // A null element is no string: JSONDecoder refuses it, and the fast path gives way.
            guard let list = try c.arrayIfPresent({ c throws(JSONCursor.Unsupported) in try c.string() }) else {
                throw JSONCursor.Unsupported()
            }
            lines = list
        }
    }

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let list = try? container.decode([String].self) {
            lines = list
        } else {
            lines = [try container.decode(String.self)]
        }
    }
}
