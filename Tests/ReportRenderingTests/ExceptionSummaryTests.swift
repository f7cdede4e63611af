import ReportModel
import ReportRendering
import Testing

/// Each fact of an exception is printed once, whatever the format repeated.
@Suite struct ExceptionSummaryTests {
    @Test func aTombstoneSignalIsNotRepeated() {
        let e = ExceptionInfo(type: "SIGSEGV", signal: "SIGSEGV", code: "SEGV_MAPERR", faultAddress: Address(0x88))
        #expect(e.summary == "SIGSEGV / SEGV_MAPERR at 0x88")
    }

    @Test func aFaultAddressAlreadyInTheCodeIsNotRepeated() {
        let e = ExceptionInfo(
            type: "EXC_BAD_ACCESS (SIGSEGV)", signal: "SIGSEGV", code: "KERN_INVALID_ADDRESS at 0x0000000000000088",
            faultAddress: Address(0x88))
        #expect(e.summary == "EXC_BAD_ACCESS (SIGSEGV) / KERN_INVALID_ADDRESS at 0x0000000000000088")
    }

    @Test func theTextViewPrintsTheMessageOnOneEscapedLine() {
        let report = SymbolicatedReport(
            format: "test", kind: .crash, status: .complete, missingBuildIds: [],
            exception: ExceptionInfo(signal: "SIGILL", message: "Fatal error: Index out of range\nat Ledger.swift:12"),
            threads: [])
        let lines = TextReportRenderer.render(report).split(separator: "\n").map(String.init)
        #expect(lines.contains("Exception: SIGILL"))
        #expect(lines.contains(#"Message: Fatal error: Index out of range\nat Ledger.swift:12"#), "one line: a message never adds report lines")
    }
}
