import Foundation
import ReportFormats
import ReportModel
import SymbolStore
import Symbolication
import Testing
import TestSupport

@testable import Grouping

/// Grouping on real symbolicated reports: real Swift crashes written by the runtime's
/// backtracer, symbolicated against real debug files.
@Suite struct CrashGroupingTests {
    /// The demo program, and a second build of it whose code layout differs: a function
    /// inserted before the crashing ones shifts every address after it.
    static let builds: Result<(original: String, shifted: String, dir: String), TestSupportError> = {
        do {
            let dir = try makeTemporaryDirectory(prefix: "grouping-builds")
            let source = try String(contentsOfFile: TestPaths.demoSource, encoding: .utf8)
            let padding = """
                @inline(never) func unrelatedPadding(_ n: Int) -> Int {
                    var total = 0
                    for i in 0..<n { total = total &* 31 &+ i }
                    return total
                }
                if CommandLine.arguments.count > 5 { print(unrelatedPadding(CommandLine.arguments.count)) }

                """
            var paths: [String] = []
            for (name, text) in [("a", source), ("b", padding + source)] {
                try FileManager.default.createDirectory(atPath: "\(dir)/\(name)", withIntermediateDirectories: true)
                try text.write(toFile: "\(dir)/\(name)/Demo.swift", atomically: true, encoding: .utf8)
                try runChecked(try findTool("swiftc"), ["-g", "-Onone", "\(dir)/\(name)/Demo.swift", "-o", "\(dir)/\(name)/Demo"])
                paths.append("\(dir)/\(name)/Demo")
            }
            return .success((paths[0], paths[1], dir))
        } catch let error as TestSupportError {
            return .failure(error)
        } catch {
            return .failure(TestSupportError("\(error)"))
        }
    }()

    /// Runs `binary mode` under the Swift backtracer and parses the JSON report it writes.
    static func crash(_ binary: String, mode: String) throws -> RawReport {
        let out = try makeTemporaryDirectory(prefix: "crash") + "/report.json"
        let run = try runProcess(
            binary, [mode], environment: ["SWIFT_BACKTRACE": "enable=yes,symbolicate=off,format=json,output-to=\(out)"])
        #expect(run.signaled || run.status != 0, "the demo did not crash")
        let data = try Data(contentsOf: URL(fileURLWithPath: out))
        return try SwiftBacktraceJSONFormat().parse(data)
    }

    static func store(with binaries: [String]) throws -> SymbolStoreDirectory {
        let store = SymbolStoreDirectory(root: try makeTemporaryDirectory(prefix: "grouping-store"))
        for binary in binaries { _ = try store.add(path: binary) }
        return store
    }

    static func group(_ report: RawReport, store: SymbolStoreDirectory) -> (GroupKey, SymbolicatedReport) {
        var symbolicated = Symbolicator(store: store).symbolicate(report)
        let key = Grouper().group(&symbolicated)
        return (key, symbolicated)
    }

    /// The crashing frame's address inside the Demo image.
    static func demoOffsets(_ report: SymbolicatedReport) -> [UInt64] {
        (CrashFingerprinter.crashingThread(of: report)?.frames ?? [])
            .filter { $0.image == "Demo" }.compactMap { $0.imageOffset?.value }
    }

    @Test func theSameCrashFromTwoBuildsLandsInOneGroup() throws {
        let builds = try Self.builds.get()
        let store = try Self.store(with: [builds.original, builds.shifted])
        let (keyA, reportA) = Self.group(try Self.crash(builds.original, mode: "index"), store: store)
        let (keyB, reportB) = Self.group(try Self.crash(builds.shifted, mode: "index"), store: store)
        // Different builds: different layout, different load addresses.
        #expect(reportA.images.first { $0.name == "Demo" }?.id != reportB.images.first { $0.name == "Demo" }?.id)
        #expect(Self.demoOffsets(reportA).first != Self.demoOffsets(reportB).first)
        #expect(keyA.fingerprint == keyB.fingerprint)
        #expect(keyA.rulesVersion == GroupingRules.standard.version)
        // The decisive frames are the in-app functions of the source, innermost first.
        #expect(Array(keyA.frames.prefix(3)) == ["Demo!lookUp(_:at:)", "Demo!total(_:)", "Demo!process(_:)"])
        #expect(keyA.title.hasSuffix("in lookUp(_:at:) — Demo.swift"), "\(keyA.title)")
    }

    @Test func twoCrashSitesLandInTwoGroups() throws {
        let builds = try Self.builds.get()
        let store = try Self.store(with: [builds.original])
        let (index, _) = Self.group(try Self.crash(builds.original, mode: "index"), store: store)
        let (segv, _) = Self.group(try Self.crash(builds.original, mode: "segv"), store: store)
        #expect(index.fingerprint != segv.fingerprint)
        #expect(segv.frames.first == "Demo!writeThroughNull()")
        #expect(segv.title.contains("writeThroughNull() — Demo.swift"), "\(segv.title)")
    }

    @Test func unsymbolicatedReportsOfOneBuildMatchByImageOffset() throws {
        let builds = try Self.builds.get()
        let empty = try Self.store(with: [])
        let (first, reportA) = Self.group(try Self.crash(builds.original, mode: "index"), store: empty)
        let (second, reportB) = Self.group(try Self.crash(builds.original, mode: "index"), store: empty)
        let loadA = reportA.images.first { $0.name == "Demo" }?.loadAddress
        let loadB = reportB.images.first { $0.name == "Demo" }?.loadAddress
        #expect(loadA != loadB, "ASLR should load the two runs at different addresses")
        #expect(first.fingerprint == second.fingerprint)
        #expect(first.frames.allSatisfy { $0.hasPrefix("Demo+0x") }, "\(first.frames)")
        // Symbolicated, the same crash groups differently (by name): a new debug file regroups reports.
        let (named, _) = Self.group(try Self.crash(builds.original, mode: "index"), store: try Self.store(with: [builds.original]))
        #expect(named.fingerprint != first.fingerprint)
    }

    @Test func inAppFramesAreMarked() throws {
        let builds = try Self.builds.get()
        let (_, report) = Self.group(try Self.crash(builds.original, mode: "index"), store: try Self.store(with: [builds.original]))
        let frames = CrashFingerprinter.crashingThread(of: report)?.frames ?? []
        #expect(frames.contains { $0.image == "Demo" })
        for frame in frames where frame.image != nil {
            // The executable is the app; the Swift runtime and libc are not.
            #expect(frame.inApp == (frame.image == "Demo"), "\(frame.image ?? "") marked \(String(describing: frame.inApp))")
        }
    }
}

/// Skip, recursion, frame-limit and fallback rules on hand-made stacks (the inputs are data;
/// the expectations follow from the rules as the issue states them).
@Suite struct FingerprintRuleTests {
    static func frame(_ function: String?, image: String, inApp: Bool, offset: UInt64 = 0x100, symbol: String? = nil) -> SymbolicatedFrame {
        SymbolicatedFrame(
            index: 0, address: Address(0x1000 + offset), kind: .returnAddress, image: image,
            imageOffset: Address(offset), status: function == nil ? .missingDebugFile : .symbolicated,
            symbol: symbol ?? function, function: function, inApp: inApp)
    }

    static func report(_ frames: [SymbolicatedFrame], signal: String = "SIGABRT") -> SymbolicatedReport {
        SymbolicatedReport(
            format: "test", kind: .crash, status: .complete, missingBuildIds: [],
            exception: ExceptionInfo(signal: signal),
            threads: [SymbolicatedThread(index: 0, crashed: true, frames: frames)])
    }

    let fingerprinter = CrashFingerprinter()

    @Test func crashMachineryAtTheTopIsSkipped() {
        let key = fingerprinter.key(for: Self.report([
            Self.frame("__pthread_kill", image: "libsystem_kernel.dylib", inApp: false),
            Self.frame("abort", image: "libsystem_c.dylib", inApp: false),
            Self.frame("closure #1 in closure #1 in _assertionFailure(_:_:file:line:flags:)", image: "libswiftCore.so", inApp: false, symbol: "$ss17_assertionFailureyyF"),
            Self.frame("_assertionFailure(_:_:file:line:flags:)", image: "libswiftCore.dylib", inApp: false, symbol: "$ss17_assertionFailure"),
            Self.frame("kscrash_handleSignal", image: "KSCrash", inApp: false),
            Self.frame("Parser.next()", image: "Lexer", inApp: false, symbol: "$s5Lexer6ParserV4nextyyF"),
            Self.frame("CFRunLoopRun", image: "CoreFoundation", inApp: false),
        ]))
        // No in-app frames: system frames decide, starting after the machinery.
        #expect(key.frames == ["Lexer!Parser.next()", "CoreFoundation!CFRunLoopRun"])
        #expect(key.title == "SIGABRT in Parser.next() — Lexer")
    }

    @Test func machineryIsOnlySkippedAtTheTop() {
        let key = fingerprinter.key(for: Self.report([
            Self.frame("crash_here", image: "App", inApp: true),
            Self.frame("abort", image: "libsystem_c.dylib", inApp: false),
        ]))
        #expect(key.frames == ["App!crash_here"])
        let systemOnly = fingerprinter.key(for: Self.report([
            Self.frame("strlen", image: "libsystem_platform.dylib", inApp: false),
            Self.frame("process_input", image: "libfoo.so", inApp: false),
        ]))
        #expect(systemOnly.frames == ["libfoo.so!process_input"], "libsystem_platform at the top is machinery by image")
    }

    @Test func inAppFramesDecideWhenThereAreAny() {
        let key = fingerprinter.key(for: Self.report([
            Self.frame("objc_msgSend", image: "libobjc.A.dylib", inApp: false),
            Self.frame("-[Cart checkout]", image: "Shop", inApp: true),
            Self.frame("UIApplicationMain", image: "UIKitCore", inApp: false),
            Self.frame("main", image: "Shop", inApp: true),
        ]))
        #expect(key.frames == ["Shop!-[Cart checkout]", "Shop!main"])
    }

    @Test func recursionCollapsesAndAtMostEightFramesCount() {
        var frames = [Self.frame("leaf", image: "App", inApp: true)]
        frames += Array(repeating: Self.frame("recurse(int)", image: "App", inApp: true, symbol: "_Z7recursei"), count: 50)
        frames += (0..<20).map { Self.frame("caller\($0)", image: "App", inApp: true) }
        let key = fingerprinter.key(for: Self.report(frames))
        #expect(key.frames.count == 8)
        #expect(Array(key.frames.prefix(3)) == ["App!leaf", "App!recurse", "App!caller0"])
        var custom = GroupingRules.standard
        custom.maxFrames = 2
        #expect(CrashFingerprinter(rules: custom).key(for: Self.report(frames)).frames == ["App!leaf", "App!recurse"])
    }

    @Test func noAddressesOrLinesWhenASymbolExists() {
        var a = Self.frame("work(int)", image: "App", inApp: true, offset: 0x100, symbol: "_Z4worki")
        a.line = 10
        var b = Self.frame("work(int)", image: "App", inApp: true, offset: 0x980, symbol: "_Z4worki")
        b.line = 42
        #expect(fingerprinter.key(for: Self.report([a])).fingerprint == fingerprinter.key(for: Self.report([b])).fingerprint)
        // Without a symbol, the offset is all there is.
        let c = Self.frame(nil, image: "App", inApp: true, offset: 0x100)
        let d = Self.frame(nil, image: "App", inApp: true, offset: 0x980)
        #expect(fingerprinter.key(for: Self.report([c])).frames == ["App+0x100"])
        #expect(fingerprinter.key(for: Self.report([c])).fingerprint != fingerprinter.key(for: Self.report([d])).fingerprint)
    }

    @Test func rulesVersionIsPartOfTheFingerprint() {
        let frames = [Self.frame("f", image: "App", inApp: true)]
        var next = GroupingRules.standard
        next.version += 1
        let a = CrashFingerprinter().key(for: Self.report(frames))
        let b = CrashFingerprinter(rules: next).key(for: Self.report(frames))
        #expect(a.fingerprint != b.fingerprint)
        #expect(b.rulesVersion == next.version)
    }

    @Test func aRulesFileIsLoadedAndABadOneRefused() throws {
        let dir = try TempDirectory("rules")
        defer { dir.remove() }
        var rules = GroupingRules.standard
        rules.inApp.include.append("Vendor*")
        let good = dir.file("rules.json")
        try JSONEncoder().encode(rules).write(to: URL(fileURLWithPath: good))
        #expect(try GroupingRules.load(path: good) == rules)
        let bad = dir.file("bad.json")
        try Data("{\"version\": 2}".utf8).write(to: URL(fileURLWithPath: bad))
        #expect(throws: GroupingRulesError.self) { try GroupingRules.load(path: bad) }
        #expect(throws: GroupingRulesError.self) { try GroupingRules.load(path: dir.file("absent.json")) }
        let classifier = InAppClassifier(rules: rules)
        #expect(classifier.isInApp(BinaryImage(name: "VendorSDK", path: "/usr/lib/VendorSDK", loadAddress: Address(0))))
        #expect(!InAppClassifier(rules: .standard).isInApp(BinaryImage(name: "VendorSDK", path: "/usr/lib/VendorSDK", loadAddress: Address(0))))
    }
}
