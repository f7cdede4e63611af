import Foundation
import WorkerProtocol
import ReportFormats

/// The worker's side of the master→worker pipe: `FrameReader` on the input bytes, and each
/// frame decoded as a `JobRequest` and its report parsed, as `stackline-worker` handles a job.
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
        while true {
            let frame: Data?
            do { frame = try reader.read() } catch {
                try checkEnd(error, bytes: bytes, offset: offset)
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
            let request: JobRequest
            do { request = try JSONDecoder().decode(JobRequest.self, from: frame) } catch {
                outcomes.append("\(length)-byte frame: not a job")
                continue
            }
            if FuzzTarget.validUTF8Only, !FuzzTarget.isValidUTF8(request.raw) {
                outcomes.append("job \(request.jobId): skipped: not valid UTF-8")
                continue
            }
            do {
                let report = try FormatRegistry.standard.parse(request.raw, format: request.format)
                outcomes.append("job \(request.jobId): \(report.format), \(report.threads.count) threads")
            } catch {
                outcomes.append("job \(request.jobId): refused: \(error.description)")
            }
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
