import Foundation
import ReportFormats
import ReportModel
import SymbolStore
import Symbolication
import Testing
import TestSupport

@testable import Grouping

/// Group keys are stored, so the optimised grouping must answer exactly as the code it replaced
/// (`PreOptimisationGrouping.swift`, kept verbatim): on every report fixture, on real
/// symbolicated crashes, and on seeded random reports built from awkward names, paths and
/// messages. Every comparison is of whole values (fingerprint, title, frames, marked frames).
@Suite struct PreOptimisationOracleTests {
    /// Both implementations on one report: the worker's path (mark, then key) and each key
    /// maker alone on the unmarked report, whatever its kind.
    static func expectSameAnswers(
        _ report: SymbolicatedReport, rules: GroupingRules = .standard, new grouper: Grouper? = nil,
        _ what: @autoclosure () -> String
    ) {
        let new = grouper ?? Grouper(rules: rules)
        let old = PreOptimisationGrouper(rules: rules)
        var markedNew = report
        var markedOld = report
        let keyNew = new.group(&markedNew)
        let keyOld = old.group(&markedOld)
        #expect(keyNew == keyOld, "\(what())")
        #expect(markedNew == markedOld, "marked frames differ: \(what())")
        for input in [report, markedOld] {
            #expect(new.crashes.key(for: input) == old.crashes.key(for: input), "crash key: \(what())")
            #expect(new.lags.key(for: input) == old.lags.key(for: input), "lag key: \(what())")
            #expect(new.lags.lagStack(of: input) == old.lags.lagStack(of: input).map {
                LagKeyMaker.LagStack(frames: $0.frames, source: .init(rawValue: $0.source.rawValue)!)
            }, "lag stack: \(what())")
        }
    }

    static func fixtureFiles() -> [String] {
        let root = TestPaths.packageRoot + "/Tests/Fixtures"
        let walker = FileManager.default.enumerator(atPath: root)
        var files: [String] = []
        while let path = walker?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let full = root + "/" + path
            if FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue {
                files.append(full)
            }
        }
        return files.sorted()
    }

    /// Every report under Tests/Fixtures that parses, symbolicated against an empty store (so
    /// names come from what the report carried: device symbols, backtracer text).
    @Test func everyFixtureReportGroupsAsBefore() throws {
        let store = SymbolStoreDirectory(root: try makeTemporaryDirectory(prefix: "oracle-store"))
        let symbolicator = Symbolicator(store: store)
        var reports = 0
        for file in Self.fixtureFiles() {
            guard let data = FileManager.default.contents(atPath: file),
                let parts = try? FormatRegistry.standard.detectAndParseAll(data)
            else { continue }
            for case .success(let raw) in parts.map(\.outcome) {
                let report = symbolicator.symbolicate(raw)
                reports += 1
                Self.expectSameAnswers(report, file)
                // The same report as a hang and as a crash: each key maker sees every stack.
                var other = report
                other.kind = report.kind == .crash ? .lag : .crash
                Self.expectSameAnswers(other, "\(file) as \(other.kind)")
            }
        }
        #expect(reports >= 20, "only \(reports) fixture reports parsed")
    }

    /// Real Swift crashes symbolicated against their debug files (the demo of CrashGroupingTests).
    @Test func realSymbolicatedCrashesGroupAsBefore() throws {
        let builds = try CrashGroupingTests.builds.get()
        let store = try CrashGroupingTests.store(with: [builds.original])
        for mode in ["index", "segv"] {
            let report = Symbolicator(store: store).symbolicate(try CrashGroupingTests.crash(builds.original, mode: mode))
            Self.expectSameAnswers(report, "demo \(mode)")
        }
    }

    /// Seeded random reports; one `Grouper` serves them all, as in a worker, so its caches are
    /// hit across reports, and a second rule set interleaves with the first.
    @Test(arguments: [1, 2, 3, 4])
    func randomReportsGroupAsBefore(seed: UInt64) {
        var generator = ReportGenerator(seed: seed)
        var custom = GroupingRules.standard
        custom.version = 7
        custom.maxFrames = 3
        custom.inApp.include.append("libc.so*")
        custom.inApp.exclude.append("Demo")
        custom.skipTop.functions.append("step*")
        custom.skipTop.images.append("Ledger")
        let standard = Grouper(rules: .standard)
        let other = Grouper(rules: custom)
        for i in 0..<600 {
            let report = generator.report()
            Self.expectSameAnswers(report, rules: .standard, new: standard, "seed \(seed) report \(i): \(report)")
            Self.expectSameAnswers(report, rules: custom, new: other, "seed \(seed) report \(i), custom rules: \(report)")
        }
    }

    @Test func helpersAnswerAsBefore() {
        var generator = ReportGenerator(seed: 99)
        for text in ReportGenerator.paths + ReportGenerator.imageNames + ReportGenerator.messages.compactMap({ $0 }) {
            #expect(basename(text) == preOptimisationBasename(text), "basename(\(text.debugDescription))")
        }
        for (function, symbol) in ReportGenerator.functions {
            guard let function else { continue }
            for _ in 0..<2 {
                #expect(
                    FunctionNormalizer.normalize(function, symbol: symbol)
                        == PreOptimisationFunctionNormalizer.normalize(function, symbol: symbol),
                    "normalize(\(function.debugDescription), symbol: \(String(describing: symbol)))")
            }
        }
        for _ in 0..<2000 {
            let exception = generator.exception()
            #expect(
                CrashFingerprinter.headline(exception) == PreOptimisationCrashFingerprinter.headline(exception),
                "headline(\(String(describing: exception?.message).debugDescription))")
            #expect(CrashFingerprinter.exceptionName(exception) == PreOptimisationCrashFingerprinter.exceptionName(exception))
        }
    }

    /// Scalars for the exhaustive checks: the whole Basic Multilingual Plane (every newline,
    /// Unicode space, combining mark and canonical singleton is there) and a stride through the rest.
    static let scalars: [Unicode.Scalar] =
        (0...0xFFFF).compactMap(Unicode.Scalar.init) + stride(from: 0x10000, through: 0x10FFFF, by: 97).compactMap(Unicode.Scalar.init)

    /// The headline's byte scan against Foundation's split and trim, next to every scalar: as a
    /// line break candidate between ASCII letters, at a line's edges, and alone.
    @Test func headlinesAnswerAsBeforeAroundEveryScalar() {
        var differences: [String] = []
        for scalar in Self.scalars {
            let c = String(scalar)
            for message in ["x\(c)y", " \(c)x\(c) ", "\(c)", "\t\(c)\(c)\nq", "  \n\(c) a \(c)\nz"] {
                let exception = ExceptionInfo(message: message)
                if CrashFingerprinter.headline(exception) != PreOptimisationCrashFingerprinter.headline(exception) {
                    differences.append(message.debugDescription)
                }
            }
        }
        #expect(differences.isEmpty, "\(differences.prefix(20))")
    }

    /// The language's first-byte shortcut against `hasPrefix` alone: every scalar in place of
    /// each prefix's first character, alone and before a combining mark.
    @Test func languagesAnswerAsBeforeForEveryFirstScalar() {
        let prefixes = ["-[", "+[", "_Z", "__Z", "$s", "_$s", "$S", "_$S", "$e", "_$e", "_T0", "__T0"]
        var differences: [String] = []
        for scalar in Self.scalars {
            for prefix in prefixes {
                for rest in [String(prefix.dropFirst()), "\u{301}" + prefix.dropFirst()] {
                    let name = String(scalar) + rest + "x y]"
                    for (symbol, function) in [(name, "f"), (nil, name), (name, name)] {
                        // Two enums of the same cases, compared by name.
                        if "\(FunctionNormalizer.language(symbol: symbol, function: function))"
                            != "\(PreOptimisationFunctionNormalizer.language(symbol: symbol, function: function))"
                        {
                            differences.append(name.debugDescription)
                        }
                    }
                }
            }
        }
        #expect(differences.isEmpty, "\(differences.prefix(20))")
    }
}

/// Reports made of the awkward cases: names in every language the normaliser knows, machinery,
/// recursion, images that share a basename, paths with `!` and combining marks, messages with
/// every kind of newline and Unicode space, lines around the 120-character title limit.
struct ReportGenerator: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }

    /// xorshift64*: deterministic, so a failure reproduces from its seed.
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }

    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }

    static let imageNames = [
        "Demo", "libswiftCore.so", "libc.so.6", "Shop", "UIKitCore", "libfoo.so", "base.apk!libbar.so", "KSCrash",
        "libsystem_kernel.dylib", "libsystem_c.dylib", "Café", "a/\u{301}b", "//", "!", "", "[vdso]", "linux-vdso.so.1",
        "Ledger", "/usr/lib/libobjc.A.dylib", "Sentry", "CoreFoundation", "libswift_Concurrency.so", "名前", "x!",
    ]

    static let paths = [
        "/tmp/x/Demo", "/usr/lib/swift/linux/libswiftCore.so", "/lib/x86_64-linux-gnu/libc.so.6",
        "/var/containers/Bundle/Application/ABC/Shop.app/Shop", "/System/Library/PrivateFrameworks/UIKitCore.framework/UIKitCore",
        "/data/app/com.x-1/base.apk!lib/arm64/libfoo.so", "/private/var/KSCrash.framework/KSCrash",
        "/usr/lib/system/libsystem_kernel.dylib", "/Applications/Café.app/Café", "/opt/swift/lib/Demo", "a/b/", "/",
        "/tmp/名前/🧨", "Ledger", "/usr/lib/swift/linux/libswift_Concurrency.so", "/vendor/lib64/libfoo.so", "",
    ]

    static let functions: [(String?, String?)] = [
        ("Shapes::Circle::area(double, int) const [clone .cold]", "_ZNK6Shapes6Circle4areaEdi.cold"),
        ("Shapes::Circle::area(double, int) const [clone .cold]", nil),
        ("std::vector<int, std::allocator<int> >::push_back(int const&)", "_ZNSt6vectorIiSaIiEE9push_backERKi"),
        ("Money::operator<(Money const&) const", "_ZNK5MoneyltERKS_"), ("operator new(unsigned long)", "_Znwm"),
        ("main::{lambda(int)#2}::operator()(int) const", "_ZZ4mainENKUliE_clEi"),
        ("(anonymous namespace)::Lexer::next()", "__ZN12_GLOBAL__N_15Lexer4nextEv"),
        ("unsigned long long hash_all(std::string const&)", "_Z8hash_allRKSs"),
        ("std::terminate()", "_ZSt9terminatev"), ("__cxa_throw", "__cxa_throw"),
        ("closure #1 in closure #1 in _assertionFailure(_:_:file:line:flags:)", "$ss17_assertionFailure_4file4line5flagss5NeverOs12StaticStringV_A2HSus6UInt32VtFySRys5UInt8VGXEfU_yAMXEfU_"),
        ("_assertionFailure(_:_:file:line:flags:)", "$ss17_assertionFailure"),
        ("generic specialization <Swift.Int> of Parser.next<A>() -> A?", "$s5Lexer6ParserV4nextxSgylFSi_Tg5"),
        ("specialized Array.append(_:)", "_$sSa6appendyyxnF"), ("merged partial apply for closure #1 in Parser.parse()", "$sT0"),
        ("step3(_:_:)", "$s4Demo5step3yS2i_SitF"), ("step0(_:_:)", "$s4Demo5step0yS2i_SitF"), ("main", "main"),
        ("lookUp(_:at:)", "$s4Demo6lookUp_2atS2i_SitF"), ("función(_:)", "$s4Demo7funciónyyF"), ("e\u{301}vent()", "$s\u{301}x"),
        ("-[Cart checkout]", "-[Cart checkout]"), ("+[NSException raise:format:]", nil), ("-[NSException raise]", "_objc"),
        ("abort", "abort"), ("__pthread_kill", nil), ("raise", "raise"), ("crunch.constprop.0", "crunch.constprop.0"),
        ("handler.v2", nil), ("_sigtramp", "_sigtramp"), ("kscrash_handleSignal", nil), ("", "_Z3foov"), ("", nil),
        (nil, "_Z3foov"), (nil, "$s4Demo5step3yS2i_SitF"), (nil, nil), (nil, nil), ("CFRunLoopRun", nil),
        ("fatalError(_:file:line:)", "$ss10fatalError"), ("Swift runtime failure: Index out of range", nil),
        ("<signal handler called>", nil), ("objc_msgSend", "objc_msgSend"), ("__libc_start_main", nil),
        // Machinery by the raw name only: normalised as C++, they lose what the pattern matches.
        ("Swift runtime failure: Index out of range", "_Z3foov"), ("closure #1 in fatalError(_:file:line:)", "_Z3barv"),
    ]

    static let files: [String?] = [
        nil, nil, "/src/Demo.swift", "Demo.swift", "/a/b/", "/tmp/名前/🧨.swift", "lag.c", "/build/Ledger/Sources/Ledger.swift",
    ]

    static let messages: [String?] = [
        nil, "", "Fatal error: Index out of range", "\n\n  \tFatal error: x\r\nmore", " \u{00A0}nbsp lead", "trail\u{3000}",
        String(repeating: "abcdefghij", count: 20), String(repeating: "🧨é", count: 65), "\u{2028}line sep\u{2029}next",
        "\u{85}NEL first", "  \u{301}combining", "\r\n\r\n", "   ", "\u{0600} prepend", "a\u{301} ", "x\u{0600} ",
        String(repeating: "x", count: 120), String(repeating: "y", count: 121), String(repeating: "é", count: 120),
        " " + String(repeating: "é", count: 121) + " ", "\u{000B}vt\u{000C}ff", "\t\tTabbed\t", "\u{200B}zero width",
        "memory limit exceeded", "first\n", "\r\rCR only", "  \n \t \n  third line  ", "e\u{301}\u{301}\n",
        "\u{1680}ogham\u{202F}", "😀" + String(repeating: "z", count: 125),
    ]

    mutating func exception() -> ExceptionInfo? {
        if chance(10) { return nil }
        let types: [String?] = [nil, "", "EXC_BAD_ACCESS", "EXC_CRASH (SIGABRT)", "EXC_BREAKPOINT"]
        let signals: [String?] = [nil, "", "SIGSEGV", "SIGABRT", "SIGTRAP"]
        return ExceptionInfo(type: pick(types), signal: pick(signals), message: pick(Self.messages))
    }

    mutating func image() -> BinaryImage {
        BinaryImage(name: pick(Self.imageNames), path: chance(70) ? pick(Self.paths) : nil, loadAddress: Address(0x1000))
    }

    mutating func frame(images: [BinaryImage]) -> SymbolicatedFrame {
        let (function, symbol) = pick(Self.functions)
        let image: String? =
            chance(8) ? nil : chance(8) ? pick(Self.imageNames) : images.isEmpty ? nil : pick(images).name
        let inApp: Bool? = chance(30) ? nil : chance(50)
        return SymbolicatedFrame(
            index: below(40), address: Address(UInt64(below(8)) * 0x40), kind: .returnAddress, image: image,
            imageOffset: chance(10) ? nil : Address(UInt64(below(5)) * 0x1f), status: .symbolicated, symbol: symbol,
            function: function, file: pick(Self.files), line: below(100), inApp: inApp)
    }

    mutating func frames(images: [BinaryImage]) -> [SymbolicatedFrame] {
        var frames: [SymbolicatedFrame] = []
        let count = chance(5) ? 0 : below(40)
        while frames.count < count {
            let frame = frame(images: images)
            // Recursion: runs of one frame, sometimes with the in-app flag changing inside the run.
            for _ in 0..<(chance(15) ? 1 + below(4) : 1) {
                var copy = frame
                if chance(20) { copy.inApp = chance(50) }
                frames.append(copy)
            }
        }
        return frames
    }

    /// Raw frames, indices 0, 1, 2, …, the top one at a fixed address.
    mutating func rawStack(images: [BinaryImage]) -> [SymbolicatedFrame] {
        (0..<1 + below(6)).map { i in
            var frame = frame(images: images)
            frame.index = i
            frame.address = Address(i == 0 ? 0x4000 : UInt64(0x5000 + i))
            return frame
        }
    }

    /// Each raw frame followed by 0–2 inline levels of its own (the same index and address).
    mutating func inlineLevels(of stack: [SymbolicatedFrame]) -> [SymbolicatedFrame] {
        stack.flatMap { frame in Array(repeating: frame, count: 1 + (chance(30) ? below(3) : 0)) }
    }

    mutating func report() -> SymbolicatedReport {
        // Now and then more than 16 images: the classifier then finds names through a table.
        let images = (0..<(chance(15) ? 17 + below(30) : below(8))).map { _ in image() }
        let threadNames: [String?] = [nil, nil, "Last Exception Backtrace", "main"]
        let threads = (0..<below(4)).map { i in
            SymbolicatedThread(index: chance(20) ? -1 : i, name: pick(threadNames), crashed: chance(40), frames: frames(images: images))
        }
        var lag: SymbolicatedLag?
        if chance(50) {
            var samples = (0..<below(6)).map { _ in SymbolicatedSample(frames: frames(images: images)) }
            // Stacks as the symbolicator writes them (indices ascending, a raw frame's inline
            // levels sharing one), repeating with one top address and more or fewer levels, so
            // that counting raw frames, not levels, decides which stack dominates.
            let bases = (0..<1 + below(3)).map { _ in rawStack(images: images) }
            for _ in 0..<below(10) {
                samples.append(SymbolicatedSample(frames: inlineLevels(of: pick(bases))))
            }
            if chance(50) { samples.shuffle(using: &self) }
            var depth = 0
            let profile = (0..<below(12)).map { _ in
                depth = max(0, depth + below(3) - 1)
                return SymbolicatedProfileNode(
                    node: ProfileNode(depth: depth, count: 1, costTime: Double(below(100))),
                    frames: Array(frames(images: images).prefix(2)))
            }
            lag = SymbolicatedLag(samples: samples, profile: profile)
        }
        let apps: [AppInfo?] = [
            nil, AppInfo(), AppInfo(name: "Demo", version: "1.0"), AppInfo(name: "Shop"), AppInfo(name: ""),
            AppInfo(name: "libc.so.6", version: "2"), AppInfo(name: "Café", version: "é"),
        ]
        return SymbolicatedReport(
            format: "test", kind: chance(50) ? .crash : .lag, status: .partial, missingBuildIds: [], app: pick(apps),
            exception: exception(), images: images, threads: threads, lag: lag)
    }
}
