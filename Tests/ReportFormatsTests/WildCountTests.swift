import Foundation
import ReportFormats
import ReportModel
import TestSupport
import Testing

/// Images, threads and frames of one report, as an independent reading of the file gives them.
struct SampleCounts: Equatable, CustomStringConvertible {
    var images: Int
    var threads: Int
    var frames: Int
    var description: String { "\(images) images, \(threads) threads, \(frames) frames" }

    init(images: Int, threads: Int, frames: Int) {
        self.images = images
        self.threads = threads
        self.frames = frames
    }

    init(_ counts: (images: Int, threads: Int, frames: Int)) {
        self.init(images: counts.images, threads: counts.threads, frames: counts.frames)
    }

    static func + (a: SampleCounts, b: SampleCounts) -> SampleCounts {
        SampleCounts(images: a.images + b.images, threads: a.threads + b.threads, frames: a.frames + b.frames)
    }
}

/// Every real sample in `Tests/Fixtures/wild` and `../shared/fixtures/wild` parses to the counts
/// an independent reading of the file gives: the sample's snapshot from the project it came from
/// where one exists, else a count written here (a regex over the text, or the JSON read with
/// `JSONSerialization`), never Stackline's own output. A sample with no counter fails the test,
/// so nothing new slips in unchecked.
@Suite struct WildCountTests {
    static let roots = [TestPaths.packageRoot + "/Tests/Fixtures/wild", TestPaths.packageRoot + "/../shared/fixtures/wild"]

    /// Sample files: everything under the roots but snapshots and notes.
    static let samples: [String] = {
        var found: [String] = []
        for root in roots {
            guard let walker = FileManager.default.enumerator(atPath: root) else { continue }
            while let relative = walker.nextObject() as? String {
                let path = root + "/" + relative
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
                let name = (relative as NSString).lastPathComponent
                if name.hasSuffix(".snap") || name.hasSuffix(".md") || name.hasPrefix(".") || name == "LICENSE" { continue }
                found.append(path)
            }
        }
        return found.sorted()
    }()

    @Test func thereAreSamples() {
        #expect(Self.samples.count >= 10, "\(Self.samples)")
    }

    @Test(arguments: samples)
    func parsedCountsMatchAnIndependentCount(_ path: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let expected = try #require(try WildCounter.expected(path: path, data: data), "no independent counter for \(path): add one to WildCounter")
        let parts = try FormatRegistry.standard.detectAndParseAll(data)
        var got = SampleCounts(images: 0, threads: 0, frames: 0)
        // Parts refused by name (MetricKit's CPU and disk diagnostics) are not reports; the
        // format's own tests check those refusals.
        for part in parts {
            guard case .success(let report) = part.outcome else { continue }
            let frames = report.threads.reduce(0) { $0 + $1.frames.count }
            got = got + SampleCounts(images: report.images.count, threads: report.threads.count, frames: frames)
        }
        #expect(got == expected, "\(path)")
    }
}

/// The independent counts, one function per kind of sample.
enum WildCounter {
    static func expected(path: String, data: Data) throws -> SampleCounts? {
        let directory = ((path as NSString).deletingLastPathComponent as NSString).lastPathComponent
        let text = String(decoding: data, as: UTF8.self)
        switch directory {
        case "apple-crash":
            let snapshot = (path as NSString).deletingPathExtension + ".expected.snap"
            if let snap = FileManager.default.contents(atPath: snapshot) {
                let s = try SentrySnapshot(String(decoding: snap, as: UTF8.self))
                return SampleCounts(images: s.images.count, threads: s.threads.count, frames: s.threads.reduce(0) { $0 + $1.frames.count })
            }
            return SampleCounts(appleCrashExpectedCounts(text))  // AppleFidelityTests.swift
        case "ips": return SampleCounts(try ipsExpectedCounts(data))
        case "metrickit":  // MetricKitTests.swift: crashes count their stacks; a hang's tree is its lag profile
            return try metricKitExpectedCounts(data).reduce(SampleCounts(images: 0, threads: 0, frames: 0)) { total, d in
                switch d.section {
                case "crashDiagnostics": total + SampleCounts(images: d.images, threads: d.threads, frames: d.frames)
                case "hangDiagnostics": total + SampleCounts(images: d.images, threads: 0, frames: 0)
                default: total  // refused by name (MetricKitTests checks the refusal)
                }
            }
        case "kscrash" where path.hasSuffix(".txt"): return SampleCounts(appleCrashExpectedCounts(text))  // KSCrash's Apple-style text
        case "kscrash": return SampleCounts(try kscrashExpectedCounts(data))
        case "swift-backtrace": return SampleCounts(try swiftBacktraceExpectedCounts(data, format: path.hasSuffix(".json.txt") ? "json" : "text"))
        case "android":  // AndroidFidelityTests.swift
            let c = tombstoneExpectedCounts(text)
            return SampleCounts(images: c.images, threads: c.threads, frames: c.frames)
        case "asan":  // SanitizerFormatTests.swift
            let c = sanitizerExpectedCounts(text)
            return SampleCounts(images: c.images, threads: c.threads, frames: c.frames)
        default: return nil
        }
    }
}
