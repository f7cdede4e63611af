import Foundation
import TestSupport
import Testing

/// "Why is this frame not symbolicated?": one KSCrash report with one image of each symbol
/// status, processed by a real `stackline serve`, read back through the report page in headless
/// Chromium, `GET /api/v1/reports/{id}`, `stackline report --json` and its text, then in
/// aggregate on the symbols page and `GET /api/v1/symbols/missing`. Each expected status comes
/// from how the test made that image's debug file (`SymbolStatusPrograms`) and the reasons'
/// facts from readelf's ids and the architectures the test compiled for.
@Suite(.serialized) struct SymbolStatusEndToEndTests {
    static let artifacts = TestPaths.packageRoot + "/.build/test-artifacts/symbol-status"

    /// The images, in report order, with the status each must get and what its reason names.
    struct Planned {
        var name: String
        var id: String?
        var address: UInt64?
        var device: String?
        var status: String
        var reasonNames: [String]
    }

    static func plan(_ p: SymbolStatusPrograms) -> [Planned] {
        [
            Planned(name: p.lines.name, id: p.lines.buildID, address: p.lines.address, status: "ok", reasonNames: ["DWARF"]),
            Planned(name: p.symbols.name, id: p.symbols.buildID, address: p.symbols.address, status: "symbolTableOnly", reasonNames: ["no line tables"]),
            Planned(
                name: "libnotfound.so", id: SymbolStatusPrograms.notFoundID, address: 0x1100, status: "notFound",
                reasonNames: [SymbolStatusPrograms.notFoundID]),
            // The report's image is x86_64 (cpu_type 16777223); the stored file aarch64 (arm64).
            // The device ran the x86_64 build (`x86Twin`, its address); the store holds the aarch64 one.
            Planned(name: p.aarch64.name, id: p.aarch64.buildID, address: p.x86Twin.address, status: "wrongArchitecture", reasonNames: ["arm64", "x86_64"]),
            Planned(name: p.replaced.name, id: p.replaced.buildID, address: p.replaced.address, status: "unreadable", reasonNames: [p.replacement.buildID]),
            Planned(name: "libnoid.so", id: nil, address: 0x1100, status: "noIdentifier", reasonNames: ["no build id"]),
            Planned(
                name: "libdevice.so", id: SymbolStatusPrograms.deviceOnlyID, address: 0x1100, device: "device_named_func",
                status: "deviceSymbolsOnly", reasonNames: [SymbolStatusPrograms.deviceOnlyID]),
            Planned(name: "libunused.so", id: SymbolStatusPrograms.unusedID, address: nil, status: "unused", reasonNames: []),
        ]
    }

    static let load: UInt64 = 0x7f00_0000_0000

    /// KSCrash JSON: every image x86_64, 16 MiB apart; one thread per image a frame falls in.
    static func kscrash(_ plan: [Planned]) -> Data {
        var images: [String] = []
        var threads: [String] = []
        for (i, e) in plan.enumerated() {
            let base = load + UInt64(i) << 24
            let uuid = e.id.map { #""uuid": "\#($0.uppercased())", "# } ?? ""
            images.append(#"{"image_addr": \#(base), "image_size": 1048576, "name": "/opt/status/\#(e.name)", \#(uuid)"cpu_type": 16777223, "cpu_subtype": 3}"#)
            guard let address = e.address else { continue }
            let name = e.device.map { #", "symbol_name": "\#($0)", "symbol_addr": \#(base + address)"# } ?? ""
            threads.append(
                #"{"index": \#(threads.count), "crashed": \#(threads.isEmpty), "backtrace": {"contents": [{"instruction_addr": \#(base + address + 4)\#(name)}], "skipped": 0}}"#)
        }
        return Data("""
            {
              "report": {"version": "3.1.0", "id": "5A2B0160-69B6-4DC1-BFED-08A0554A67C9", "process_name": "statusdemo", "timestamp": 1764000000, "type": "standard"},
              "binary_images": [\(images.joined(separator: ",\n    "))],
              "system": {"CFBundleExecutable": "statusdemo", "CFBundleShortVersionString": "1.0", "cpu_arch": "x86_64", "system_name": "Linux"},
              "crash": {
                "error": {"signal": {"signal": 11, "name": "SIGSEGV"}, "address": 16, "type": "signal"},
                "threads": [\(threads.joined(separator: ",\n    "))]
              }
            }
            """.utf8)
    }

    /// `stackline-worker --store-name` names each `--symbols` store: one name per store, or none.
    @Test func theWorkerRefusesStoreNamesThatDoNotPairWithItsStores() throws {
        let out = try runProcess(TestPaths.worker, ["--symbols", "/nonexistent/a", "--store-name", "symbol store", "--store-name", "cache"], timeout: 60)
        #expect(out.status == 64, "\(out.summary)")
        #expect(out.stderr.contains("--store-name is given 2 times for 1 --symbols stores"), "\(out.stderr)")
    }

    /// A name given with `--store-name` is what the report says was searched: the master runs
    /// the worker through a wrapper that adds one for its one store.
    @Test func theWorkersStoreNameIsWhatTheReportSaysWasSearched() throws {
        let h = try Harness()
        let p = try SymbolStatusPrograms.build()
        let wrapper = h.dir.file("named-worker")
        try "#!/bin/sh\nexec \"\(TestPaths.worker)\" \"$@\" --store-name \"build farm store\"\n".write(toFile: wrapper, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: wrapper)
        h.extraEnvironment["STACKLINE_WORKER"] = wrapper
        let id = try #require(try h.submit(try h.write([Self.kscrash(Self.plan(p))], subdir: "named")).first)
        let master = try h.startMaster(["--workers", "1", "--once"])
        #expect(try master.waitForExit() == 0, "\(master.log.suffix(2000))")
        let entries = try #require(try reportJSON(h, id)["imageSymbols"] as? [[String: Any]])
        #expect(entries.count == 8)
        for i in [0, 1, 2, 3, 4] {
            #expect(entries[i]["status"] as? String == "notFound" && entries[i]["searched"] as? [String] == ["build farm store"], "\(entries[i])")
        }
    }

    @Test func aReportWithOneImageOfEachStatusShowsEachReasonInThePageJSONAndText() throws {
        let h = try Harness()
        let p = try SymbolStatusPrograms.build()
        let plan = Self.plan(p)
        for library in [p.lines, p.symbols, p.aarch64, p.replaced] {
            let added = try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, library.path])
            #expect(added.status == 0, "\(added.stderr)")
        }
        // The stored file of `replaced` is overwritten with another build's bytes, in the store's
        // .build-id layout (gdb's), as a copy gone wrong would leave it.
        let id = p.replaced.buildID
        let stored = "\(h.symbolsPath)/.build-id/\(id.prefix(2))/\(id.dropFirst(2)).debug"
        #expect(FileManager.default.fileExists(atPath: stored))
        try FileManager.default.removeItem(atPath: stored)
        try FileManager.default.copyItem(atPath: p.replacement.path, toPath: stored)

        let reportId = try #require(try h.submit(try h.write([Self.kscrash(plan)], subdir: "status")).first)
        let read = try h.token("read")
        let server = try h.startServer(["--workers", "1"])
        try h.waitUntil("the report symbolicated", timeout: 300) {
            try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state = 'done'") == 1
        }
        // What a symbol source said about the id not found, as the lead's fetcher records it.
        let source = "http://127.0.0.1:9/debuginfod"
        _ = try sqlite(h.dbPath, """
            INSERT INTO symbol_source_answers (build_id, source, outcome, detail, answered_at)
            VALUES ('\(SymbolStatusPrograms.notFoundID)', '\(source)', 'notFound', '404 for debuginfo and executable', 1764000000000)
            """)

        // The API and `report --json`: one entry per image, each with the planned status.
        let api = try server.curl("GET", "/api/v1/reports/\(reportId)", token: read)
        #expect(api.status == 200)
        let cli = try reportJSON(h, reportId)
        for (label, doc) in [("api", try #require(api.json)), ("report --json", cli)] {
            let entries = try #require(doc["imageSymbols"] as? [[String: Any]], "\(label): \(doc.keys.sorted())")
            #expect(entries.count == plan.count, "\(label)")
            for (i, e) in plan.enumerated() where i < entries.count {
                let entry = entries[i]
                // An unused entry is its index and status only (its name and id are in `images`).
                let unused = e.status == "unused"
                #expect(entry["image"] as? Int == i && entry["name"] as? String == (unused ? nil : e.name), "\(label) \(i)")
                #expect(entry["status"] as? String == e.status, "\(label) \(e.name): \(entry)")
                #expect(entry["buildId"] as? String == (unused ? nil : e.id), "\(label) \(e.name)")
                let detail = entry["detail"] as? String ?? ""
                for fact in e.reasonNames { #expect(detail.contains(fact), "\(label) \(e.name): \(detail) names \(fact)") }
                if e.status == "notFound" || e.status == "deviceSymbolsOnly" {
                    #expect(entry["searched"] as? [String] == ["symbol store"], "\(label) \(e.name)")
                    let sources = try #require(entry["sources"] as? [[String: Any]], "\(label) \(e.name): \(entry)")
                    if e.status == "notFound" {
                        let said = sources.map { "\($0["source"] as? String ?? "?") \($0["outcome"] as? String ?? "?")" }
                        #expect(said == ["\(source) notFound"], "\(label)")
                    } else {
                        #expect(sources.isEmpty, "no source was asked about \(e.name)")
                    }
                }
            }
        }

        // `stackline report` text: a line per image a frame falls in, with its status and reason.
        let text = try h.stackline(["report", "\(reportId)"])
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.stdout.split(separator: "\n").map(String.init)
        for e in plan where e.status != "unused" {
            let line = lines.first { $0.hasPrefix("  \(e.status) ") && $0.contains(e.name) }
            #expect(line != nil, "no line for \(e.name) as \(e.status) in:\n\(text.stdout)")
            for fact in e.reasonNames { #expect(line?.contains(fact) == true, "\(line ?? "")") }
        }
        #expect(text.stdout.contains("1 more unused"), "the unused image is counted, not listed")
        #expect(text.stdout.contains("source \(source): notFound"))

        // The report page in Chromium, and the symbols page.
        try? FileManager.default.removeItem(atPath: Self.artifacts)
        let pages = try WebViewEndToEndTests().load(
            server, token: read, ["report=/reports/\(reportId)", "symbols=/symbols"], in: h.dir.file("browser"), artifacts: Self.artifacts)
        let page = try #require(pages["report"])
        #expect(page.console.isEmpty, "\(page.console)")
        for (i, e) in plan.enumerated() {
            guard e.status != "unused" else {
                #expect(page.text("image:\(i)") == nil, "an unused image is not listed")
                continue
            }
            #expect(page.text("image:\(i):name") == e.name)
            #expect(page.text("image:\(i):status") == e.status, "\(e.name)")
            let detail = page.text("image:\(i):detail") ?? ""
            for fact in e.reasonNames { #expect(detail.contains(fact), "page \(e.name): \(detail)") }
        }
        #expect(page.text("images-unused")?.contains("1 image") == true)
        let upload = "stackline symbols upload --server \(server.baseURL)"
        for (i, e) in plan.enumerated() {
            let fix = page.text("image:\(i):fix") ?? ""
            switch e.status {
            case "notFound", "symbolTableOnly": #expect(fix.contains(upload), "\(e.name): \(fix)")
            case "wrongArchitecture", "unreadable": #expect(fix.contains("stackline symbols rm \(e.id ?? "")") && fix.contains(upload), "\(e.name): \(fix)")
            case "noIdentifier": #expect(fix.contains("build id"), "\(e.name): \(fix)")
            case "ok", "unused": #expect(fix.isEmpty, "\(e.name) needs no fix: \(fix)")
            default: break
            }
        }
        #expect(page.text("image:2:source:0")?.contains(source) == true)

        // In aggregate: what an upload fixes, with its status, the reports and groups it blocks.
        let missingAnswer = try server.curl("GET", "/api/v1/symbols/missing", token: read)
        let missing = try #require(try JSONSerialization.jsonObject(with: missingAnswer.body) as? [[String: Any]], "\(missingAnswer)")
        var byID: [String: [String: Any]] = [:]
        for m in missing { if let id = m["buildId"] as? String { byID[id] = m } }
        let fixable = plan.filter { ["notFound", "wrongArchitecture", "unreadable", "deviceSymbolsOnly", "symbolTableOnly"].contains($0.status) }
        #expect(Set(byID.keys) == Set(fixable.compactMap(\.id)), "\(missing)")
        let symbolsPage = try #require(pages["symbols"])
        for e in fixable {
            let id = try #require(e.id)
            // A device-named image still lacks its file: listed as not found.
            let status = e.status == "deviceSymbolsOnly" ? "notFound" : e.status
            #expect(byID[id]?["status"] as? String == status, "\(e.name)")
            #expect(byID[id]?["reportCount"] as? Int == 1 && byID[id]?["groupCount"] as? Int == 1, "\(byID[id] ?? [:])")
            #expect(symbolsPage.text("missing-status:\(id)") == status, "\(e.name)")
            #expect(symbolsPage.text("missing-count:\(id)") == "1" && symbolsPage.text("missing-groups:\(id)") == "1")
        }
        let notFound = try #require(byID[SymbolStatusPrograms.notFoundID]?["sources"] as? [[String: Any]])
        #expect(notFound.map { "\($0["source"] as? String ?? "?") \($0["outcome"] as? String ?? "?")" } == ["\(source) notFound"])
        #expect(symbolsPage.text("missing-source:\(SymbolStatusPrograms.notFoundID):0")?.contains(source) == true)
        #expect((byID[p.replaced.buildID]?["detail"] as? String)?.contains(p.replacement.buildID) == true)
        // `stackline symbols missing`: a row per id with its status, and why a stored file is not used.
        let table = try h.stackline(["symbols", "missing", "--symbols", h.symbolsPath])
        #expect(table.status == 0, "\(table.summary)")
        let rows = table.stdout.split(separator: "\n").map(String.init)
        for e in fixable {
            let status = e.status == "deviceSymbolsOnly" ? "notFound" : e.status
            #expect(rows.contains { $0.hasPrefix(e.id ?? "?") && $0.contains(" \(status) ") }, "\(e.name) \(status) in:\n\(table.stdout)")
        }
        #expect(rows.contains { $0.hasPrefix(SymbolStatusPrograms.notFoundID) && $0.contains("\(source): notFound") })
        #expect(rows.contains { $0.hasPrefix("\(p.replaced.buildID): unreadable: ") && $0.contains(p.replacement.buildID) })

        // The fixes as the page prints them, with this test's files: `symbols rm` where the stored
        // file cannot be used, then `symbols upload` of the right file, the file with line
        // tables, and the file not found. The uploads requeue the report; the same serve and its
        // worker reprocess it, and the five images come out ok.
        for id in [p.aarch64.buildID, p.replaced.buildID] {
            let removed = try h.stackline(["symbols", "rm", "--symbols", h.symbolsPath, id])
            #expect(removed.status == 0, "\(removed.summary)")
        }
        let symbolsToken = try h.token("symbols")
        for path in [p.unstripped, p.x86Twin.path, p.replaced.path, p.notFound.path] {
            let uploaded = try runProcess(
                TestPaths.stackline, ["symbols", "upload", "--server", server.baseURL, path], environment: ["STACKLINE_TOKEN": symbolsToken],
                timeout: 300)
            #expect(uploaded.status == 0, "\(uploaded.summary)")
        }
        var statuses: [String] = []
        try h.waitUntil("the report reprocessed with the fixed files", timeout: 300) {
            let doc = try reportJSON(h, reportId)
            statuses = (doc["imageSymbols"] as? [[String: Any]] ?? []).map { $0["status"] as? String ?? "?" }
            return Array(statuses.prefix(5)) == ["ok", "ok", "ok", "ok", "ok"]
        }
        #expect(statuses.suffix(3) == ["noIdentifier", "deviceSymbolsOnly", "unused"])
        let after = try server.curl("GET", "/api/v1/symbols/missing", token: read)
        let left = (try JSONSerialization.jsonObject(with: after.body) as? [[String: Any]] ?? []).compactMap { $0["buildId"] as? String }
        #expect(left == [SymbolStatusPrograms.deviceOnlyID], "\(after)")
    }
}
