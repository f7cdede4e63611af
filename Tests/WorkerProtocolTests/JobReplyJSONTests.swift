import Foundation
import ReportModel
import TestSupport
import Testing
import WorkerProtocol

/// Reply frames are written by hand (`JobReply.encodedJSON`); JSONEncoder (`.sortedKeys`,
/// `.withoutEscapingSlashes`) is the oracle for every byte, and JSONDecoder must read back
/// the same reply, as the master and a remote worker's connection do.
@Suite struct JobReplyJSONTests {
    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()

    func report(_ name: String, frames: Int) -> SymbolicatedReport {
        SymbolicatedReport(
            format: "swift-backtrace-json", kind: .crash, status: .partial, missingBuildIds: ["ab12"],
            images: [BinaryImage(name: name, id: BuildID(bytes: [0xab, 0x12]), loadAddress: 0x1000)],
            threads: [SymbolicatedThread(index: 0, crashed: true, frames: (0..<frames).map { i in
                SymbolicatedFrame(index: i, address: Address(UInt64(0x1000 + i)), kind: .returnAddress, image: name,
                                  status: i % 2 == 0 ? .symbolicated : .missingDebugFile, function: "f\(i)/\(name)")
            })])
    }

    @Test func everyKindMatchesJSONEncoderAndDecodesBack() throws {
        let names = ["Demo", "a/b\\c\"d", "Ünïcödé 名前 🧨", "\u{1}\u{1f}\u{7f}", "<script>"]
        var replies: [JobReply] = []
        for (i, name) in names.enumerated() {
            let result = try CompressedResult(report(name, frames: i * 7))
            let group = GroupKey(fingerprint: String(repeating: "0f", count: 16), kind: i % 2 == 0 ? .crash : .lag, title: "SIGSEGV in \(name)",
                                 rulesVersion: i, frames: ["\(name)!f0", "\(name)!f1"])
            replies.append(JobReply(kind: .result, jobId: Int64(i), result: result, group: group))
            replies.append(JobReply(kind: .result, jobId: Int64.max, result: result))
        }
        for kind in [JobReply.Kind.inputError, .internalError, .permanentError, .workerLost] {
            replies.append(JobReply(kind: kind, jobId: -1, message: "line 1: \"x\" \\ / \n\t\u{0}"))
            replies.append(JobReply(kind: kind, jobId: 0))
        }
        for reply in replies {
            let mine = reply.encodedJSON()
            let oracle = try Self.encoder.encode(reply)
            #expect(mine == oracle, "\(String(decoding: mine, as: UTF8.self))\n\(String(decoding: oracle, as: UTF8.self))")
            let back = try JSONDecoder().decode(JobReply.self, from: mine)
            #expect(back.kind == reply.kind && back.jobId == reply.jobId && back.message == reply.message && back.group == reply.group)
            #expect(back.result?.compressed == reply.result?.compressed && back.result?.missing == reply.result?.missing)
            #expect(try back.result?.report() == reply.result?.report())
        }
    }
}
