#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization
import SystemCalls

/// Errors of the length-prefixed frame protocol.
public enum FrameError: Error, Equatable, CustomStringConvertible {
    /// The peer closed its end (for a worker: it exited or crashed).
    case endOfStream
    /// A frame of this many bytes is over the limit (`Framing.maxFrame`).
    case tooLarge(Int)
    case io(String, errno: Int32)

    public var description: String {
        switch self {
        case .endOfStream: "end of stream"
        case .tooLarge(let n): "frame of \(n) bytes exceeds the limit of \(Framing.describe(bytes: Framing.maxFrame))"
        case .io(let op, let e): "\(op) failed: \(SystemCallError.reason(errno: e))"
        }
    }
}

/// `STACKLINE_MAX_FRAME_BYTES` is not a frame size the protocol can carry.
public struct FrameLimitError: Error, CustomStringConvertible {
    public var value: String
    public var description: String {
        "\(Framing.limitVariable)=\(value) is not a whole number of bytes between \(Framing.minimumMaxFrame) and \(UInt32.max)"
    }
}

/// The one reading and writing of a big-endian u32: the frame length prefix and the job
/// frames' header fields (`JobFrameCodec`).
enum BigEndian {
    static func u32<Bytes: RandomAccessCollection<UInt8>>(in bytes: Bytes, at i: Int) -> Int where Bytes.Index == Int {
        Int(bytes[i]) << 24 | Int(bytes[i + 1]) << 16 | Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
    }

    static func bytes(_ n: UInt32) -> [UInt8] {
        [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)]
    }
}

/// Frames are a 4-byte big-endian length followed by that many bytes: a job or reply frame
/// (`JobFrameCodec.swift`), or a remote worker's JSON envelope.
public enum Framing {
    /// Raw reports are capped at 64 MiB decompressed, and travel as they are; the room above
    /// that is for a symbolicated report's JSON, which the limit bounds too.
    public static let defaultMaxFrame = 128 << 20
    /// Environment variable that overrides the frame limit (`StacklineEnvironment.maxFrameBytes`).
    /// The master and its workers must agree on it; workers inherit the master's environment.
    public static let limitVariable = "STACKLINE_MAX_FRAME_BYTES"
    /// Room for the small failure reply a worker sends instead of a reply over the limit.
    public static let minimumMaxFrame: UInt32 = 1024

    /// The frame limit of this process: 128 MiB unless the entry point set another at start
    /// (`use(maxFrame:)`, from `StacklineEnvironment`). Every frame read or written checks it, so
    /// it is one relaxed atomic load rather than a value threaded through every reader.
    public static var maxFrame: Int { configuredLimit.load(ordering: .relaxed) }
    private static let configuredLimit = Atomic<Int>(defaultMaxFrame)

    /// Sets this process's frame limit; called once, by the entry point, before any frame moves.
    public static func use(maxFrame: Int) { configuredLimit.store(maxFrame, ordering: .relaxed) }

    /// The limit `text` (`STACKLINE_MAX_FRAME_BYTES`'s value) asks for; nil or empty: the default.
    public static func maxFrame(parsing text: String?) throws(FrameLimitError) -> Int {
        guard let value = text, !value.isEmpty else { return defaultMaxFrame }
        // The length prefix is 32 bits: nothing larger can be framed.
        guard let n = UInt32(value), n >= minimumMaxFrame else { throw FrameLimitError(value: value) }
        return Int(n)
    }

    /// "128 MiB" for whole mebibytes, else "N bytes": limits read as they were set.
    public static func describe(bytes: Int) -> String {
        bytes >= 1 << 20 && bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : "\(bytes) bytes"
    }

    /// Why a job could not be sent: its frame (`size` bytes) is over the limit. The same report
    /// makes the same frame on every attempt, so whoever sends it fails the job for good.
    public static func jobFrameTooLarge(_ size: Int) -> String {
        "report is \(size) bytes as a job frame, over the frame limit of \(describe(bytes: maxFrame))"
    }

    /// Writes one frame, retrying short writes and EINTR.
    public static func write(_ payload: Data, to fd: Int32) throws(FrameError) {
        try write(bundled: bundle([payload]), to: fd)
    }

    /// Writes frames already bundled (`bundle`), in one write where the pipe takes it.
    public static func write(bundled frame: Data, to fd: Int32) throws(FrameError) {
        let failure: SystemCallError? = frame.withUnsafeBytes { buf in
            do throws(SystemCallError) { try SystemCall.writeAll(fd, buf) } catch { return error }
            return nil
        }
        if let failure {
            throw failure.errno == EPIPE ? .endOfStream : .io("write", errno: failure.errno)
        }
    }
}

extension Framing {
    /// Frames one after another in one buffer: an HTTP body of the remote transport.
    public static func bundle(_ frames: [Data]) throws(FrameError) -> Data {
        // overflow: sizes of frames held in memory, each checked against the limit below.
        var out = Data(capacity: frames.reduce(0) { $0 &+ $1.count &+ 4 })
        for payload in frames {
            guard payload.count <= maxFrame else { throw .tooLarge(payload.count) }
            let n = UInt32(payload.count)
            out.append(contentsOf: BigEndian.bytes(n))
            out.append(payload)
        }
        return out
    }

    /// The frames of a bundle; a length past the end or over the limit is an error, as on a pipe.
    public static func unbundle(_ data: Data) throws(FrameError) -> [Data] {
        var frames: [Data] = []
        var offset = data.startIndex
        while offset < data.endIndex {
            guard data.endIndex - offset >= 4 else { throw .endOfStream }
            let length = BigEndian.u32(in: data, at: offset)
            guard length <= maxFrame else { throw .tooLarge(length) }
            let start = offset + 4
            guard data.endIndex - start >= length else { throw .endOfStream }
            frames.append(data[start..<(start + length)])
            offset = start + length
        }
        return frames
    }
}

/// Reads frames from a file descriptor, with an optional timeout per call.
/// Partial frames stay buffered across calls, so a timeout never loses data.
public final class FrameReader {
    public let fd: Int32
    private var buffer = [UInt8]()
    private var chunk = [UInt8](repeating: 0, count: 1 << 16)

    public init(fd: Int32) { self.fd = fd }

    /// The next frame; nil if `timeoutMs` (≥ 0) passed first. -1 waits forever.
    public func read(timeoutMs: Int32 = -1) throws(FrameError) -> Data? {
        let deadline = timeoutMs < 0 ? nil : DispatchTime.now().uptimeNanoseconds + UInt64(timeoutMs) * 1_000_000
        while true {
            if let frame = try takeFrame() { return frame }
            var wait: Int32 = -1
            if let deadline {
                let now = DispatchTime.now().uptimeNanoseconds
                if now >= deadline { return nil }
                wait = Int32(max(1, (deadline - now) / 1_000_000))
            }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, wait)
            if ready < 0 {
                if errno == EINTR { continue }
                throw .io("poll", errno: errno)
            }
            if ready == 0 { continue }
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw .io("read", errno: errno)
            }
            if n == 0 { throw .endOfStream }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    /// Whether a whole frame is already buffered: the next `read` returns without waiting.
    public var hasBufferedFrame: Bool {
        guard buffer.count >= 4 else { return false }
        return buffer.count >= 4 + BigEndian.u32(in: buffer, at: 0)
    }

    private func takeFrame() throws(FrameError) -> Data? {
        guard buffer.count >= 4 else { return nil }
        let length = BigEndian.u32(in: buffer, at: 0)
        guard length <= Framing.maxFrame else { throw .tooLarge(length) }
        guard buffer.count >= 4 + length else { return nil }
        let frame = Data(buffer[4..<(4 + length)])
        buffer.removeFirst(4 + length)
        return frame
    }
}
