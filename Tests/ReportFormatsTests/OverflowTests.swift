import Foundation
import ReportFormats
import ReportModel
import Testing

/// Issue 28, F1 and F2: numbers in a report that would overflow a sum are refused where they
/// are parsed, with a message naming the field and the limit; numbers inside the limits parse
/// to exactly what the input says. Every input goes through the real parsers, both alone and
/// through `FormatRegistry` (as intake and the workers call them).
@Suite struct OverflowTests {
    static let intMax = Int.max  // 9223372036854775807
    static let samplesLimit = ReportLimits.maxProfileSamples

    /// Parses `text` both ways; both must agree on the outcome.
    func parse(_ text: String, _ format: any ReportFormat) -> Result<RawReport, ReportParseError> {
        let data = Data(text.utf8)
        let direct = Result { () throws(ReportParseError) in try format.parse(data) }
        let registry = Result { () throws(ReportParseError) in try FormatRegistry.standard.detectAndParse(data) }
        #expect(FormatRegistry.standard.detect(data)?.id == format.id)
        switch (direct, registry) {
        case (.success, .success), (.failure, .failure): break
        default: Issue.record("the parser alone and the registry disagree: \(direct) vs \(registry)")
        }
        if case .failure = direct { return direct }
        return registry
    }

    func refusal(_ result: Result<RawReport, ReportParseError>) -> String? {
        if case .failure(let error) = result { return error.description }
        return nil
    }

    // MARK: MetricKit hangs

    static func metricKitHang(_ counts: [String], duration: String = "2 sec", offset: String = "100") -> String {
        let roots = counts.map {
            #"{"binaryUUID": "34769225-FA99-307E-9530-549AE6C3EC6F", "binaryName": "Demo", "offsetIntoBinaryTextSegment": \#(offset), "sampleCount": \#($0)}"#
        }
        return """
            {"timeStampBegin": "2024-05-01 10:00:00", "hangDiagnostics": [{
              "callStackTree": {"callStackPerThread": true, "callStacks": [{"threadAttributed": true, "callStackRootFrames": [\(roots.joined(separator: ","))]}]},
              "diagnosticMetaData": {"hangDuration": "\(duration)", "bundleIdentifier": "com.example.demo", "platformArchitecture": "arm64e"}}]}
            """
    }

    /// F1 as the review sent it: two roots of Int.max samples each (the sum trapped).
    @Test func metricKitRootsSummingPastIntMaxAreRefused() {
        let result = parse(Self.metricKitHang(["\(Self.intMax)", "\(Self.intMax)"]), MetricKitFormat())
        let message = refusal(result)
        #expect(message?.contains("report too large: callStackTree node[0]: sampleCount 9223372036854775807") == true, "\(result)")
        #expect(message?.contains("limit of \(Self.samplesLimit)") == true)
    }

    /// The limit is on all the tree's samples together: two roots that fit alone but not together.
    @Test func metricKitSamplesAreBoundedTogether() throws {
        let half = Self.samplesLimit / 2
        let fits = try parse(Self.metricKitHang(["\(half)", "\(half)"]), MetricKitFormat()).get()
        #expect(fits.lag?.profile.map(\.count) == [half, half])
        // 2 s over 2^40 samples, as the input says.
        #expect(fits.lag?.profile.first?.costTime == 1000)
        let over = refusal(parse(Self.metricKitHang(["\(half)", "\(half + 1)"]), MetricKitFormat()))
        #expect(over?.contains("callStackTree node[1]: sampleCount \(half + 1) brings the hang's samples past the limit") == true, "\(over ?? "parsed")")
    }

    @Test(arguments: ["-1", "-9223372036854775808"])
    func metricKitNegativeSampleCountsAreRefused(_ count: String) {
        let message = refusal(parse(Self.metricKitHang([count]), MetricKitFormat()))
        #expect(message == "malformed metrickit report: callStackTree node[0]: sampleCount \(count) is negative")
    }

    /// An offset whose page-rounded image size passes 2^64 (this trapped too).
    @Test(arguments: ["18446744073709551615", "18446744073709551000"])
    func metricKitOffsetsNearTwoToThe64AreRefused(_ offset: String) {
        let message = refusal(parse(Self.metricKitHang(["1"], offset: offset), MetricKitFormat()))
        #expect(message == "malformed metrickit report: offsetIntoBinaryTextSegment \(offset) leaves no room for the image in 64 bits")
    }

    /// A duration that is infinite as a Double, or past the cost limit, counts 1 ms a sample.
    @Test(arguments: [String(repeating: "9", count: 400) + " secs", "2000000000 secs"])
    func metricKitUnusableDurationsAreWarnedAbout(_ duration: String) throws {
        let report = try parse(Self.metricKitHang(["7"], duration: duration), MetricKitFormat()).get()
        #expect(report.lag?.profile.map(\.costTime) == [7])
        #expect(report.warnings.contains { $0.contains("is not a usable duration; costs count 1 ms a sample") })
    }

    // MARK: KSCrash profiles

    /// `padding` bytes of an unread field make the report as large as a real one naming its frames.
    static func ksProfile(_ samples: String, padding: Int = 0) -> String {
        """
        {"report": {"process_name": "MyApp", "padding": "\(String(repeating: "x", count: padding))"}, "system": {"CFBundleExecutable": "MyApp"},
         "crash": {"error": {"type": "profile", "profile": {
            "frames": [{"instruction_addr": 4377604587, "symbol_addr": 4377604536, "symbol_name": "main", "object_name": "MyApp", "object_addr": 4377493504}],
            "samples": \(samples)}}}}
        """
    }

    /// F1 as the review sent it: a sample after the first with count Int.max (`count + repeats` trapped).
    @Test(arguments: [
        (#"[{"frames": [0]}, {"count": 9223372036854775807, "frames": [0]}]"#, 1),
        (#"[{"count": 9223372036854775807, "frames": [0]}]"#, 0),
    ])
    func ksCrashHugeSampleCountsAreRefused(_ samples: String, _ index: Int) {
        let message = refusal(parse(Self.ksProfile(samples), KSCrashFormat()))
        #expect(message == "report too large: profile sample \(index): count 9223372036854775807 brings the samples (counted with their repeats) past the limit of \(ReportLimits.maxLagSamples) (limits: docs/formats.md)")
    }

    /// Right at the limit every repeat is kept; one more is refused.
    @Test func ksCrashRepeatsUpToTheLimitAreKept() throws {
        let limit = ReportLimits.maxLagSamples
        let at = try parse(Self.ksProfile(#"[{"frames": [0]}, {"count": \#(limit - 1), "frames": [0]}]"#, padding: 1000), KSCrashFormat()).get()
        #expect(at.lag?.samples.count == limit)
        let over = refusal(parse(Self.ksProfile(#"[{"frames": [0]}, {"count": \#(limit), "frames": [0]}]"#, padding: 1000), KSCrashFormat()))
        #expect(over?.contains("profile sample 1: count \(limit) brings the samples") == true)
    }

    /// Repeats are copies of the sample's frames: they count against the frame limit before
    /// they are made (a 2 KB profile made a quarter of a million frames; fuzz finding 6).
    @Test func ksCrashRepeatedFramesCountAgainstTheFrameLimit() throws {
        func sample(frames: Int) -> String { #"[{"count": 9800, "frames": [\#(Array(repeating: "0", count: frames).joined(separator: ","))]}]"# }
        let fits = try parse(Self.ksProfile(sample(frames: 26), padding: 16_500), KSCrashFormat()).get()
        #expect(fits.lag?.samples.count == 9800)
        #expect(fits.lag?.samples.map(\.frames.count).reduce(0, +) == 26 * 9800)
        let text = Self.ksProfile(sample(frames: 27), padding: 16_500)
        let over = refusal(parse(text, KSCrashFormat()))
        #expect(over == "report too large: profile sample 0: 27 frames repeated 9800 times bring the samples past 262144 frames (16 a byte of the report's \(text.utf8.count), at most 262144) (limits: docs/formats.md)")
    }

    /// Fuzz finding 6, minimised: 114 bytes made 10,000 samples (1.6 MB as JSON). Now the
    /// copies are bounded by 16 frames a byte of the report.
    @Test func ksCrashRepeatsAreBoundedByTheReportsSize() {
        let text = #"{"":{"process_name":""},"crash":{"error":{"type":"profile","profile":{"samples":[{"frames":[0],"count":10000}]}}}}"#
        #expect(text.utf8.count == 114)
        let over = refusal(parse(text, KSCrashFormat()))
        #expect(over == "report too large: profile sample 0: 1 frames repeated 10000 times bring the samples past 1824 frames (16 a byte of the report's 114, at most 262144) (limits: docs/formats.md)")
        // 1,824 copies of its one frame are still within what 114 bytes may make.
        let within = text.replacingOccurrences(of: "10000", with: "1824 ")
        #expect(throws: Never.self) { try parse(within, KSCrashFormat()).get() }
    }

    // MARK: SDK lag reports

    static func lag(_ nodes: [(depth: Int, count: Int, cost: String)]) -> String {
        let profile = nodes.map { #"{"depth": \#($0.depth), "count": \#($0.count), "costTime": \#($0.cost), "methodAddress": "0x104d08100"}"# }
        return """
            {"type": "lag", "dyld_images": [{"name": "/x/Demo", "uuid": "8F528C10-3E80-3DD6-B0BE-5D558F64F7AB", "base_addr": "0x104d00000", "addr_slide": "0x4d00000"}],
             "thread_profile": [\(profile.joined(separator: ","))]}
            """
    }

    /// F2: depth-0 counts summing past Int.max were accepted, and the page trapped.
    @Test func lagRootsSummingPastIntMaxAreRefused() {
        let message = refusal(parse(Self.lag([(0, Self.intMax, "1"), (0, Self.intMax, "1")]), LagReportFormat()))
        #expect(message == "report too large: thread_profile[0]: count 9223372036854775807 brings the tree's samples past the limit of \(Self.samplesLimit) (limits: docs/formats.md)")
    }

    /// Counts that fit alone, summed over siblings below a root, or down a chain.
    @Test func lagCountsAreBoundedOverTheWholeTree() throws {
        let half = Self.samplesLimit / 2
        let fits = try parse(Self.lag([(0, 1, "1"), (1, half, "1"), (1, half - 1, "1")]), LagReportFormat()).get()
        #expect(fits.lag?.profile.map(\.count) == [1, half, half - 1])
        let siblings = refusal(parse(Self.lag([(0, 1, "1"), (1, half, "1"), (1, half, "1")]), LagReportFormat()))
        #expect(siblings?.contains("thread_profile[2]: count \(half) brings the tree's samples past the limit") == true)
        let chain = refusal(parse(Self.lag((0..<3).map { ($0, half, "1") }), LagReportFormat()))
        #expect(chain?.contains("thread_profile[2]") == true)
    }

    @Test(arguments: ["1e308", "-1", "-0.5", "1000000000001"])
    func lagCostsOutsideTheRangeAreRefused(_ cost: String) {
        let message = refusal(parse(Self.lag([(0, 1, cost)]), LagReportFormat()))
        #expect(message?.hasPrefix("malformed sdk-lag report: thread_profile[0]: costTime ") == true, "\(message ?? "parsed")")
        #expect(message?.hasSuffix("is not a duration from 0 to 1000000000000 ms") == true)
    }

    @Test func lagCostsAtTheLimitParse() throws {
        let report = try parse(Self.lag([(0, 1, "1000000000000"), (1, 1, "0")]), LagReportFormat()).get()
        #expect(report.lag?.profile.map(\.costTime) == [1e12, 0])
    }

    // MARK: The helpers

    @Test func checkedAndSaturatingArithmetic() {
        #expect([Int.max, 1].checkedSum() == nil)
        #expect([Int.min, -1].checkedSum() == nil)
        #expect([Int.max, -1, 1].checkedSum() == Int.max)
        #expect([Int.max, Int.max].saturatingSum() == Int.max)
        #expect([Int.min, Int.min].saturatingSum() == Int.min)
        #expect([UInt64.max, 1].saturatingSum() == UInt64.max)
        #expect(Int.max.saturatingMultiplied(by: -2) == Int.min)
        #expect((-3).saturatingMultiplied(by: Int.min) == Int.max)
        #expect(Int.clamping(.nan) == 0)
        #expect(Int.clamping(.infinity) == Int.max)
        #expect(Int.clamping(-.infinity) == Int.min)
        #expect(Int.clamping(9.3e18) == Int.max)
        #expect(Int.clamping(-2.7) == -2)
        #expect(UInt64.clamping(-1) == 0)
        #expect(UInt64.clamping(1.9e19) == UInt64.max)
    }
}
