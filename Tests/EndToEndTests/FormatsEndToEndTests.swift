import Foundation
import ReportModel
import TestSupport
import Testing

/// A C program built with `-g -O2` for these tests, stored in the Harness's symbol store.
struct FixtureProgram {
    var name: String
    var path: String
    var buildID: String
    /// First PT_LOAD vaddr, page-aligned, as readelf reports it: 0 for PIE, 0x400000 for non-PIE.
    var preferredBase: UInt64
    /// Where the report says it was loaded (random, page-aligned).
    var loadAddress: UInt64
    /// The architecture reports name; for a fat Mach-O also the slice the oracle reads.
    var arch = "x86_64"
    var fatSlice = false
    /// What llvm-symbolizer's `--obj` gets: `FILE:ARCH` picks a slice of a fat file.
    var oracleObject: String { fatSlice ? "\(path):\(arch)" : path }
    func runtime(_ fileAddress: UInt64) -> UInt64 { fileAddress - preferredBase + loadAddress }
}

/// One frame of a constructed report, and the address the oracle is asked about.
struct PlannedFrame {
    var program: FixtureProgram
    var fileAddress: UInt64
    var kind: FrameKind
    var lookup: UInt64 { kind == .returnAddress ? fileAddress - 1 : fileAddress }
    var runtime: UInt64 { program.runtime(fileAddress) }
}

/// One inline level: function, file name, line; the form both llvm-symbolizer and Stackline give.
struct Level: Equatable, CustomStringConvertible {
    var function: String?
    var file: String?
    var line: Int
    init(function: String?, file: String?, line: Int) {
        self.function = function == "??" ? nil : function
        let known = file != nil && file != "??" && line > 0
        self.file = known ? file.map { ($0 as NSString).lastPathComponent } : nil
        self.line = known ? line : 0
    }
    var description: String { "\(function ?? "??") (\(file ?? "??"):\(line))" }
}

func hex(_ value: UInt64, width: Int = 16) -> String {
    let digits = String(value, radix: 16)
    return "0x" + String(repeating: "0", count: max(0, width - digits.count)) + digits
}

/// llvm-symbolizer's answer (inline levels, innermost first) for each address of `file`.
func llvmSymbolizer(_ file: String, _ addresses: [UInt64]) throws -> [[Level]] {
    let tool = try findTool(anyOf: ["llvm-symbolizer-14", "llvm-symbolizer"])
    let out = try runChecked(tool, ["--output-style=JSON", "--inlining", "--obj=\(file)"] + addresses.map { hex($0, width: 0) })
    guard let answers = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [[String: Any]],
        answers.count == addresses.count
    else { throw TestSupportError("llvm-symbolizer: unexpected output \(out.stdout.prefix(300))") }
    return answers.map { answer in
        (answer["Symbol"] as? [[String: Any]] ?? []).map {
            Level(function: $0["FunctionName"] as? String, file: $0["FileName"] as? String, line: ($0["Line"] as? Int) ?? 0)
        }
    }
}

/// Builds Tests/Fixtures/c/inlining.c as a PIE and a non-PIE executable and adds both to the
/// store with the real `stackline symbols add`.
func buildFixturePrograms(_ h: Harness) throws -> [FixtureProgram] {
    let source = TestPaths.packageRoot + "/Tests/Fixtures/c/inlining.c"
    let gcc = try findTool("gcc")
    var programs: [FixtureProgram] = []
    for (name, flags) in [("fixture-pie", ["-fPIE", "-pie"]), ("fixture-nopie", ["-fno-pie", "-no-pie"])] {
        let path = h.dir.file(name)
        try runChecked(gcc, ["-O2", "-g", "-Wl,--build-id"] + flags + ["-o", path, source])
        let buildID = try #require(try readelfBuildID(path))
        let segments = try runChecked("/usr/bin/readelf", ["-lW", path]).stdout.split(separator: "\n")
            .filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("LOAD") }
            .compactMap { UInt64($0.split(separator: " ")[2].dropFirst(2), radix: 16) }
        let base = try #require(segments.min()) & ~0xfff
        // A realistic ASLR placement: page-aligned, in the user half of the address space.
        let load = UInt64.random(in: 0x5500_0000_0000...0x7f00_0000_0000) & ~0xfff
        programs.append(FixtureProgram(name: name, path: path, buildID: buildID, preferredBase: base, loadAddress: load))
    }
    let added = try h.stackline(["symbols", "add", "--symbols", h.symbolsPath] + programs.map(\.path))
    #expect(added.status == 0, "symbols add: \(added.stderr)")
    return programs
}

/// Instruction addresses of `program` inside functions of inlining.c (llvm-symbolizer names the
/// source file), spread over the whole range, as (address, oracle answer at address and at address − 1).
func candidateAddresses(_ program: FixtureProgram, count: Int) throws -> [UInt64] {
    let all = program.fatSlice
        ? try instructionAddresses(in: program.path, section: "__text", arch: program.arch)
        : try instructionAddresses(in: program.path)
    let answers = try llvmSymbolizer(program.oracleObject, all.map { $0 - 1 })
    let inSource = zip(all, answers).filter { _, levels in levels.last?.file == "inlining.c" }.map(\.0)
    guard inSource.count >= count else { throw TestSupportError("only \(inSource.count) usable addresses in \(program.name)") }
    let step = inSource.count / count
    return (0..<count).map { inSource[$0 * step] }
}

/// A thread of `count` frames alternating between the programs: a pc, then return addresses.
func plannedThread(_ programs: [FixtureProgram], count: Int) throws -> [PlannedFrame] {
    let pools = try programs.map { try candidateAddresses($0, count: count) }
    return (0..<count).map { i in
        let p = i % programs.count
        return PlannedFrame(program: programs[p], fileAddress: pools[p][i], kind: i == 0 ? .pc : .returnAddress)
    }
}

// MARK: - Report builders, one per format

enum ReportBuilder {
    static func appleCrash(_ programs: [FixtureProgram], _ frames: [PlannedFrame]) -> String {
        var lines = [
            "Incident Identifier: 5C32DF84-31A0-43E7-87D0-239F7F594940",
            "Hardware Model:      iPhone14,2",
            "Process:             \(programs[0].name) [4242]",
            "Identifier:          com.example.fixture",
            "Version:             1.0 (7)",
            "Code Type:           X86-64 (Native)",
            "OS Version:          iPhone OS 17.2 (21C62)",
            "",
            "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)",
            "Exception Codes: KERN_INVALID_ADDRESS at 0x0000000000000010",
            "Triggered by Thread:  0",
            "",
            "Thread 0 name:  Dispatch queue: com.apple.main-thread",
            "Thread 0 Crashed:",
        ]
        for (i, f) in frames.enumerated() {
            lines.append(appleFrameLine(i, f))
        }
        lines += ["", "Thread 0 crashed with X86 Thread State (64-bit):", "  rax: 0x0000000000000000  rbx: 0x0000000000000001", "", "Binary Images:"]
        for p in programs {
            lines.append("    \(hex(p.loadAddress, width: 0)) -     \(hex(p.loadAddress + 0xfffff, width: 0)) +\(p.name) \(p.arch)  <\(p.buildID)> \(p.path)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func appleFrameLine(_ i: Int, _ f: PlannedFrame) -> String {
        String(i).padding(toLength: 4, withPad: " ", startingAt: 0) + f.program.name.padding(toLength: 30, withPad: " ", startingAt: 0)
            + "\t\(hex(f.runtime)) \(hex(f.program.loadAddress, width: 0)) + \(f.runtime - f.program.loadAddress)"
    }

    static func ips(_ programs: [FixtureProgram], _ frames: [PlannedFrame]) -> String {
        let header = #"{"app_name":"fixture","timestamp":"2024-05-01 10:00:00.00 +0000","app_version":"1.0","bug_type":"309","os_version":"macOS 14.4 (23E214)","name":"fixture"}"#
        let images = programs.map { p in
            #"{"source":"P","arch":"\#(p.arch)","base":\#(p.loadAddress),"size":1048576,"uuid":"\#(p.buildID)","path":"\#(p.path)","name":"\#(p.name)"}"#
        }
        let frameJSON = frames.map { f in
            let index = programs.firstIndex { $0.name == f.program.name }!
            return #"{"imageIndex":\#(index),"imageOffset":\#(f.fileAddress - f.program.preferredBase)}"#
        }
        let body = """
            {
              "procName" : "fixture",
              "cpuType" : "X86-64",
              "exception" : {"type":"EXC_BAD_ACCESS","signal":"SIGSEGV","subtype":"KERN_INVALID_ADDRESS at 0x0000000000000010"},
              "faultingThread" : 0,
              "threads" : [{"triggered":true,"id":1234,"queue":"com.apple.main-thread","frames":[\(frameJSON.joined(separator: ","))]}],
              "usedImages" : [\(images.joined(separator: ","))]
            }
            """
        return header + "\n" + body + "\n"
    }

    /// KSCrash: the PIE's image omits image_vmaddr (the debug file's preferred base applies),
    /// the non-PIE's gives it; addresses are decimal.
    static func kscrash(_ programs: [FixtureProgram], _ frames: [PlannedFrame]) -> String {
        let images = programs.map { p in
            let vmaddr = p.preferredBase == 0 ? "" : "\"image_vmaddr\": \(p.preferredBase), "
            return #"{"image_addr": \#(p.loadAddress), \#(vmaddr)"image_size": 1048576, "name": "\#(p.path)", "uuid": "\#(p.buildID.uppercased())", \#(p.arch == "arm64" ? #""cpu_type": 16777228, "cpu_subtype": 0"# : #""cpu_type": 16777223, "cpu_subtype": 3"#)}"#
        }
        let contents = frames.map { #"{"instruction_addr": \#($0.runtime), "object_name": "\#($0.program.name)"}"# }
        return """
            {
              "report": {"version": "3.1.0", "id": "4D2B0160-69B6-4DC1-BFED-08A0554A67C9", "process_name": "fixture", "timestamp": 1478560643, "type": "standard"},
              "binary_images": [\(images.joined(separator: ",\n    "))],
              "system": {"CFBundleExecutable": "fixture", "CFBundleShortVersionString": "1.0", "CFBundleVersion": "7", "cpu_arch": "\(programs[0].arch)", "system_name": "iOS", "system_version": "17.2"},
              "crash": {
                "error": {"mach": {"exception": 1, "exception_name": "EXC_BAD_ACCESS", "code": 1}, "signal": {"signal": 11, "name": "SIGSEGV"}, "address": 16, "type": "mach"},
                "threads": [{"index": 0, "crashed": true, "current_thread": true, "dispatch_queue": "com.apple.main-thread",
                             "backtrace": {"contents": [\(contents.joined(separator: ", "))], "skipped": 0}},],
              },
            }
            """
    }

    /// The SDK lag report: base_addr is the load address, addr_slide = base_addr − preferred base.
    static func lag(_ programs: [FixtureProgram], samples: [[PlannedFrame]], profile: [PlannedFrame]) -> String {
        let images = programs.map { p in
            #"{"name": "\#(p.path)", "uuid": "\#(p.buildID)", "base_addr": "\#(hex(p.loadAddress, width: 0))", "addr_slide": "\#(hex(p.loadAddress - p.preferredBase, width: 0))"}"#
        }
        let sampleJSON = samples.enumerated().map { i, frames in
            #"{"timestamp": "\#(i * 50) ms", "frames": [\#(frames.map { "\"\(hex($0.runtime, width: 0))\"" }.joined(separator: ", "))]}"#
        }
        let nodes = profile.enumerated().map { depth, f in
            #"{"depth": \#(depth), "count": \#(30 - depth), "costTime": \#(1500 - depth * 50), "methodAddress": "\#(hex(f.runtime, width: 0))"}"#
        }
        return """
            {"type": "lag", "arch": "x86_64", "app": {"name": "fixture", "version": "1.0"},
             "dyld_images": [\(images.joined(separator: ", "))],
             "samples": [\(sampleJSON.joined(separator: ", "))],
             "thread_profile": [\(nodes.joined(separator: ", "))]}
            """
    }

    /// An Android tombstone in logcat form: pc values are file addresses, every frame is a pc.
    static func tombstone(_ frames: [PlannedFrame]) -> String {
        let prefix = "11-21 10:00:00.123  4300  4300 F DEBUG   : "
        var lines = [
            "*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***",
            "Build fingerprint: 'google/sdk_gphone64_x86_64/emu64xa:14/UE1A.230829.050/12077443:userdebug/dev-keys'",
            "ABI: 'x86_64'",
            "pid: 4242, tid: 4242, name: fixture  >>> com.example.fixture <<<",
            "signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0000000000000010",
            "backtrace:",
        ]
        for (i, f) in frames.enumerated() {
            let path = f.program.preferredBase == 0
                ? "/data/app/~~Xy==/com.example.fixture-1/base.apk!lib\(f.program.name).so (offset 0x4000)"
                : "/data/local/tmp/\(f.program.name)"
            lines.append("      #\(String(format: "%02d", i)) pc \(hex(f.fileAddress).dropFirst(2))  \(path) (BuildId: \(f.program.buildID))")
        }
        return lines.map { prefix + $0 }.joined(separator: "\n") + "\n"
    }
}

// MARK: - Tests

@Suite(.serialized) struct FormatsEndToEndTests {
    /// Stackline's levels for raw frame `index` of `frames`, innermost first.
    func levels(_ frames: [SymbolicatedFrame], index: Int) -> [Level] {
        frames.filter { $0.index == index }.map { Level(function: $0.function ?? $0.symbol, file: $0.file, line: $0.line ?? 0) }
    }

    /// `fileRelative`: the report carries file addresses (tombstones), not runtime ones.
    func expectMatchesOracle(_ ours: [SymbolicatedFrame], _ planned: [PlannedFrame], _ context: String, fileRelative: Bool = false) throws {
        #expect(Set(ours.map(\.index)) == Set(planned.indices), "\(context): raw frames kept")
        for (i, f) in planned.enumerated() {
            let oracle = try llvmSymbolizer(f.program.oracleObject, [f.lookup])[0]
            #expect(!oracle.isEmpty)
            #expect(levels(ours, index: i) == oracle, "\(context) frame \(i) (\(f.program.name) \(hex(f.fileAddress)))")
            let reported = fileRelative ? f.fileAddress : f.runtime
            #expect(ours.filter { $0.index == i }.allSatisfy { $0.status == .symbolicated && $0.address.value == reported },
                "\(context) frame \(i): status and original address")
        }
    }

    func symbolicated(_ h: Harness, _ id: Int64) throws -> SymbolicatedReport {
        let out = try h.stackline(["report", "\(id)", "--format", "json"])
        #expect(out.status == 0, "\(out.stderr)")
        return try JSONDecoder().decode(SymbolicatedReport.self, from: Data(out.stdout.utf8))
    }

    @Test func everyFormatSymbolicatesLikeLLVMSymbolizer() throws {
        let h = try Harness()
        let programs = try buildFixturePrograms(h)
        let thread = try plannedThread(programs, count: 8)
        let tombstoneFrames = thread.map { f in PlannedFrame(program: f.program, fileAddress: f.fileAddress, kind: .pc) }
        let samples = [Array(thread.prefix(4)), Array(thread.dropFirst(2).prefix(5))].map { s in
            s.enumerated().map { i, f in PlannedFrame(program: f.program, fileAddress: f.fileAddress, kind: i == 0 ? .pc : .returnAddress) }
        }
        let profile = thread.prefix(3).map { PlannedFrame(program: $0.program, fileAddress: $0.fileAddress, kind: .pc) }

        let folder = h.dir.file("reports")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let reports: [(String, String)] = [
            ("app.crash", ReportBuilder.appleCrash(programs, thread)),
            ("app.ips", ReportBuilder.ips(programs, thread)),
            ("kscrash.json", ReportBuilder.kscrash(programs, thread)),
            ("lag.json", ReportBuilder.lag(programs, samples: samples, profile: Array(profile))),
            ("tombstone.txt", ReportBuilder.tombstone(tombstoneFrames)),
        ]
        var paths: [String] = []
        for (name, text) in reports {
            let path = folder + "/" + name
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            paths.append(path)
        }
        // The lag report arrives gzip-compressed, as the SDK uploads it.
        try runChecked("/usr/bin/gzip", ["-n", paths[3]])
        paths[3] += ".gz"

        let ids = try h.submit(paths)
        #expect(ids.count == 5)
        let master = try h.startMaster(["--workers", "2", "--once"])
        #expect(try master.waitForExit() == 0)

        let expectedFormats = ["apple-crash", "apple-ips", "kscrash", "sdk-lag", "android-tombstone"]
        for (n, id) in ids.enumerated() {
            let report = try symbolicated(h, id)
            #expect(report.format == expectedFormats[n])
            #expect(report.status == .complete, "\(expectedFormats[n]): \(report.warnings)")
            #expect(report.missingBuildIds.isEmpty)
            if report.kind == .lag {
                let lag = try #require(report.lag)
                for (s, sample) in lag.samples.enumerated() {
                    try expectMatchesOracle(sample.frames, samples[s], "lag sample \(s)")
                }
                #expect(lag.profile.map(\.node.depth) == [0, 1, 2])
                for (i, node) in lag.profile.enumerated() {
                    let reindexed = node.frames.map { f -> SymbolicatedFrame in
                        var g = f
                        g.index = i
                        return g
                    }
                    #expect(levels(reindexed, index: i) == (try llvmSymbolizer(profile[i].program.path, [profile[i].lookup])[0]), "profile node \(i)")
                }
                continue
            }
            let crashed = try #require(report.threads.first { $0.crashed })
            try expectMatchesOracle(crashed.frames, n == 4 ? tombstoneFrames : thread, expectedFormats[n], fileRelative: n == 4)
        }

        // The Apple layout keeps each original frame line and fills in function (file:line).
        let apple = try h.stackline(["report", "\(ids[0])", "--format", "apple"])
        #expect(apple.status == 0)
        #expect(apple.stdout.contains("Thread 0 Crashed:"))
        #expect(apple.stdout.contains("Binary Images:"))
        let appleLines = apple.stdout.split(separator: "\n").map(String.init)
        for (i, f) in thread.enumerated() {
            let oracle = try llvmSymbolizer(f.program.path, [f.lookup])[0]
            let start = String(i).padding(toLength: 4, withPad: " ", startingAt: 0) + f.program.name
            let frameLines = appleLines.filter { $0.hasPrefix(start) && $0.contains(hex(f.runtime)) }
            #expect(frameLines.count == oracle.count, "frame \(i): one line per inline level")
            for (line, level) in zip(frameLines, oracle) {
                #expect(line.contains(" \(level.function ?? "??")"), "\(line) should name \(level)")
                #expect(line.contains("(\(level.file ?? "??"):\(level.line))"), "\(line) should end with \(level)")
            }
        }
        // --json stays an alias of --format json; an unknown format is refused.
        #expect(try h.stackline(["report", "\(ids[1])", "--json"]).stdout == (try h.stackline(["report", "\(ids[1])", "--format", "json"])).stdout)
        #expect(try h.stackline(["report", "\(ids[1])", "--format", "xml"]).status != 0)
    }

    /// The Apple formats against real Mach-O debug files: a fat dSYM (arm64 + x86_64) in the
    /// store, and for each slice a `.crash`, an `.ips` and a KSCrash report naming that slice's
    /// UUID, loaded at a random slide. Each must match llvm-symbolizer on that slice alone.
    @Test func appleFormatsUseTheSliceTheirUUIDNames() throws {
        let h = try Harness()
        let added = try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, MachOFixtures.dSYM])
        #expect(added.status == 0, "\(added.stderr)")
        let uuids = try MachOFixtures.uuids(MachOFixtures.dSYMDWARF)
        var planned: [(String, [PlannedFrame])] = []
        var paths: [String] = []
        for arch in ["arm64", "x86_64"] {
            let vmaddr = try MachOFixtures.textVMAddress(MachOFixtures.dSYMDWARF, arch: arch)
            // iOS slides are multiples of the 16 KiB page, up to a few GiB.
            let slide = UInt64.random(in: 1...0x10_0000) << 14
            let program = FixtureProgram(
                name: "Sample", path: MachOFixtures.dSYMDWARF, buildID: try #require(uuids[arch]),
                preferredBase: vmaddr, loadAddress: vmaddr + slide, arch: arch, fatSlice: true)
            let thread = try plannedThread([program], count: 6)
            for (name, text) in [
                ("\(arch).crash", ReportBuilder.appleCrash([program], thread)),
                ("\(arch).ips", ReportBuilder.ips([program], thread)),
                ("\(arch)-kscrash.json", ReportBuilder.kscrash([program], thread)),
            ] {
                let path = h.dir.file(name)
                try Data(text.utf8).write(to: URL(fileURLWithPath: path))
                paths.append(path)
                planned.append((name, thread))
            }
        }
        let ids = try h.submit(paths)
        #expect(ids.count == planned.count)
        let master = try h.startMaster(["--workers", "2", "--once"])
        #expect(try master.waitForExit() == 0)
        for (id, (name, thread)) in zip(ids, planned) {
            let report = try symbolicated(h, id)
            #expect(report.status == .complete, "\(name): \(report.warnings)")
            let crashed = try #require(report.threads.first { $0.crashed })
            try expectMatchesOracle(crashed.frames, thread, name)
        }
    }

    @Test func malformedReportsFailAloneWhileGoodOnesComplete() throws {
        let h = try Harness()
        let programs = try buildFixturePrograms(h)
        let thread = try plannedThread(programs, count: 4)
        let good = ReportBuilder.appleCrash(programs, thread)

        // A frame in no image: kept, marked outsideAnyImage, the report still completes.
        let strayAddress: UInt64 = 0x10
        var stray = good.replacingOccurrences(
            of: "\n\nThread 0 crashed with",
            with: "\n4   ???                           \t\(hex(strayAddress)) 0x0 + 16\n\nThread 0 crashed with")
        stray = stray.replacingOccurrences(of: "5C32DF84", with: "5C32DF85")
        // A uuid of the wrong length: the image stays, its frames are malformed, a warning says why.
        let shortID = String(programs[1].buildID.prefix(30))
        let badUUID = good.replacingOccurrences(of: "<\(programs[1].buildID)>", with: "<\(shortID)>")
        let noImages = String(good[..<good.range(of: "Binary Images:")!.lowerBound])
        let kscrash = ReportBuilder.kscrash(programs, thread)
        let truncated = String(kscrash.prefix(kscrash.count * 2 / 3))

        let paths = try h.write([good, stray, badUUID, noImages, truncated].map { Data($0.utf8) })
        // A gzip bomb: 2 GiB of zeros, streamed through gzip into a ~2 MB file.
        let bomb = h.dir.file("bomb.json.gz")
        try runChecked("/bin/sh", ["-c", "head -c 2147483648 /dev/zero | gzip -1 > '\(bomb)'"])
        let bombSize = try #require(try FileManager.default.attributesOfItem(atPath: bomb)[.size] as? Int)
        #expect(bombSize < 16 << 20)

        // One submit run with every input: the bad ones are recorded as failed jobs with the reason.
        let submit = try runProcess(
            "/usr/bin/time", ["-f", "maxrss_kb=%M", TestPaths.stackline, "submit", "--accept-unparsed"] + paths + [bomb],
            environment: h.environment)
        #expect(submit.status != 0, "the bomb is refused, so submit reports a failure")
        #expect(submit.stderr.contains("bomb.json.gz: gzip: decompressed size exceeds the limit of 67108864 bytes"), "\(submit.stderr)")
        // Refused while streaming: the process never holds anything near 2 GiB.
        let rss = submit.stderr.split(separator: "\n").last { $0.hasPrefix("maxrss_kb=") }.flatMap { Int($0.dropFirst(10)) }
        #expect((rss ?? .max) < 400_000, "peak RSS \(rss ?? -1) kB")
        let ids = submit.stdout.split(separator: "\n").compactMap { Int64($0.split(separator: "\t").first ?? "") }
        #expect(ids.count == 5)

        let master = try h.startMaster(["--workers", "2", "--once"])
        #expect(try master.waitForExit() == 0)
        let db = try h.database()

        for id in ids.prefix(3) { #expect(try db.jobStatus(reportId: id)?.state == .done) }
        let strayReport = try symbolicated(h, ids[1])
        let strayFrame = try #require(strayReport.threads[0].frames.first { $0.index == 4 })
        #expect(strayFrame.status == .outsideAnyImage)
        #expect(strayFrame.address == Address(strayAddress))
        #expect(strayReport.threads[0].frames.filter { $0.index < 4 }.allSatisfy { $0.status == .symbolicated })

        let uuidReport = try symbolicated(h, ids[2])
        #expect(uuidReport.warnings.contains { $0.contains("\(programs[1].name): id '\(shortID)' has 30 hex digits") })
        for frame in uuidReport.threads[0].frames {
            #expect(frame.status == (frame.image == programs[1].name ? .malformed : .symbolicated))
        }

        let noImagesStatus = try #require(try db.jobStatus(reportId: ids[3]))
        #expect(noImagesStatus.state == .failed)
        #expect(noImagesStatus.lastError?.contains("no \"Binary Images:\" section") == true, "\(noImagesStatus.lastError ?? "")")
        let truncatedStatus = try #require(try db.jobStatus(reportId: ids[4]))
        #expect(truncatedStatus.state == .failed)
        #expect(truncatedStatus.lastError?.contains("invalid JSON at line") == true, "\(truncatedStatus.lastError ?? "")")
        #expect(truncatedStatus.lastError?.contains("cut short") == true)

        // A smaller limit is honoured too.
        let small = try h.stackline(["submit", "--max-size", "256", paths[0]])
        #expect(small.status != 0)
        #expect(small.stderr.contains("larger than 256 bytes"))
    }
}

@Suite struct ParseCommandTests {
    @Test func jsonShapeExitCodesStdinAndGzip() throws {
        let h = try Harness()
        let programs = try buildFixturePrograms(h)
        let thread = try plannedThread(programs, count: 3)
        let crash = Data(ReportBuilder.appleCrash(programs, thread).utf8)
        let path = try h.write([crash])[0]

        let out = try h.stackline(["parse", "--json", path])
        #expect(out.status == 0, "\(out.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any])
        #expect(json["format"] as? String == "apple-crash")
        #expect(json["kind"] as? String == "crash")
        let images = try #require(json["images"] as? [[String: Any]])
        #expect(images.map { $0["name"] as? String } == programs.map(\.name))
        #expect(images.map { $0["loadAddress"] as? String } == programs.map { hex($0.loadAddress, width: 0) })
        #expect(images.map { $0["id"] as? String } == programs.map(\.buildID))
        let threads = try #require(json["threads"] as? [[String: Any]])
        #expect(threads.count == 1)
        #expect(threads[0]["index"] as? Int == 0)
        #expect(threads[0]["crashed"] as? Bool == true)
        #expect(threads[0]["name"] as? String == "com.apple.main-thread")
        let frames = try #require(threads[0]["frames"] as? [[String: Any]])
        // Absolute addresses, as written in the report.
        #expect(frames.map { $0["address"] as? String } == thread.map { hex($0.runtime, width: 0) })
        #expect(frames.map { $0["kind"] as? String } == ["pc", "returnAddress", "returnAddress"])

        // Text view, stdin and gzip give the same report.
        let text = try h.stackline(["parse", path])
        #expect(text.status == 0)
        #expect(text.stdout.contains("format: apple-crash"))
        #expect(text.stdout.contains(hex(thread[0].runtime)))
        try runChecked("/usr/bin/gzip", ["-k", "-n", path])
        let gz = try Data(contentsOf: URL(fileURLWithPath: path + ".gz"))
        let fromStdin = try h.stackline(["parse", "--json", "-"], stdin: gz)
        #expect(fromStdin.status == 0, "\(fromStdin.stderr)")
        #expect(fromStdin.stdout == out.stdout)

        // Input it cannot parse: non-zero, with the parser's message.
        let noImages = String(decoding: crash, as: UTF8.self).components(separatedBy: "Binary Images:")[0]
        let bad = try h.write([Data(noImages.utf8), Data("{\"binary_images\": [{\"image_addr\": 1".utf8), Data("hello\n".utf8)], subdir: "bad")
        let refused = try bad.map { try h.stackline(["parse", $0]) }
        #expect(refused.allSatisfy { $0.status != 0 && $0.stdout.isEmpty })
        #expect(refused[0].stderr.contains("malformed apple-crash report: no \"Binary Images:\" section"), "\(refused[0].stderr)")
        #expect(refused[1].stderr.contains("invalid JSON at line 1"), "\(refused[1].stderr)")
        #expect(refused[2].stderr.contains("format not detected"), "\(refused[2].stderr)")
        #expect(try h.stackline(["parse", h.dir.file("missing")]).status != 0)
    }
}
