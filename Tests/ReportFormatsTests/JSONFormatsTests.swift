import Foundation
import ReportFormats
import ReportModel
import TestSupport
import Testing

/// Every decimal value of `key` in `text`, in order, read from the digits themselves
/// (an exact reader independent of the parser's JSONDecoder).
func decimalValues(of key: String, in text: String) throws -> [UInt64] {
    let pattern = try NSRegularExpression(pattern: "\"\(key)\"\\s*:\\s*(\\d+)")
    let ns = text as NSString
    return try pattern.matches(in: text, range: NSRange(location: 0, length: ns.length)).map { match in
        let digits = ns.substring(with: match.range(at: 1))
        guard let value = UInt64(digits) else { throw TestSupportError("\(key): \(digits) does not fit 64 bits") }
        return value
    }
}

func stringValues(of key: String, in text: String) throws -> [String] {
    let pattern = try NSRegularExpression(pattern: "\"\(key)\"\\s*:\\s*\"([^\"]*)\"")
    let ns = text as NSString
    return pattern.matches(in: text, range: NSRange(location: 0, length: ns.length)).map { ns.substring(with: $0.range(at: 1)) }
}

@Suite struct KSCrashTests {
    @Test(arguments: ["raw.json", "processed.json"])
    func parsesTheKSCrashSamples(_ name: String) throws {
        let data = try wildSample("kscrash/\(name)")
        let text = String(decoding: data, as: UTF8.self)
        #expect(FormatRegistry.standard.detect(data)?.id == "kscrash")
        let report = try FormatRegistry.standard.detectAndParse(data)

        #expect(report.images.map(\.loadAddress.value) == (try decimalValues(of: "image_addr", in: text)))
        #expect(report.images.compactMap(\.vmAddress?.value) == (try decimalValues(of: "image_vmaddr", in: text)))
        #expect(report.images.compactMap(\.size) == (try decimalValues(of: "image_size", in: text)))
        #expect(report.images.map { $0.id?.hex ?? "-" } == (try stringValues(of: "uuid", in: text)).map { $0.lowercased().replacingOccurrences(of: "-", with: "") })
        #expect(report.images.count == 220)
        // Every backtrace frame, in order, thread after thread.
        #expect(report.threads.flatMap { $0.frames.map(\.address.value) } == (try decimalValues(of: "instruction_addr", in: text)))
        let crashed = try #require(report.threads.first { $0.crashed })
        #expect(crashed.index == 0)
        #expect(report.exception?.signal == "SIGABRT")
        #expect(report.exception?.message == "Something bad happened...")
        #expect(report.app?.name == "Crash-Tester")
        #expect(report.images.first?.arch == "i386")  // cpu_type 7
    }

    @Test func addressesAbove2To53StayExactAndTrailingCommasAreAccepted() throws {
        var text = String(decoding: try wildSample("kscrash/raw.json"), as: UTF8.self)
        // 2^53 + 1 would round to 2^53 through a Double; 2^64 − 1 is the largest address.
        let first = try #require(text.range(of: "\"instruction_addr\": 940935"))
        text.replaceSubrange(first, with: "\"instruction_addr\": 18446744073709551615")
        let second = try #require(text.range(of: "\"instruction_addr\": 940781"))
        text.replaceSubrange(second, with: "\"instruction_addr\": 9007199254740993")
        // A trailing comma after the last binary image, as some KSCrash versions write.
        let imagesEnd = try #require(text.range(of: "\n    ],\n    \"process\""))
        text.replaceSubrange(imagesEnd, with: ",\n    ],\n    \"process\"")
        // The image without image_vmaddr leaves vmAddress nil (the debug file's __TEXT.vmaddr is used).
        let vmaddr = try #require(text.range(of: "\"image_vmaddr\": 4096,"))
        text.replaceSubrange(vmaddr, with: "")

        let report = try KSCrashFormat().parse(Data(text.utf8))
        let frames = report.threads[0].frames.map(\.address.value)
        #expect(frames[0] == UInt64.max)
        #expect(frames[1] == 9_007_199_254_740_993)
        let app = try #require(report.images.first { $0.name == "Crash-Tester" })
        #expect(app.vmAddress == nil)
        #expect(report.images.first { $0.name == "dyld_sim" }?.vmAddress == Address(0))
    }

    @Test func truncatedAndOutOfRangeInputAreClearErrors() throws {
        let data = try wildSample("kscrash/raw.json")
        let truncated = data.prefix(data.count / 2)
        #expect(KSCrashFormat().matches(truncated))
        do {
            _ = try FormatRegistry.standard.detectAndParse(truncated)
            Issue.record("truncated JSON parsed")
        } catch {
            #expect("\(error)".hasPrefix("invalid JSON at line"), "\(error)")
        }
        let tooBig = String(decoding: data, as: UTF8.self).replacingOccurrences(
            of: "\"instruction_addr\": 940935", with: "\"instruction_addr\": 18446744073709551616")
        // An address past 2^64-1 is kept as a malformed frame with a warning quoting it (issue 10, item 8).
        let parsed = try KSCrashFormat().parse(Data(tooBig.utf8))
        #expect(parsed.threads[0].frames[0].malformed == true)
        #expect(parsed.warnings.contains { $0.contains("18446744073709551616 is not an address") }, "\(parsed.warnings)")
        let missing = String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\"image_addr\": 2117632,", with: "")
        do {
            _ = try KSCrashFormat().parse(Data(missing.utf8))
            Issue.record("an image without image_addr parsed")
        } catch {
            #expect("\(error)" == "malformed kscrash report: binary_images[0].image_addr: missing")
        }
    }
}

@Suite struct AppleIPSTests {
    @Test func parsesTheLLDBSample() throws {
        let data = try wildSample("ips/multithread-test.ips")
        #expect(FormatRegistry.standard.detect(data)?.id == "apple-ips")
        let report = try FormatRegistry.standard.detectAndParse(data)

        // Expected values come from the sample's own JSON: address = usedImages[imageIndex].base + imageOffset.
        let text = String(decoding: data, as: UTF8.self)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(text[text.firstIndex(of: "\n")!...].utf8)) as? [String: Any])
        let images = try #require(body["usedImages"] as? [[String: Any]])
        let threads = try #require(body["threads"] as? [[String: Any]])
        func number(_ any: Any?) -> UInt64 { (any as? NSNumber)?.uint64Value ?? .max }
        #expect(report.images.map(\.loadAddress.value) == images.map { number($0["base"]) })
        #expect(report.images.map { $0.size ?? .max } == images.map { number($0["size"]) })
        #expect(report.images.map(\.arch?.name) == images.map { $0["arch"] as? String })
        #expect(report.threads.count == threads.count)
        for (ours, theirs) in zip(report.threads, threads) {
            let frames = theirs["frames"] as? [[String: Any]] ?? []
            let expected = frames.map { frame in
                number(images[Int(number(frame["imageIndex"]))]["base"]) + number(frame["imageOffset"])
            }
            #expect(ours.frames.map(\.address.value) == expected)
            #expect(ours.frames.map { $0.imageIndex.map(UInt64.init) } == frames.map { number($0["imageIndex"]) })
            #expect(ours.crashed == (theirs["triggered"] as? Bool ?? false))
        }
        #expect(report.threads[2].crashed)
        #expect(report.images[3].id?.hex == "ab9b94f96cdf3b8eb140fae3cb13d327")
        #expect(report.images[6].id == nil, "an all-zero uuid means unknown")
        #expect(report.exception?.type == "EXC_BAD_ACCESS")
        #expect(report.exception?.faultAddress == Address(0))
        #expect(report.threads[0].name == "com.apple.main-thread")
    }

    @Test func lastExceptionBacktraceAndBadImageIndex() throws {
        let ips = """
            {"bug_type":"309","app_name":"App"}
            {"usedImages":[{"base":4294967296,"size":16384,"uuid":"00112233-4455-6677-8899-aabbccddeeff","name":"App"}],
             "faultingThread":0,
             "lastExceptionBacktrace":[{"imageIndex":0,"imageOffset":16},{"imageIndex":0,"imageOffset":32}],
             "threads":[{"frames":[{"imageIndex":0,"imageOffset":64},{"imageIndex":7,"imageOffset":8}]}]}
            """
        let report = try AppleIPSFormat().parse(Data(ips.utf8))
        #expect(report.threads[0].index == -1)
        #expect(report.threads[0].frames.map(\.address.value) == [0x1_0000_0010, 0x1_0000_0020])
        #expect(report.threads[1].crashed)
        #expect(report.threads[1].frames.map(\.address.value) == [0x1_0000_0040, 8])
        #expect(report.warnings.contains { $0.contains("imageIndex 7 names no image") })

        let hang = ips.replacingOccurrences(of: "\"309\"", with: "\"288\"")
        #expect(throws: ReportParseError.invalidReport(format: "apple-ips", reason: "bug_type 288 is not a crash report (309)")) {
            try AppleIPSFormat().parse(Data(hang.utf8))
        }
    }
}
