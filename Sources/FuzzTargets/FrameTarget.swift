import Foundation
import WorkerProtocol
import ReportFormats

/// Both ends of the pipe: `FrameReader` on the input bytes, then each frame read as a
/// `JobRequest` (and its report parsed, as `stackline-worker` handles a job) or, when it is a
/// reply frame, as a `JobReply` (and its result checked, as the master does).
enum FrameTarget {
    static func decode(_ data: Data) throws(FuzzFailure) -> String {
        let path = try Scratch.shared.write(data, name: "input.frames")
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FuzzFailure("harness: cannot open \(path)") }
        defer { close(fd) }
        let reader = FrameReader(fd: fd)
        let bytes = [UInt8](data)
        var offset = 0
        var outcomes: [String] = []
        var frames: [Data] = []
        while true {
            let frame: Data?
            do { frame = try reader.read() } catch {
                try checkEnd(error, bytes: bytes, offset: offset)
                try checkBundle(data, read: frames, readerEnded: offset == bytes.count ? nil : error)
                return (outcomes + ["\(error)"]).joined(separator: "; ")
            }
            guard let frame else { throw FuzzFailure("read() without a timeout returned no frame") }
            // The oracle is the input itself: a 4-byte big-endian length, then that many bytes.
            guard bytes.count - offset >= 4 else { throw FuzzFailure("a frame from \(bytes.count - offset) bytes, less than a header") }
            let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            guard bytes.count - offset - 4 >= length, frame == Data(bytes[offset + 4..<offset + 4 + length]) else {
                throw FuzzFailure("frame at byte \(offset) is not the \(length) bytes its header declares")
            }
            offset += 4 + length
            frames.append(frame)
            outcomes.append(try decodeJob(frame))
        }
    }

    /// A frame decodes to a value that encodes to the same bytes (the layout spells each value
    /// one way) and decodes back to an equal value, or is refused with a description.
    private static func decodeJob(_ frame: Data) throws(FuzzFailure) -> String {
        let request: JobRequest
        do { request = try JobRequest(frame: frame) } catch .wrongKind {
            return try decodeReply(frame)
        } catch {
            guard !error.description.isEmpty else { throw FuzzFailure("a job frame refused without a description") }
            return "\(frame.count)-byte frame: not a job: \(error)"
        }
        try checkRoundTrip(request, frame, encode: { v throws(FrameError) in try v.encodedFrame() }, decode: JobRequest.init(frame:))
        if FuzzTarget.validUTF8Only, !FuzzTarget.isValidUTF8(request.raw) {
            return "job \(request.jobId): skipped: not valid UTF-8"
        }
        do {
            let report = try FormatRegistry.standard.parse(request.raw, format: request.format)
            return "job \(request.jobId): \(report.format), \(report.threads.count) threads"
        } catch {
            return "job \(request.jobId): refused: \(error.description)"
        }
    }

    private static func decodeReply(_ frame: Data) throws(FuzzFailure) -> String {
        let reply: JobReply
        do { reply = try JobReply(frame: frame) } catch {
            guard !error.description.isEmpty else { throw FuzzFailure("a reply frame refused without a description") }
            return "\(frame.count)-byte frame: not a reply: \(error)"
        }
        try checkRoundTrip(reply, frame, encode: { v throws(FrameError) in try v.encodedFrame() }, decode: JobReply.init(frame:))
        guard let result = reply.result else { return "reply for job \(reply.jobId): \(reply.kind.rawValue)" }
        // What the master checks before storing a result it does not otherwise read.
        return "reply for job \(reply.jobId): \(reply.kind.rawValue), \(result.compressed.count) bytes, \(result.isIntact ? "intact" : "not intact")"
    }

    private static func checkRoundTrip<Value: Equatable>(
        _ value: Value, _ frame: Data, encode: (Value) throws(FrameError) -> Data, decode: (Data) throws(JobFrameError) -> Value
    ) throws(FuzzFailure) {
        let again: Data
        do { again = try encode(value) } catch { throw FuzzFailure("a decoded frame does not encode again: \(error)") }
        guard again == frame else { throw FuzzFailure("a decoded \(frame.count)-byte frame encodes to other bytes (\(again.count))") }
        let back: Value
        do { back = try decode(again) } catch { throw FuzzFailure("an encoded frame does not decode: \(error)") }
        guard back == value else { throw FuzzFailure("a frame decodes to another value after a round trip") }
    }

    /// The remote transport's reader (`Framing.unbundle`, whose frames are slices of the body)
    /// agrees with the pipe's: the same frames, decoded alike, or refused where the pipe's
    /// reader stopped before the end of the input.
    private static func checkBundle(_ data: Data, read frames: [Data], readerEnded: FrameError?) throws(FuzzFailure) {
        // A slice that does not start at index 0, as a frame inside an HTTP body does.
        let body = (Data([0xff]) + data).dropFirst()
        let bundled: [Data]
        do { bundled = try Framing.unbundle(body) } catch {
            guard readerEnded != nil else { throw FuzzFailure("unbundle refuses what the frame reader read whole: \(error)") }
            return
        }
        if let readerEnded { throw FuzzFailure("unbundle accepts what the frame reader stopped in: \(readerEnded)") }
        guard bundled.map({ Data($0) }) == frames else { throw FuzzFailure("unbundle and the frame reader split the input differently") }
        for (slice, frame) in zip(bundled, frames) {
            guard (try? JobRequest(frame: slice)) == (try? JobRequest(frame: frame)),
                (try? JobReply(frame: slice)) == (try? JobReply(frame: frame))
            else { throw FuzzFailure("a frame decodes differently as a slice of a body") }
        }
    }

    /// The reader stops at the end of input, or on a header over the limit; nothing else.
    private static func checkEnd(_ error: FrameError, bytes: [UInt8], offset: Int) throws(FuzzFailure) {
        switch error {
        case .endOfStream:
            let rest = bytes.count - offset
            if rest >= 4 {
                let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
                guard rest < 4 + length else {
                    throw FuzzFailure("end of stream reported with a whole \(length)-byte frame at byte \(offset)")
                }
            }
        case .tooLarge(let n):
            guard n > Framing.maxFrame else { throw FuzzFailure("frame of \(n) bytes refused under the limit") }
        case .io(let op, let e):
            throw FuzzFailure("\(op) failed on a regular file: errno \(e)")
        }
    }
}
