import Foundation
import Storage
import ReportModel
import TestSupport
import Testing

/// Jobs that cannot succeed fail once, with the true reason, through the real master and worker.
@Suite(.serialized) struct PermanentFailureTests {
    func report() throws -> Data { try CrashFixture.shared.report(symbolicate: "off") }

    /// Runs one report through `master --once` with `environment` and returns its job.
    func runOnce(_ raw: Data, environment: [String: String] = [:], symbols: [String] = []) throws -> (Harness, JobStatus) {
        let h = try Harness()
        h.extraEnvironment = environment
        if !symbols.isEmpty {
            let added = try h.stackline(["symbols", "add", "--symbols", h.symbolsPath] + symbols)
            #expect(added.status == 0, "symbols add: \(added.stderr)")
        }
        let ids = try h.submit(try h.write([raw]))
        let master = try h.startMaster(["--workers", "1", "--once", "--max-attempts", "3", "--retry-delay", "0.1"])
        #expect(try master.waitForExit() == 0, "\(master.log.suffix(2000))")
        let id = try #require(ids.first)
        return (h, try #require(try h.database().jobStatus(reportId: id)))
    }

    /// The number in "is N bytes" of a failure message.
    func reportedSize(_ message: String?) -> Int? {
        guard let message, let range = message.range(of: #"is \d+ bytes"#, options: .regularExpression) else { return nil }
        return Int(message[range].dropFirst(3).dropLast(6))
    }

    @Test func aReplyOverTheFrameLimitFailsOnceNamingItsSize() throws {
        // The crashed thread's stack, its callers repeated 150 times: a deep recursion.
        var object = try #require(try JSONSerialization.jsonObject(with: try report()) as? [String: Any])
        var threads = try #require(object["threads"] as? [[String: Any]])
        let frames = try #require(threads.first?["frames"] as? [[String: Any]])
        threads[0]["frames"] = [frames[0]] + Array(repeating: Array(frames.dropFirst()), count: 150).joined()
        object["threads"] = threads
        let raw = try JSONSerialization.data(withJSONObject: object)
        // With the program and its libraries' debug information, frames gain names, files and
        // inline levels, so the reply is several times the size of the job.
        let images = try #require(
            object["images"] as? [[String: Any]])
        let symbols = images.compactMap { $0["path"] as? String }.filter { FileManager.default.fileExists(atPath: $0) }
        // First with the default limit: the stored result is a lower bound of the reply frame.
        let (reference, done) = try runOnce(raw, symbols: symbols)
        #expect(done.state == .done)
        let resultBytes = try #require(try reference.database().result(reportId: done.reportId)).symbolicatedJSON.count
        // The job frame carries the report as it is, plus a small header.
        let jobFrameBytes = raw.count + 200
        try #require(resultBytes > jobFrameBytes + 2048, "the reply must be larger than the job (\(resultBytes) vs \(jobFrameBytes))")
        let limit = (resultBytes + jobFrameBytes) / 2

        let (h, status) = try runOnce(raw, environment: ["STACKLINE_MAX_FRAME_BYTES": "\(limit)"], symbols: symbols)
        #expect(status.state == .failed)
        #expect(status.attempts == 1, "never retried")
        let message = try #require(status.lastError)
        #expect(message.hasPrefix("symbolicated report is "), "\(message)")
        #expect(message.hasSuffix(" bytes, over the frame limit of \(limit) bytes"), "\(message)")
        let size = try #require(reportedSize(message))
        #expect(size > limit && size >= resultBytes, "\(size) vs limit \(limit), stored result \(resultBytes)")
        #expect(!h.allLogs.contains("cannot write reply"), "the worker did not die on it")
    }

    @Test func aJobOverTheFrameLimitFailsOnceNamingItsSize() throws {
        let raw = try report()
        try #require(raw.count > 1024)
        let (_, status) = try runOnce(raw, environment: ["STACKLINE_MAX_FRAME_BYTES": "1024"])
        #expect(status.state == .failed)
        #expect(status.attempts == 1)
        let message = try #require(status.lastError)
        #expect(message.hasPrefix("report is "), "\(message)")
        #expect(message.hasSuffix(" bytes as a job frame, over the frame limit of 1024 bytes"), "\(message)")
        // The binary frame's size (JobFrameCodec.swift): tag and header length (5), attachment
        // length, job, report and attempt (4 + 3 × 8), the format as a counted string, the report.
        #expect(try #require(reportedSize(message)) == 5 + 28 + 4 + "swift-backtrace-json".utf8.count + raw.count)
    }

    @Test func anUnusableFrameLimitStopsTheMasterAtStart() throws {
        let h = try Harness()
        for bad in ["lots", "0", "1023", "4294967296"] {
            h.extraEnvironment = ["STACKLINE_MAX_FRAME_BYTES": bad]
            let out = try h.stackline(["master", "--once", "--workers", "1"])
            #expect(out.status == 64 && !out.signaled, "\(bad): \(out.summary)")
            #expect(out.stderr.contains("STACKLINE_MAX_FRAME_BYTES=\(bad) is not a whole number of bytes"), "\(out.stderr)")
        }
        h.extraEnvironment = ["STACKLINE_MAX_FRAME_BYTES": "nope"]
        let worker = try runProcess(TestPaths.worker, [], environment: h.environment, timeout: 60)
        #expect(worker.status == 2)
        #expect(worker.stderr.contains("STACKLINE_MAX_FRAME_BYTES=nope"))
    }

    @Test func aWorkerKilledBySIGKILLOnEveryAttemptIsQuarantinedWithTheSignalNamed() throws {
        let (_, status) = try runOnce(variant(of: try report(), number: 1, marker: "STACKLINE_TEST_HOOK_SIGKILL"))
        #expect(status.state == .failed)
        #expect(status.attempts == 3)
        #expect(status.lastError == "worker killed by SIGKILL (signal 9, out of memory?) on 3 attempts")
    }

    @Test func aParseErrorFailsOnceAndKeepsTheParsersMessage() throws {
        // A report that names its format but breaks it deep inside: the worker's parser (not
        // submit's detection) refuses it, as it does a report over a parse-time limit.
        let h = try Harness()
        let text = String(decoding: try report(), as: UTF8.self)
        let broken = Data(text.replacingOccurrences(of: "\"frames\"", with: "\"frames\": 7, \"x\"").utf8)
        let submitted = try h.database().submit(NewReport(raw: broken, format: "swift-backtrace-json", kind: .crash))
        let master = try h.startMaster(["--workers", "1", "--once", "--max-attempts", "3"])
        #expect(try master.waitForExit() == 0)
        let status = try #require(try h.database().jobStatus(reportId: submitted.reportId))
        #expect(status.state == .failed)
        #expect(status.attempts == 1)
        // `stackline parse` runs the same parser in-process: its message is what must arrive intact.
        let path = try #require(try h.write([broken], subdir: "broken").first)
        let parsed = try h.stackline(["parse", path])
        #expect(parsed.status == 1)
        let prefix = "stackline parse: \(path): "
        let parserMessage = try #require(parsed.stderr.split(separator: "\n").first { $0.hasPrefix(prefix) }?.dropFirst(prefix.count))
        #expect(status.lastError == "input error: \(parserMessage)")
    }
}
