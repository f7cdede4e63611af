import Foundation
import ReportModel

// The payload of a job frame and of a reply frame (inside the 4-byte length of `Framing`):
//
//   offset 0      u8   tag: message kind << 4 | layout version (0x11 job request, 0x21 job reply)
//   offset 1      u32  header length H
//   offset 5      H    header; its first field is the attachment's length A
//   offset 5 + H  A    attachment, as is: the request's raw report, the reply's compressed report
//
// Integers are big-endian like the length prefix; a string is a u32 byte count, then UTF-8.
// The bulk bytes travel raw: as base64 inside JSON, reading and writing these frames was a
// large part of the master's and the workers' CPU (scripts/bench-queue.sh, 30-frame crashes).
// A fixed binary header, not JSON: the master reads it from another machine's bytes, and length-checked reads are all that takes.

/// Why a job or reply frame cannot be read: whatever bytes a pipe or another machine delivers,
/// decoding ends in a value or in one of these, never in a trap.
public enum JobFrameError: Error, Equatable, CustomStringConvertible {
    /// Fewer bytes than the tag and the header length.
    case tooShort(Int)
    /// A JSON frame: the peer runs a release from before binary frames (remote protocol 1).
    case jsonFrame
    case unknownTag(UInt8)
    /// A message kind this build knows, in a layout version it does not.
    case unsupportedVersion(kind: String, version: UInt8)
    /// A frame of the other kind: a reply where a job belongs, or the reverse.
    case wrongKind(expected: String, found: String)
    /// The header length runs past the end of the frame.
    case headerPastEnd(declared: Int, available: Int)
    /// The header ends inside this field.
    case headerTruncated(field: String)
    /// A field holds what the layout does not allow.
    case invalidField(field: String, reason: String)
    /// Bytes left in the header after its last field.
    case headerTrailingBytes(Int)
    /// The header announces another attachment length than the bytes that follow it.
    case attachmentLength(declared: Int, actual: Int)

    public var description: String {
        switch self {
        case .tooShort(let n): "a frame of \(n) bytes is shorter than the 5-byte envelope"
        case .jsonFrame:
            "a JSON frame: the peer runs a Stackline release from before binary job frames (run the same release on both)"
        case .unknownTag(let tag): "unknown frame tag 0x\(String(tag, radix: 16))"
        case .unsupportedVersion(let kind, let version):
            "a \(kind) frame of layout version \(version); this build reads version \(JobFrame.layoutVersion)"
        case .wrongKind(let expected, let found): "a \(found) frame where a \(expected) frame belongs"
        case .headerPastEnd(let declared, let available):
            "the header length \(declared) runs past the end of the frame (\(available) bytes follow)"
        case .headerTruncated(let field): "the header ends inside its field `\(field)`"
        case .invalidField(let field, let reason): "header field `\(field)`: \(reason)"
        case .headerTrailingBytes(let n): "\(n) bytes follow the header's last field"
        case .attachmentLength(let declared, let actual):
            "the header announces an attachment of \(declared) bytes, \(actual) follow"
        }
    }
}

/// The envelope every message kind shares: job request and reply, parse request and reply.
enum JobFrame {
    static let layoutVersion: UInt8 = 1
    static let requestKind: UInt8 = 1
    static let replyKind: UInt8 = 2
    static let parseRequestKind: UInt8 = 3
    static let parseReplyKind: UInt8 = 4
    /// Tag and header length.
    static let envelopeBytes = 5

    static func kindName(_ kind: UInt8) -> String? {
        switch kind {
        case requestKind: "job request"
        case replyKind: "job reply"
        case parseRequestKind: "parse request"
        case parseReplyKind: "parse reply"
        default: nil
        }
    }

    /// Tag, header length, header, attachment. Lengths are written clamped to 32 bits: each is
    /// at most the total, and a total over the frame limit (itself at most 2^32 − 1) is refused
    /// here, so no clamped value ever leaves.
    static func assemble(kind: UInt8, header: HeaderWriter, attachment: Data) throws(FrameError) -> Data {
        let total = envelopeBytes + header.bytes.count + attachment.count
        guard total <= Framing.maxFrame else { throw .tooLarge(total) }
        return unchecked(kind: kind, header: header, attachment: attachment)
    }

    /// `assemble` without the limit, for frames small by construction.
    static func unchecked(kind: UInt8, header: HeaderWriter, attachment: Data) -> Data {
        var envelope = HeaderWriter()
        envelope.u8(kind << 4 | layoutVersion)
        envelope.u32(header.bytes.count)
        var out = Data(capacity: envelopeBytes + header.bytes.count + attachment.count)
        out.append(contentsOf: envelope.bytes)
        out.append(contentsOf: header.bytes)
        out.append(attachment)
        return out
    }

    /// Checks the envelope of a `kind` frame; returns its header (from the attachment length on)
    /// and its attachment.
    static func open(_ frame: Data, kind: UInt8) throws(JobFrameError) -> (header: HeaderReader, attachment: Data) {
        guard frame.count >= envelopeBytes else {
            if frame.first == UInt8(ascii: "{") { throw .jsonFrame }
            throw .tooShort(frame.count)
        }
        let start = frame.startIndex
        let tag = frame[start]
        if tag == UInt8(ascii: "{") { throw .jsonFrame }
        guard let found = kindName(tag >> 4) else { throw .unknownTag(tag) }
        guard tag & 0x0f == layoutVersion else { throw .unsupportedVersion(kind: found, version: tag & 0x0f) }
        guard tag >> 4 == kind else { throw .wrongKind(expected: kindName(kind) ?? "?", found: found) }
        let declared = BigEndian.u32(in: frame, at: start + 1)
        let available = frame.count - envelopeBytes
        guard declared <= available else { throw .headerPastEnd(declared: declared, available: available) }
        let headerStart = start + envelopeBytes
        var header = HeaderReader([UInt8](frame[headerStart..<headerStart + declared]))
        let attachmentLength = try header.u32("attachment length")
        let actual = available - declared
        guard attachmentLength == actual else { throw .attachmentLength(declared: attachmentLength, actual: actual) }
        return (header, Data(frame[(headerStart + declared)...]))
    }
}

/// Header fields, big-endian.
struct HeaderWriter {
    var bytes: [UInt8] = []

    init(reservingCapacity capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ value: UInt8) { bytes.append(value) }

    mutating func u32(_ value: Int) {
        let n = UInt32(clamping: value)
        bytes.append(contentsOf: BigEndian.bytes(n))
    }

    mutating func i64(_ value: Int64) {
        let n = UInt64(bitPattern: value)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(n >> UInt64(shift) & 0xff)) }
    }

    mutating func int(_ value: Int) { i64(Int64(value)) }

    mutating func string(_ text: String) {
        u32(text.utf8.count)
        bytes.append(contentsOf: text.utf8)
    }
}

/// Reads header fields, each length checked against what is left; names the field it fails in.
struct HeaderReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    private mutating func take(_ n: Int, _ field: String) throws(JobFrameError) -> Int {
        guard remaining >= n else { throw .headerTruncated(field: field) }
        defer { offset += n }
        return offset
    }

    mutating func u8(_ field: String) throws(JobFrameError) -> UInt8 {
        bytes[try take(1, field)]
    }

    mutating func u32(_ field: String) throws(JobFrameError) -> Int {
        let at = try take(4, field)
        return BigEndian.u32(in: bytes, at: at)
    }

    mutating func i64(_ field: String) throws(JobFrameError) -> Int64 {
        let at = try take(8, field)
        var n: UInt64 = 0
        for byte in bytes[at..<at + 8] { n = n << 8 | UInt64(byte) }
        return Int64(bitPattern: n)
    }

    /// A count or size: a 64-bit field that must be at least zero.
    mutating func count(_ field: String) throws(JobFrameError) -> Int {
        let value = try i64(field)
        guard value >= 0, let n = Int(exactly: value) else {
            throw .invalidField(field: field, reason: "\(value) is negative")
        }
        return n
    }

    mutating func int(_ field: String) throws(JobFrameError) -> Int {
        let value = try i64(field)
        guard let n = Int(exactly: value) else { throw .invalidField(field: field, reason: "\(value) does not fit") }
        return n
    }

    mutating func string(_ field: String) throws(JobFrameError) -> String {
        let length = try u32(field)
        guard length <= remaining else { throw .headerTruncated(field: field) }
        let at = try take(length, field)
        guard let text = String(validating: bytes[at..<at + length], as: UTF8.self) else {
            throw .invalidField(field: field, reason: "not UTF-8")
        }
        return text
    }

    /// An element count, refused when even the smallest elements could not fit in what is left
    /// (so a hostile count never sizes an allocation).
    mutating func elements(_ field: String, smallest: Int) throws(JobFrameError) -> Int {
        let n = try u32(field)
        guard n <= remaining / smallest else { throw .headerTruncated(field: field) }
        return n
    }

    func finish() throws(JobFrameError) {
        guard remaining == 0 else { throw .headerTrailingBytes(remaining) }
    }
}

// MARK: Job request

// Header: u32 raw length, i64 jobId, i64 reportId, i64 attempt, string format.
extension JobRequest {
    /// The frame payload the master sends (`Framing.write` adds the length); over the frame
    /// limit it is `FrameError.tooLarge`, as on the pipe.
    public func encodedFrame() throws(FrameError) -> Data {
        var header = HeaderWriter(reservingCapacity: 32 + format.utf8.count)
        header.u32(raw.count)
        header.i64(jobId)
        header.i64(reportId)
        header.int(attempt)
        header.string(format)
        return try JobFrame.assemble(kind: JobFrame.requestKind, header: header, attachment: raw)
    }

    /// Reads a job frame (any bytes: a malformed one is a `JobFrameError`).
    public init(frame: Data) throws(JobFrameError) {
        let opened = try JobFrame.open(frame, kind: JobFrame.requestKind)
        var header = opened.header
        jobId = try header.i64("jobId")
        reportId = try header.i64("reportId")
        attempt = try header.int("attempt")
        format = try header.string("format")
        try header.finish()
        raw = opened.attachment
    }
}

// MARK: Job reply

// Header: u32 compressed length (0 without a result), u8 kind, i64 jobId, u8 presence (1 message,
// 2 group, 4 result), then what is present, in that order:
//   message: string
//   group:   string fingerprint, u8 kind (0 crash, 1 lag), string title, i64 rulesVersion,
//            u32 count, that many strings (the deciding frames)
//   result:  i64 size (the JSON's, before compression), u8 status (0 complete, 1 partial,
//            2 unsymbolicated), i64 frames, i64 symbolicated, i64 missing (the counts),
//            u32 count, that many missing builds: string buildId, u8 flags, [string name],
//            [string detail]. flags: bit 0 a name follows, bit 1 a detail follows, bits 2-3
//            the status (0 notFound, 1 unreadable, 2 wrongArchitecture, 3 symbolTableOnly): a
//            worker from before the status sent 0 or 1, which reads as notFound.
extension JobReply {
    private static let hasMessage: UInt8 = 1
    private static let hasGroup: UInt8 = 2
    private static let hasResult: UInt8 = 4

    // Wire values are spelled out, not taken from case order, so reordering a Swift enum
    // cannot change the protocol.
    private static func wire(_ kind: Kind) -> UInt8 {
        switch kind {
        case .result: 0
        case .inputError: 1
        case .internalError: 2
        case .permanentError: 3
        case .workerLost: 4
        }
    }

    private static func kind(wire: UInt8) -> Kind? {
        switch wire {
        case 0: .result
        case 1: .inputError
        case 2: .internalError
        case 3: .permanentError
        case 4: .workerLost
        default: nil
        }
    }

    private static let missingHasName: UInt8 = 1
    private static let missingHasDetail: UInt8 = 2

    /// A missing build's status in bits 2-3 of its flags; a status an upload does not fix never
    /// reaches the reply (`MissingDebugFile.all`) and is sent as notFound.
    private static func wire(_ status: SymbolStatus) -> UInt8 {
        switch status {
        case .unreadable: 1
        case .wrongArchitecture: 2
        case .symbolTableOnly: 3
        case .notFound, .ok, .noIdentifier, .deviceSymbolsOnly, .unused: 0
        }
    }

    private static func missingStatus(wire: UInt8) -> SymbolStatus? {
        switch wire {
        case 0: .notFound
        case 1: .unreadable
        case 2: .wrongArchitecture
        case 3: .symbolTableOnly
        default: nil
        }
    }

    private static func wire(_ kind: ReportKind) -> UInt8 {
        switch kind {
        case .crash: 0
        case .lag: 1
        }
    }

    private static func reportKind(wire: UInt8) -> ReportKind? {
        switch wire {
        case 0: .crash
        case 1: .lag
        default: nil
        }
    }

    private static func wire(_ status: ReportStatus) -> UInt8 {
        switch status {
        case .complete: 0
        case .partial: 1
        case .unsymbolicated: 2
        }
    }

    private static func status(wire: UInt8) -> ReportStatus? {
        switch wire {
        case 0: .complete
        case 1: .partial
        case 2: .unsymbolicated
        default: nil
        }
    }

    /// The frame payload a worker writes; over the frame limit it is `FrameError.tooLarge`.
    public func encodedFrame() throws(FrameError) -> Data {
        try JobFrame.assemble(kind: JobFrame.replyKind, header: header(), attachment: result?.compressed ?? Data())
    }

    /// A reply without a result that always fits the smallest frame limit: the failures a
    /// worker or a remote worker's connection says in place of a reply it could not make.
    /// The message is cut to 900 bytes of UTF-8 (at a character), so nothing can refuse it.
    public static func failureFrame(_ kind: Kind, jobId: Int64, message: String) -> Data {
        var clipped = message
        if message.utf8.count > 900 {
            clipped = ""
            for character in message {
                guard clipped.utf8.count + character.utf8.count <= 900 else { break }
                clipped.append(character)
            }
        }
        let reply = JobReply(kind: kind, jobId: jobId, message: clipped)
        return JobFrame.unchecked(kind: JobFrame.replyKind, header: reply.header(), attachment: Data())
    }

    private func header() -> HeaderWriter {
        var out = HeaderWriter(reservingCapacity: 256)
        out.u32(result?.compressed.count ?? 0)
        out.u8(Self.wire(kind))
        out.i64(jobId)
        out.u8((message == nil ? 0 : Self.hasMessage) | (group == nil ? 0 : Self.hasGroup) | (result == nil ? 0 : Self.hasResult))
        if let message { out.string(message) }
        if let group {
            out.string(group.fingerprint)
            out.u8(Self.wire(group.kind))
            out.string(group.title)
            out.int(group.rulesVersion)
            out.u32(group.frames.count)
            for frame in group.frames { out.string(frame) }
        }
        if let result {
            out.int(result.size)
            out.u8(Self.wire(result.status))
            out.int(result.counts.frames)
            out.int(result.counts.symbolicated)
            out.int(result.counts.missing)
            out.u32(result.missing.count)
            for missing in result.missing {
                out.string(missing.buildID.hex)
                let flags = (missing.imageName == nil ? 0 : Self.missingHasName) | (missing.detail == nil ? 0 : Self.missingHasDetail)
                    | Self.wire(missing.status) << 2
                out.u8(flags)
                if let name = missing.imageName { out.string(name) }
                if let detail = missing.detail { out.string(detail) }
            }
        }
        return out
    }

    /// Reads a reply frame (any bytes: a malformed one is a `JobFrameError`, which the master
    /// treats as a reply it cannot read).
    public init(frame: Data) throws(JobFrameError) {
        let opened = try JobFrame.open(frame, kind: JobFrame.replyKind)
        var header = opened.header
        let compressed = opened.attachment
        let kindByte = try header.u8("kind")
        guard let kind = Self.kind(wire: kindByte) else {
            throw .invalidField(field: "kind", reason: "\(kindByte) is not a reply kind")
        }
        self.kind = kind
        jobId = try header.i64("jobId")
        let present = try header.u8("presence")
        guard present & ~(Self.hasMessage | Self.hasGroup | Self.hasResult) == 0 else {
            throw .invalidField(field: "presence", reason: "unknown bits in 0x\(String(present, radix: 16))")
        }
        message = nil
        group = nil
        if present & Self.hasMessage != 0 { message = try header.string("message") }
        if present & Self.hasGroup != 0 { group = try Self.readGroup(&header) }
        if present & Self.hasResult == 0 {
            guard compressed.isEmpty else {
                throw .invalidField(field: "attachment length", reason: "\(compressed.count) bytes attached to a reply without a result")
            }
            result = nil
        } else {
            result = try Self.readResult(&header, compressed: compressed)
        }
        try header.finish()
    }

    private static func readGroup(_ header: inout HeaderReader) throws(JobFrameError) -> GroupKey {
        let fingerprint = try header.string("group.fingerprint")
        let kindByte = try header.u8("group.kind")
        guard let kind = Self.reportKind(wire: kindByte) else {
            throw .invalidField(field: "group.kind", reason: "\(kindByte) is not a report kind")
        }
        let title = try header.string("group.title")
        let rulesVersion = try header.int("group.rulesVersion")
        // Each frame is at least its 4-byte length.
        let count = try header.elements("group.frames", smallest: 4)
        var frames: [String] = []
        frames.reserveCapacity(count)
        for _ in 0..<count { frames.append(try header.string("group.frames")) }
        return GroupKey(fingerprint: fingerprint, kind: kind, title: title, rulesVersion: rulesVersion, frames: frames)
    }

    private static func readResult(_ header: inout HeaderReader, compressed: Data) throws(JobFrameError) -> CompressedResult {
        let size = try header.count("result.size")
        let statusByte = try header.u8("result.status")
        guard let status = Self.status(wire: statusByte) else {
            throw .invalidField(field: "result.status", reason: "\(statusByte) is not a report status")
        }
        let counts = ReportCounts(
            frames: try header.count("result.counts.frames"), symbolicated: try header.count("result.counts.symbolicated"),
            missing: try header.count("result.counts.missing"))
        // Each missing build is at least its id's 4-byte length and the name flag.
        let count = try header.elements("result.missing", smallest: 5)
        var missing: [MissingDebugFile] = []
        missing.reserveCapacity(count)
        for _ in 0..<count {
            let text = try header.string("result.missing.buildId")
            // A remote worker's reply is input: the id is checked here, once, and typed from here on.
            let buildID: BuildID
            do throws(BuildIDError) { buildID = try BuildID(text) } catch {
                throw .invalidField(field: "result.missing.buildId", reason: error.description)
            }
            // As a worker writes it (lowercase hex), so a reply that reads is the reply that was
            // written: the frame fuzz target found "ABCD" read as "abcd" and encoded otherwise.
            guard buildID.hex == text else {
                throw .invalidField(field: "result.missing.buildId", reason: "'\(text)' is not written as a worker writes it (lowercase hex)")
            }
            let flags = try header.u8("result.missing.flags")
            guard flags & ~(Self.missingHasName | Self.missingHasDetail | 0b1100) == 0, let status = Self.missingStatus(wire: flags >> 2) else {
                throw .invalidField(field: "result.missing.flags", reason: "0x\(String(flags, radix: 16)) holds unknown bits or status")
            }
            var name: String?
            var detail: String?
            if flags & Self.missingHasName != 0 { name = try header.string("result.missing.name") }
            if flags & Self.missingHasDetail != 0 { detail = try header.string("result.missing.detail") }
            missing.append(MissingDebugFile(buildID: buildID, imageName: name, status: status, detail: detail))
        }
        return CompressedResult(compressed: compressed, size: size, status: status, counts: counts, missing: missing)
    }
}
