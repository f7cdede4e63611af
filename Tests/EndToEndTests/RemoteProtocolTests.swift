import Foundation
import Storage
import TestSupport
import Testing

/// The remote-worker protocol on the wire, with curl playing the worker against a real
/// `stackline serve --workers 0` and the real `stackline-worker` as its slot process: the
/// version handshake, the binary job frame a claim carries, and reply frames, good and bad, by
/// both ways a result reaches the master. (RemoteWorkerTests runs whole workers over a network.)
@Suite(.serialized) struct RemoteProtocolTests {
    static let framesType = "Content-Type: application/x-stackline-frames"

    /// Frames one after another, each after its 4-byte big-endian length.
    static func bundle(_ frames: [Data]) -> Data {
        frames.reduce(into: Data()) { out, frame in
            let n = UInt32(frame.count)
            out.append(contentsOf: [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)])
            out.append(frame)
        }
    }

    static func unbundle(_ data: Data) throws -> [Data] {
        let bytes = [UInt8](data)
        var frames: [Data] = []
        var at = 0
        while at < bytes.count {
            try #require(bytes.count - at >= 4)
            let n = bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
            try #require(bytes.count - at - 4 >= n)
            frames.append(Data(bytes[at + 4..<at + 4 + n]))
            at += 4 + n
        }
        return frames
    }

    static func json(_ object: Any) throws -> Data { try JSONSerialization.data(withJSONObject: object) }

    static func hello(version: Int) -> [String: Any] {
        ["protocolVersion": version, "workerId": "curl-worker-1", "name": "curl", "slots": 1, "holds": [String](), "cacheBytes": 0]
    }

    static func claim(maxJobs: Int, results: [[String: Any]] = []) -> [String: Any] {
        [
            "waitSeconds": 5, "maxJobs": maxJobs, "status": ["busy": 0, "cacheBytes": 0, "fetches": 0],
            "added": [String](), "removed": [String](), "results": results,
        ]
    }

    @Test func aWorkerOfTheFirstProtocolIsRefusedAtConnect() throws {
        let h = try Harness()
        let token = try h.token("worker")
        let server = try h.startServer(["--workers", "0"])
        let old = try server.curl("POST", "/api/v1/workers/connect", token: token, body: try Self.json(Self.hello(version: 1)))
        #expect(old.status == 400, "\(old)")
        let message = try #require(old.json?["error"] as? String)
        #expect(message.contains("worker speaks protocol version 1; this master speaks versions 2 to 3"), "\(message)")
        let newer = try server.curl("POST", "/api/v1/workers/connect", token: token, body: try Self.json(Self.hello(version: 4)))
        #expect(newer.status == 400, "a worker newer than the master is refused at connect: \(newer)")
        // Version 2 (replies without symbol statuses) is still read.
        let current = try server.curl("POST", "/api/v1/workers/connect", token: token, body: try Self.json(Self.hello(version: 2)))
        #expect(current.status == 200, "\(current)")
    }

    @Test func jobAndReplyFramesTravelBinaryAndMalformedRepliesAreRefused() throws {
        let h = try Harness()
        let token = try h.token("worker")
        let server = try h.startServer(["--workers", "0"])
        let connected = try server.curl("POST", "/api/v1/workers/connect", token: token, body: try Self.json(Self.hello(version: 2)))
        try #require(connected.status == 200, "\(connected)")
        let raw = variant(of: try CrashFixture.shared.report(symbolicate: "off"), number: 1)
        let reportId = try #require(try h.submit(try h.write([raw])).first)

        // A claim: its answer is the ClaimAnswer, then the job frame.
        let claimed = try server.curl(
            "POST", "/api/v1/workers/curl-worker-1/claim", token: token,
            body: Self.bundle([try Self.json(Self.claim(maxJobs: 1))]), headers: [Self.framesType])
        try #require(claimed.status == 200, "\(claimed)")
        let frames = try Self.unbundle(claimed.body)
        try #require(frames.count == 2)
        let answer = try #require(try JSONSerialization.jsonObject(with: frames[0]) as? [String: Any])
        let job = try #require((answer["jobs"] as? [[String: Any]])?.first)
        let lease = try #require(job["lease"] as? [String: Any])
        let jobId = try #require(lease["jobId"] as? Int)
        #expect(job["reportId"] as? Int == Int(reportId))

        // The job frame, read by the layout (JobFrameCodec.swift): the report travels as it was submitted.
        let request = [UInt8](frames[1])
        func u32(_ at: Int) -> Int { request[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        func i64(_ at: Int) -> Int { Int(Int64(bitPattern: request[at..<at + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })) }
        #expect(request[0] == 0x11, "job request, layout 1")
        let headerLength = u32(1)
        #expect(u32(5) == raw.count, "attachment length")
        #expect(i64(9) == jobId && i64(17) == Int(reportId) && i64(25) == 1, "job, report, attempt")
        let formatLength = u32(33)
        #expect(String(decoding: request[37..<37 + formatLength], as: UTF8.self) == "swift-backtrace-json")
        #expect(headerLength == 4 + 24 + 4 + formatLength)
        #expect(Data(request[(5 + headerLength)...]) == raw)

        // A reply frame that is not one (an older release's JSON): refused, the job untouched.
        let header: [String: Any] = ["lease": lease, "reportId": Int(reportId)]
        let bad = try server.curl(
            "POST", "/api/v1/workers/curl-worker-1/claim", token: token,
            body: Self.bundle([try Self.json(Self.claim(maxJobs: 0, results: [header])), Data(#"{"jobId":1,"kind":"result"}"#.utf8)]),
            headers: [Self.framesType])
        #expect(bad.status == 200, "\(bad)")
        let delivered = try #require(
            (try JSONSerialization.jsonObject(with: try Self.unbundle(bad.body)[0]) as? [String: Any])?["delivered"] as? [[String: Any]])
        #expect(delivered.count == 1 && delivered.first?["outcome"] == nil)
        let why = try #require(delivered.first?["message"] as? String)
        #expect(why.contains("the reply frame for job \(jobId) is not a JobReply") && why.contains("a JSON frame"), "\(why)")
        // By the result route too: a truncated binary frame.
        let truncated = try server.curl(
            "POST", "/api/v1/workers/curl-worker-1/result", token: token,
            body: try Self.json(["lease": lease, "reportId": Int(reportId), "reply": Data([0x21, 0, 0, 0, 9, 0]).base64EncodedString()]))
        #expect(truncated.status == 400, "\(truncated)")
        #expect((truncated.json?["error"] as? String)?.contains("runs past the end of the frame") == true, "\(truncated)")
        #expect(try h.database().jobStatus(reportId: reportId)?.state == .running)

        // The real worker's reply to the job frame, delivered through the result route: stored.
        let out = h.dir.file("reply.frames")
        let run = try runProcess(
            "/bin/sh", ["-c", #""$0" --symbols "$1" > "$2""#, TestPaths.worker, h.symbolsPath, out],
            environment: h.environment, stdin: Self.bundle([frames[1]]), timeout: 120)
        #expect(run.succeeded, "\(run.summary)")
        let reply = try #require(try Self.unbundle(try Data(contentsOf: URL(fileURLWithPath: out))).first)
        #expect(reply.first == 0x21, "job reply, layout 1")
        let stored = try server.curl(
            "POST", "/api/v1/workers/curl-worker-1/result", token: token,
            body: try Self.json(["lease": lease, "reportId": Int(reportId), "reply": reply.base64EncodedString()]))
        #expect(stored.status == 200, "\(stored)")
        #expect(stored.json?["outcome"] as? String == "stored")
        #expect(try h.database().jobStatus(reportId: reportId)?.state == .done)
        let result = try #require(try h.database().result(reportId: reportId))
        let report = try #require(try JSONSerialization.jsonObject(with: result.symbolicatedJSON) as? [String: Any])
        #expect(report["id"] as? Int == Int(reportId) && report["format"] as? String == "swift-backtrace-json")
        // Once stored, the same result is refused by its fencing token.
        let again = try server.curl(
            "POST", "/api/v1/workers/curl-worker-1/result", token: token,
            body: try Self.json(["lease": lease, "reportId": Int(reportId), "reply": reply.base64EncodedString()]))
        #expect(again.status == 409, "\(again)")
    }
}
