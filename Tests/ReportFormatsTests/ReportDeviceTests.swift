import Foundation
import ReportFormats
import ReportModel
import Testing

/// The device a report names itself (issue 32 §1: "from the report itself where it carries
/// them"): the hardware model, the OS version number and the per-device key, read from every
/// public sample that has them. The expected values are read here from the sample's own text
/// (its JSON with JSONSerialization, its `.crash` header lines by hand), never by our parsers.
@Suite struct ReportDeviceTests {
    /// A `.crash` header value, read by hand.
    func headerValue(_ text: String, _ key: String) -> String? {
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            return line.dropFirst(key.count + 1).trimmingCharacters(in: .whitespaces)
        }
        return nil
    }

    /// The number in an OS string, by a regular expression (the oracle for `OSVersionNumber`).
    func versionNumber(_ os: String) -> String? {
        let withoutBuild = os.replacingOccurrences(of: #"\([^)]*\)"#, with: "", options: .regularExpression)
        return withoutBuild.range(of: #"[0-9]+(\.[0-9]+)*"#, options: .regularExpression).map { String(withoutBuild[$0]) }
    }

    @Test(arguments: ["ips/asi.ips", "ips/multithread-test.ips"])
    func ipsBodiesNameTheirDevice(_ name: String) throws {
        let data = try wildSample(name)
        let text = String(decoding: data, as: UTF8.self)
        let body = try #require(text.firstIndex(of: "\n").map { text[text.index(after: $0)...] })
        let json = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        let train = try #require((json["osVersion"] as? [String: Any])?["train"] as? String)
        let report = try FormatRegistry.standard.detectAndParse(data)
        let device = try #require(report.device)
        #expect(device.model == json["modelCode"] as? String)
        #expect(device.id == json["crashReporterKey"] as? String)
        #expect(device.osVersion == versionNumber(train), "\(train)")
        #expect(device.model != nil && device.id != nil && device.osVersion != nil)
    }

    @Test(arguments: ["apple-crash/handcrafted.txt", "apple-crash/XCDYouTubeKit-54.txt", "apple-crash/multithread-test.crash"])
    func crashTextHeadersNameTheirDevice(_ name: String) throws {
        let data = try wildSample(name)
        let text = String(decoding: data, as: UTF8.self)
        let report = try FormatRegistry.standard.detectAndParse(data)
        #expect(report.device?.model == headerValue(text, "Hardware Model"))
        #expect(report.device?.id == headerValue(text, "CrashReporter Key") ?? headerValue(text, "Anonymous UUID"))
        #expect(report.device?.osVersion == headerValue(text, "OS Version").flatMap(versionNumber))
        #expect(report.device?.osVersion != nil)
    }

    /// The same crash as `.crash` text and as `.ips`: macOS's "Anonymous UUID" is the `.ips`
    /// crashReporterKey, so both count as one device.
    @Test func aCrashAndItsIPSTwinAreOneDevice() throws {
        let text = try FormatRegistry.standard.detectAndParse(try wildSample("apple-crash/multithread-test.crash"))
        let ips = try FormatRegistry.standard.detectAndParse(try wildSample("ips/multithread-test.ips"))
        #expect(text.device?.id != nil)
        #expect(text.device?.id == ips.device?.id)
        #expect(text.device?.osVersion == ips.device?.osVersion)
    }

    @Test(arguments: ["kscrash/CrashInHandler.json", "kscrash/Hang-main-thread.json", "kscrash/fatal-error-simulator.json"])
    func kscrashSystemSectionsNameTheirDevice(_ name: String) throws {
        let data = try wildSample(name)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        // A recrash file's crash may sit under `recrash_report`; these samples keep `system` at the top.
        let system = try #require(json["system"] as? [String: Any])
        let report = try FormatRegistry.standard.detectAndParse(data)
        #expect(report.device?.model == system["machine"] as? String)
        #expect(report.device?.id == system["device_app_hash"] as? String)
        #expect(report.device?.osVersion == (system["system_version"] as? String).flatMap(versionNumber))
    }

    @Test func metricKitMetadataNamesTheDevice() throws {
        let data = try wildSample("metrickit/ios-uncaught-exception.json")
        let text = String(decoding: data, as: UTF8.self)
        let model = try #require(text.range(of: #""deviceType"\s*:\s*"([^"]*)""#, options: .regularExpression).map { String(text[$0]) })
        let os = try #require(text.range(of: #""osVersion"\s*:\s*"([^"]*)""#, options: .regularExpression).map { String(text[$0]) })
        func value(_ pair: String) -> String { String(pair.split(separator: "\"", omittingEmptySubsequences: false).dropLast().last ?? "") }
        let report = try FormatRegistry.standard.detectAndParse(data)
        #expect(report.device?.model == value(model))
        #expect(report.device?.osVersion == versionNumber(value(os)))
        #expect(report.device?.id == nil)
    }

    @Test func versionNumbersAsAnSDKWritesThem() {
        let cases = [
            "iPhone OS 17.2 (21C62)", "macOS 13.0", "macOS 13.0 ()", "4.3.3", "Mac OS X 10.15.7 (19H2)", "iPadOS 18.1",
            "watchOS 10.2 (21S364)", "(21C62)", "no number", "", "visionOS 2.",
        ]
        for os in cases {
            #expect(OSVersionNumber.of(os) == versionNumber(os).map { $0.hasSuffix(".") ? String($0.dropLast()) : $0 }, "\(os)")
        }
    }

    @Test func valuesAreBoundedWhereTheyAreParsed() throws {
        let sample = String(decoding: try wildSample("ips/asi.ips"), as: UTF8.self)
        let long = String(repeating: "M", count: ReportLimits.maxIdentityBytes + 1)
        let edited = sample
            .replacingOccurrences(of: #""modelCode" : "Mac13,1""#, with: #""modelCode" : "\#(long)""#)
            .replacingOccurrences(of: #""crashReporterKey" : "533C17C1-DBB1-4134-1FDE-68346F18AAA2""#, with: #""crashReporterKey" : "a\u001b[31mb""#)
        #expect(edited != sample)
        let report = try FormatRegistry.standard.detectAndParse(Data(edited.utf8))
        // Too long and with a control character: dropped, never cut or stored raw; the report still parses.
        #expect(report.device?.model == nil)
        #expect(report.device?.id == nil)
        #expect(report.device?.osVersion == "13.0")
        let exact = String(repeating: "M", count: ReportLimits.maxIdentityBytes)
        #expect(DeviceInfo(model: exact, osVersion: nil, id: nil)?.model == exact)
        #expect(DeviceInfo(model: "  ", osVersion: "", id: nil) == nil)
    }
}
