import Foundation
import TestSupport
import Testing

/// Issue 28's security review, kept: every finding (F1–F10, and HEAD) is an attack on a real
/// `stackline serve` on loopback, driven by curl or a small raw-socket client, and each test
/// checks that the attack is refused or handled *and* that `/healthz` still answers after it.
/// One extension file per area: `AttackTests+Overflow.swift` (F1, F2), `+Connections` (F3,
/// F6), `+Budgets` (F4), `+Findings` (F5, F7–F10, HEAD), `+Isolation` (a parser that dies).
@Suite("AttackTests", .serialized)
struct AttackTests {}

extension AttackTests {
    /// `GET /healthz` through curl; true when it answers 200 within `seconds`.
    static func healthy(_ server: ServerProcess, seconds: Int = 10) -> Bool {
        guard
            let out = try? runProcess(
                "curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "\(seconds)", server.baseURL + "/healthz"],
                timeout: Double(seconds) + 5)
        else { return false }
        return out.status == 0 && out.stdout == "200" && server.process.isRunning
    }
}
