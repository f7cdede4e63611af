import Foundation
import TestSupport
import Testing

/// Lag reports whose profile tree is a 200k-node chain, or claims a depth of 2^32: refused at
/// parse time, or accepted and rendered (report text and apple, group, parse) in output linear
/// in the nodes, within 1 GiB of address space and the hang guard.
@Suite(.serialized) struct DeepProfileTests {
    static let nodes = 200_000

    static func lagReport(depths: [Int]) -> Data {
        let nodes = depths.enumerated().map { i, depth in
            #"{"depth": \#(depth), "count": 1, "costTime": \#(depths.count - i), "methodAddress": "0x\#(String(0x1_0000_1000 + (i % 4096) * 4, radix: 16))"}"#
        }
        return Data("""
            {"type": "lag", "arch": "arm64", "app": {"name": "deep", "version": "1.0"},
             "dyld_images": [{"name": "/App/deep", "uuid": "0123456789abcdef0123456789abcdef", "base_addr": "0x100000000", "addr_slide": "0x0", "size": 1048576}],
             "thread_profile": [\(nodes.joined(separator: ",\n"))]}
            """.utf8)
    }

    /// `stackline ARGS` under a 1 GiB address-space limit; the timeout is only a hang guard.
    static func bounded(_ h: Harness, _ arguments: [String]) throws -> ProcessOutput {
        let out = try runProcess(
            "/usr/bin/prlimit", ["--as=\(1 << 30)", TestPaths.stackline] + arguments, environment: h.environment, timeout: 180)
        #expect(!out.signaled, "\(out.summary)")
        return out
    }

    @Test func deepAndAbsurdProfilesAreRefusedOrRenderedLinearly() throws {
        let h = try Harness()
        let paths = try h.write([
            Self.lagReport(depths: Array(0..<Self.nodes)),
            Self.lagReport(depths: [0, 4_294_967_296]),
        ], subdir: "deep")
        let sizes = [Self.nodes, 2]
        // Output per node (a frame line with its costs) stays well under 200 bytes.
        func withinBudget(_ output: String, nodes: Int) -> Bool { output.utf8.count < 200 * nodes + 10_000 }

        var accepted: [(path: Int, id: Int64)] = []
        for (i, path) in paths.enumerated() {
            let parsed = try Self.bounded(h, ["parse", path])
            if parsed.status == 0 {
                #expect(withinBudget(parsed.stdout, nodes: sizes[i]), "parse: \(parsed.stdout.utf8.count) bytes")
            } else {
                #expect(parsed.stderr.contains(path), "a refusal names the file: \(parsed.stderr)")
            }
            let submitted = try Self.bounded(h, ["submit", path])
            // Parse and submit agree on what they refuse.
            #expect((submitted.status == 0) == (parsed.status == 0), "\(submitted.summary)")
            if let id = Int64(submitted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) { accepted.append((i, id)) }
        }
        guard !accepted.isEmpty else { return }
        let master = try h.startMaster(["--workers", "1", "--once"])
        #expect(try master.waitForExit(timeout: 600) == 0)

        for (i, id) in accepted {
            for format in ["text", "apple"] {
                let out = try Self.bounded(h, ["report", "\(id)", "--format", format])
                #expect(out.status == 0, "\(out.summary)")
                #expect(withinBudget(out.stdout, nodes: sizes[i]), "report \(format): \(out.stdout.utf8.count) bytes")
                if i == 1 { #expect(out.stdout.contains("[depth 4294967296]")) }
            }
        }
        let groups = try Self.bounded(h, ["groups", "--json"])
        let fingerprints = try #require(try JSONSerialization.jsonObject(with: Data(groups.stdout.utf8)) as? [[String: Any]])
            .compactMap { $0["fingerprint"] as? String }
        #expect(!fingerprints.isEmpty)
        for fingerprint in fingerprints {
            let out = try Self.bounded(h, ["group", fingerprint])
            #expect(out.status == 0, "\(out.summary)")
            #expect(withinBudget(out.stdout, nodes: Self.nodes))
        }
    }
}
