import Foundation
import Storage
import ReportModel
import TestSupport
import Testing

/// Apple reports through the real binaries: the arm64 slice of the committed `Sample` dSYM in the
/// store, a system library that is not, and the answers checked against llvm-symbolizer on that
/// slice. What the report itself says (device symbols, the message) is written into it here.
@Suite(.serialized) struct AppleFidelityEndToEndTests {
    static let message = "Sample/main.swift:3: Fatal error: Index out of range"
    /// A system library the store never holds: its frame keeps the device's name.
    static let kernelUUID = "b889807954243e8992b033022c3be1bb"
    static let kernelLoad: UInt64 = 0x1_9cc3_e000
    static let pthreadKillOffset: UInt64 = 0x9224

    /// The Sample arm64 slice, loaded at a random 16 KiB-aligned slide, stored in `h`'s store.
    func sampleProgram(_ h: Harness) throws -> FixtureProgram {
        let added = try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, MachOFixtures.dSYM])
        #expect(added.status == 0, "\(added.stderr)")
        let vmaddr = try MachOFixtures.textVMAddress(MachOFixtures.dSYMDWARF, arch: "arm64")
        return FixtureProgram(
            name: "Sample", path: MachOFixtures.dSYMDWARF, buildID: try #require(try MachOFixtures.uuids(MachOFixtures.dSYMDWARF)["arm64"]),
            preferredBase: vmaddr, loadAddress: vmaddr + (UInt64.random(in: 1...0x1_0000) << 14), arch: "arm64", fatSlice: true)
    }

    func symbolicated(_ h: Harness, _ id: Int64) throws -> SymbolicatedReport {
        let out = try h.stackline(["report", "\(id)", "--format", "json"])
        #expect(out.status == 0, "\(out.stderr)")
        return try JSONDecoder().decode(SymbolicatedReport.self, from: Data(out.stdout.utf8))
    }

    /// Stackline's inline levels of raw frame `index`, as llvm-symbolizer prints them.
    func levels(_ frames: [SymbolicatedFrame], index: Int) -> [Level] {
        frames.filter { $0.index == index }.map { Level(function: $0.function, file: $0.file, line: $0.line ?? 0) }
    }

    func crashText(_ p: FixtureProgram, _ frames: [PlannedFrame]) -> String {
        var lines = [
            "Incident Identifier: 5C32DF84-31A0-43E7-87D0-239F7F594940",
            "Hardware Model:      iPhone14,2",
            "Process:             Sample [4242]",
            "Path:                /private/var/containers/Bundle/Application/X/Sample.app/Sample",
            "Identifier:          com.example.sample",
            "Version:             1.0 (7)",
            "Code Type:           ARM-64 (Native)",
            "OS Version:          iPhone OS 16.0 (20A362)",
            "",
            "Exception Type:  EXC_CRASH (SIGABRT)",
            "Exception Codes: 0x0000000000000000, 0x0000000000000000",
            "Triggered by Thread:  0",
            "",
            "Application Specific Information:",
            Self.message,
            "",
            "Thread 0 name:  Dispatch queue: com.apple.main-thread",
            "Thread 0 Crashed:",
            "0   libsystem_kernel.dylib        \t\(hex(Self.kernelLoad + Self.pthreadKillOffset)) __pthread_kill + 8",
        ]
        for (i, f) in frames.enumerated() {
            lines.append(ReportBuilder.appleFrameLine(i + 1, f))
        }
        lines += [
            "", "Binary Images:",
            "\(hex(p.loadAddress, width: 0)) - \(hex(p.loadAddress + 0xfffff, width: 0)) Sample arm64  <\(p.buildID)> /private/var/containers/Bundle/Application/X/Sample.app/Sample",
            "\(hex(Self.kernelLoad, width: 0)) - \(hex(Self.kernelLoad + 0x3ffff, width: 0)) libsystem_kernel.dylib arm64e  <\(Self.kernelUUID)> /usr/lib/system/libsystem_kernel.dylib",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    func ipsText(_ p: FixtureProgram, _ frames: [PlannedFrame]) -> String {
        let header = #"{"app_name":"Sample","timestamp":"2024-05-01 10:00:00.00 +0000","app_version":"1.0","build_version":"7","bug_type":"309","os_version":"iPhone OS 16.0 (20A362)","name":"Sample"}"#
        let frameJSON = [#"{"imageOffset":\#(Self.pthreadKillOffset),"symbol":"__pthread_kill","symbolLocation":8,"imageIndex":1}"#]
            + frames.map { #"{"imageIndex":0,"imageOffset":\#($0.fileAddress - p.preferredBase)}"# }
        return header + "\n" + """
            {
              "procName" : "Sample",
              "procPath" : "/private/var/containers/Bundle/Application/X/Sample.app/Sample",
              "cpuType" : "ARM-64",
              "osVersion" : {"train" : "iPhone OS 16.0", "build" : "20A362", "releaseType" : "User"},
              "bundleInfo" : {"CFBundleShortVersionString":"1.0","CFBundleVersion":"7"},
              "exception" : {"codes":"0x0000000000000000, 0x0000000000000000","type":"EXC_CRASH","signal":"SIGABRT"},
              "asi" : {"libswiftCore.dylib":["\(Self.message)"]},
              "faultingThread" : 0,
              "threads" : [{"triggered":true,"queue":"com.apple.main-thread","frames":[\(frameJSON.joined(separator: ","))]}],
              "usedImages" : [
                {"arch":"arm64","base":\(p.loadAddress),"size":1048576,"uuid":"\(p.buildID)","path":"/private/var/containers/Bundle/Application/X/Sample.app/Sample","name":"Sample"},
                {"arch":"arm64e","base":\(Self.kernelLoad),"size":262144,"uuid":"\(Self.kernelUUID)","path":"/usr/lib/system/libsystem_kernel.dylib","name":"libsystem_kernel.dylib"}
              ]
            }

            """
    }

    /// The same crash as `.crash` and as `.ips`: the same frames (the device's name where no debug
    /// file answers, llvm-symbolizer's where the dSYM does), the same message, app, arch and OS,
    /// and one group whose title carries the message.
    @Test func crashAndIPSTwinsAgree() throws {
        let h = try Harness()
        let p = try sampleProgram(h)
        let planned = try plannedThread([p], count: 4).map { f in
            PlannedFrame(program: f.program, fileAddress: f.fileAddress, kind: .returnAddress)
        }
        let paths = try h.write([Data(crashText(p, planned).utf8), Data(ipsText(p, planned).utf8)])
        let ids = try h.submit(paths)
        #expect(ids.count == 2)
        let master = try h.startMaster(["--workers", "1", "--once"])
        #expect(try master.waitForExit() == 0)

        var fingerprints: [String?] = []
        for id in ids {
            let report = try symbolicated(h, id)
            #expect(report.app?.name == "Sample")
            #expect(report.arch?.cpu == .arm64)
            #expect(report.os == "iPhone OS 16.0 (20A362)")
            #expect(report.exception?.message == Self.message)
            let thread = try #require(report.threads.first { $0.crashed })
            // Frame 0: no debug file for libsystem_kernel, so the device's name stays.
            let top = try #require(thread.frames.first { $0.index == 0 })
            #expect(top.status == .deviceSymbol)
            #expect(top.function == "__pthread_kill" && top.offset == 8)
            #expect(top.address.value == Self.kernelLoad + Self.pthreadKillOffset)
            // Frames 1…: the dSYM wins, as llvm-symbolizer reads it.
            for (i, f) in planned.enumerated() {
                let oracle = try llvmSymbolizer(p.oracleObject, [f.lookup])[0]
                #expect(levels(thread.frames, index: i + 1) == oracle, "report \(id) frame \(i + 1)")
                #expect(thread.frames.filter { $0.index == i + 1 }.allSatisfy { $0.status == .symbolicated && $0.address.value == f.runtime })
            }
            fingerprints.append(try h.database().result(reportId: id)?.fingerprint)
        }
        #expect(fingerprints[0] != nil && fingerprints[0] == fingerprints[1], "one group for both forms")
        let groups = try h.database().groups(GroupFilter())
        #expect(groups.count == 1)
        #expect(groups.first?.count == 2)
        #expect(groups.first?.title.hasPrefix(Self.message + " in ") == true, "\(groups.first?.title ?? "no group")")
        #expect(groups.first?.app == "Sample")
    }

    /// A MetricKit payload with a crash, a hang and a CPU exception, through `stackline submit
    /// --wait`: the crash and the hang are stored and grouped, the CPU exception is refused by name.
    @Test func metricKitCrashAndHangEndToEnd() throws {
        let h = try Harness()
        let p = try sampleProgram(h)
        let uuid = try #require(UUID(uuidString: {
            let x = Array(p.buildID)
            return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(x[$0]) }.joined(separator: "-")
        }()))
        let addresses = try candidateAddresses(p, count: 8)
        func frame(_ fileAddress: UInt64, samples: Int, sub: [String] = []) -> String {
            let subFrames = sub.isEmpty ? "" : #", "subFrames": [\#(sub.joined(separator: ", "))]"#
            return #"{"binaryUUID": "\#(uuid.uuidString)", "binaryName": "Sample", "offsetIntoBinaryTextSegment": \#(fileAddress - p.preferredBase), "sampleCount": \#(samples)\#(subFrames)}"#
        }
        // Crash: the root is the top of the stack, each subFrames its caller.
        let crashFrames = Array(addresses[0..<4])
        var chain = frame(crashFrames[3], samples: 1)
        for address in crashFrames[0..<3].reversed() { chain = frame(address, samples: 1, sub: [chain]) }
        // Hang: the root is the outermost frame. A(10) → B(8) → C(6); A → D(2).
        let (a, b, c, d) = (addresses[4], addresses[5], addresses[6], addresses[7])
        let tree = frame(a, samples: 10, sub: [frame(b, samples: 8, sub: [frame(c, samples: 6)]), frame(d, samples: 2)])
        let reason = "*** -[__NSArrayI objectAtIndex:]: index 10 beyond bounds [0 .. 3]"
        let meta = #""appVersion": "3.1", "appBuildVersion": "9", "bundleIdentifier": "com.example.sample", "osVersion": "iPhone OS 17.2 (21C62)", "platformArchitecture": "arm64e""#
        let payload = """
            {
              "timeStampBegin": "2024-05-01 10:00:00 +0000", "timeStampEnd": "2024-05-02 10:00:00 +0000",
              "crashDiagnostics": [{"version": "1.0.0",
                "callStackTree": {"callStackPerThread": true, "callStacks": [{"threadAttributed": true, "callStackRootFrames": [\(chain)]}]},
                "diagnosticMetaData": {\(meta), "exceptionType": 10, "signal": 6, "exceptionCode": 0, "terminationReason": "Namespace SIGNAL, Code 6 Abort trap: 6",
                  "exceptionReason": {"composedMessage": "\(reason)", "exceptionName": "NSRangeException", "className": "NSException"}}}],
              "hangDiagnostics": [{"version": "1.0.0",
                "callStackTree": {"callStackPerThread": true, "callStacks": [{"threadAttributed": true, "callStackRootFrames": [\(tree)]}]},
                "diagnosticMetaData": {\(meta), "hangDuration": "2 sec"}}],
              "cpuExceptionDiagnostics": [{"version": "1.0.0",
                "callStackTree": {"callStackPerThread": false, "callStacks": [{"callStackRootFrames": [\(frame(a, samples: 20))]}]},
                "diagnosticMetaData": {\(meta), "totalCPUTime": "20 sec", "totalSampledTime": "20 sec"}}]
            }
            """
        let path = try h.write([Data(payload.utf8)])[0]
        let master = try h.startMaster(["--workers", "1"])
        let out = try h.stackline(["submit", "--wait", "--json", path])
        master.signal(SIGTERM)
        _ = try master.waitForExit()
        #expect(out.status != 0, "one part is refused, so submit says so")
        #expect(out.stderr.contains("#3") && out.stderr.contains("CPU exception diagnostic"), "\(out.stderr)")
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [[String: Any]])
        let ids = entries.compactMap { $0["reportId"] as? Int }.map(Int64.init)
        #expect(ids.count == 2)

        // The crash: frames as llvm-symbolizer reads the slice, at load + offset.
        let crash = try symbolicated(h, try #require(ids.first))
        #expect(crash.kind == .crash)
        #expect(crash.exception?.type == "EXC_CRASH" && crash.exception?.signal == "SIGABRT")
        #expect(crash.exception?.message?.split(separator: "\n").first.map(String.init) == "NSRangeException: \(reason)")
        let thread = try #require(crash.threads.first { $0.crashed })
        let image = try #require(crash.images.first { $0.name == "Sample" })
        for (i, fileAddress) in crashFrames.enumerated() {
            let lookup = i == 0 ? fileAddress : fileAddress - 1
            #expect(levels(thread.frames, index: i) == (try llvmSymbolizer(p.oracleObject, [lookup])[0]), "crash frame \(i)")
            #expect(thread.frames.first { $0.index == i }?.address.value == image.loadAddress.value + fileAddress - p.preferredBase)
        }

        // The hang: the tree is the profile; the lag key is the rule's key node, B (see docs/grouping.md):
        // B costs 8 > 10 × 1.1 / 2 and > 10 × 0.2; C costs 6, not > 8 × 1.1; D costs 2, not > 5.5.
        let hang = try symbolicated(h, ids[1])
        #expect(hang.kind == .lag)
        #expect(hang.lag?.profile.map(\.node.depth) == [0, 1, 2, 1])
        #expect(hang.lag?.profile.map(\.node.count) == [10, 8, 6, 2])
        let keyFunction = try #require(try llvmSymbolizer(p.oracleObject, [b])[0].first?.function)

        let db = try h.database()
        let groups = try db.groups(GroupFilter())
        #expect(groups.count == 2)
        let crashGroup = try #require(groups.first { $0.kind == .crash })
        #expect(crashGroup.title.hasPrefix("NSRangeException: \(reason) in "), "\(crashGroup.title)")
        #expect(crashGroup.app == "com.example.sample")
        let hangGroup = try #require(groups.first { $0.kind == .lag })
        #expect(hangGroup.title.hasPrefix("Hang in \(keyFunction)"), "\(hangGroup.title)")
    }
}
