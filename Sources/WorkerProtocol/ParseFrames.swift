import Foundation
import ReportModel

// `stackline serve` parses untrusted report bytes in `stackline-worker --parse` children, so a
// parser defect (a Swift trap cannot be caught) costs one child and one request, never the
// server. The frames share the job frames' envelope (`JobFrameCodec.swift`):
//
//   parse request  tag 0x31  header: u32 input length;                  attachment: the input
//   parse reply    tag 0x41  header: u32 attachment length, u8 outcome; attachment: the parts'
//                            own bytes, one after another, for parts that are not the whole input
//
// A reply's outcome 1 is a refusal of the whole input: string reason. Outcome 0 is a list:
// u32 count, then per part: u8 flags (1 the part is the whole input, 2 it parsed), u32 byte
// count (0 for the whole input), string format, then either the summary (u8 kind 0 crash 1 lag,
// u8 presence 1 app 2 version, the present strings, u32 count, that many build-id strings) or
// the refusal's string.

/// What intake keeps of one parsed report: enough to store it and queue its job. Everything
/// else is the workers' to read again from the stored bytes.
public struct ParsedReportSummary: Sendable, Equatable {
    public var format: String
    public var kind: ReportKind
    public var app: String?
    public var version: String?
    public var buildIds: [BuildID]
    /// The device the report itself names (`RawReport.device`).
    public var device: DeviceInfo?

    public init(format: String, kind: ReportKind, app: String?, version: String?, buildIds: [BuildID], device: DeviceInfo? = nil) {
        self.format = format
        self.kind = kind
        self.app = app
        self.version = version
        self.buildIds = buildIds
        self.device = device
    }
}

/// Why an input, or one report of it, cannot be stored; `description` is what the sender reads.
public struct ParseRefusal: Error, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// One report of an input: its own bytes and what its parse found.
public struct ParsedPartSummary: Sendable, Equatable {
    /// The part's bytes; nil when the part is the whole input, as sent.
    public var data: Data?
    public var format: String
    public var outcome: Result<ParsedReportSummary, ParseRefusal>

    public init(data: Data?, format: String, outcome: Result<ParsedReportSummary, ParseRefusal>) {
        self.data = data
        self.format = format
        self.outcome = outcome
    }
}

/// A parse child's answer to one input.
public enum ParseReply: Sendable, Equatable {
    case parts([ParsedPartSummary])
    /// The input as a whole is no report.
    case refused(ParseRefusal)
}

public enum ParseRequest {
    /// The request frame for `input` (`Framing.write` adds the length).
    public static func encodedFrame(_ input: Data) throws(FrameError) -> Data {
        var header = HeaderWriter(reservingCapacity: 4)
        header.u32(input.count)
        return try JobFrame.assemble(kind: JobFrame.parseRequestKind, header: header, attachment: input)
    }

    /// The input a request frame carries.
    public static func input(frame: Data) throws(JobFrameError) -> Data {
        let opened = try JobFrame.open(frame, kind: JobFrame.parseRequestKind)
        try opened.header.finish()
        return opened.attachment
    }
}

extension ParseReply {
    private static let wholeInput: UInt8 = 1
    private static let parsed: UInt8 = 2
    private static let hasApp: UInt8 = 1
    private static let hasVersion: UInt8 = 2
    private static let hasModel: UInt8 = 4
    private static let hasOSVersion: UInt8 = 8
    private static let hasDeviceId: UInt8 = 16

    public func encodedFrame() throws(FrameError) -> Data {
        var header = HeaderWriter()
        var attachment = Data()
        switch self {
        case .refused(let refusal):
            header.u32(0)
            header.u8(1)
            header.string(refusal.description)
        case .parts(let parts):
            for part in parts { if let data = part.data { attachment.append(data) } }
            header.u32(attachment.count)
            header.u8(0)
            header.u32(parts.count)
            for part in parts {
                var flags: UInt8 = part.data == nil ? Self.wholeInput : 0
                if case .success = part.outcome { flags |= Self.parsed }
                header.u8(flags)
                header.u32(part.data?.count ?? 0)
                header.string(part.format)
                switch part.outcome {
                case .success(let summary):
                    header.u8(summary.kind == .lag ? 1 : 0)
                    let device = summary.device
                    header.u8(
                        (summary.app == nil ? 0 : Self.hasApp) | (summary.version == nil ? 0 : Self.hasVersion)
                            | (device?.model == nil ? 0 : Self.hasModel) | (device?.osVersion == nil ? 0 : Self.hasOSVersion)
                            | (device?.id == nil ? 0 : Self.hasDeviceId))
                    if let app = summary.app { header.string(app) }
                    if let version = summary.version { header.string(version) }
                    if let model = device?.model { header.string(model) }
                    if let osVersion = device?.osVersion { header.string(osVersion) }
                    if let id = device?.id { header.string(id) }
                    header.u32(summary.buildIds.count)
                    for id in summary.buildIds { header.string(id.hex) }
                case .failure(let refusal):
                    header.string(refusal.description)
                }
            }
        }
        return try JobFrame.assemble(kind: JobFrame.parseReplyKind, header: header, attachment: attachment)
    }

    /// Reads a reply frame. A part that is the whole input gets `data` nil; the caller has it.
    public init(frame: Data) throws(JobFrameError) {
        let opened = try JobFrame.open(frame, kind: JobFrame.parseReplyKind)
        var header = opened.header
        let attachment = opened.attachment
        switch try header.u8("outcome") {
        case 1:
            self = .refused(ParseRefusal(try header.string("reason")))
        case 0:
            // Each part takes at least flags, a byte count and an empty format.
            let count = try header.elements("parts", smallest: 9)
            var parts: [ParsedPartSummary] = []
            parts.reserveCapacity(count)
            var offset = attachment.startIndex
            for _ in 0..<count {
                let flags = try header.u8("flags")
                let length = try header.u32("part length")
                let format = try header.string("format")
                var data: Data?
                if flags & Self.wholeInput == 0 {
                    guard length <= attachment.endIndex - offset else {
                        throw .invalidField(field: "part length", reason: "\(length) bytes run past the attachment")
                    }
                    data = attachment[offset..<offset + length]
                    offset += length
                }
                if flags & Self.parsed != 0 {
                    let kind: ReportKind
                    switch try header.u8("kind") {
                    case 0: kind = .crash
                    case 1: kind = .lag
                    case let other: throw .invalidField(field: "kind", reason: "\(other) is neither 0 (crash) nor 1 (lag)")
                    }
                    let presence = try header.u8("presence")
                    let app = presence & Self.hasApp != 0 ? try header.string("app") : nil
                    let version = presence & Self.hasVersion != 0 ? try header.string("version") : nil
                    // Each value as a parser gives it, or the frame is refused: a reply that
                    // reads is the reply that was written (the frame fuzz target holds it so).
                    func deviceValue(_ bit: UInt8, _ field: String) throws(JobFrameError) -> String? {
                        guard presence & bit != 0 else { return nil }
                        let text = try header.string(field)
                        guard DeviceInfo.isKept(text) else {
                            throw .invalidField(field: field, reason: "not a value a parser keeps (blank, untrimmed, over the bound or with control characters)")
                        }
                        return text
                    }
                    let model = try deviceValue(Self.hasModel, "device model")
                    let osVersion = try deviceValue(Self.hasOSVersion, "OS version")
                    let deviceId = try deviceValue(Self.hasDeviceId, "device id")
                    let ids = try header.elements("build ids", smallest: 4)
                    var buildIds: [BuildID] = []
                    buildIds.reserveCapacity(ids)
                    for _ in 0..<ids {
                        let text = try header.string("build id")
                        do { buildIds.append(try BuildID(text)) } catch {
                            throw .invalidField(field: "build id", reason: error.description)
                        }
                    }
                    parts.append(ParsedPartSummary(
                        data: data, format: format,
                        outcome: .success(ParsedReportSummary(
                            format: format, kind: kind, app: app, version: version, buildIds: buildIds,
                            device: DeviceInfo(model: model, osVersion: osVersion, id: deviceId)))))
                } else {
                    parts.append(ParsedPartSummary(data: data, format: format, outcome: .failure(ParseRefusal(try header.string("reason")))))
                }
            }
            guard offset == attachment.endIndex else {
                throw .attachmentLength(declared: offset - attachment.startIndex, actual: attachment.count)
            }
            self = .parts(parts)
        case let other:
            throw .invalidField(field: "outcome", reason: "\(other) is neither 0 (parts) nor 1 (refused)")
        }
        try header.finish()
    }
}
