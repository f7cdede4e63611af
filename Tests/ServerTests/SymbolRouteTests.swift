import Foundation
import TestSupport
import Testing

@testable import Server

extension ServerRouteTests {
    /// `POST /api/v1/symbols` and the debuginfod routes in process, over a real store directory.
    /// What was stored is read from the store's files; the program, its ids and its split files
    /// come from gcc, objcopy, strip and readelf (`SplitProgram`).
    @Suite struct SymbolRouteTests {
        func files(_ answer: RouteAnswer) -> [[String: Any]] { answer.json?["files"] as? [[String: Any]] ?? [] }

        /// Nothing of an upload stays behind in the store's `.incoming` folder.
        func incomingIsEmpty(_ store: String) -> Bool {
            ((try? FileManager.default.contentsOfDirectory(atPath: store + "/.incoming")) ?? []).isEmpty
        }

        @Test func refusalsAreAnswersAndLeaveNothingBehind() async throws {
            let h = try RouteHarness()
            let token = try h.token(.symbols)
            let read = try h.token(.read)
            let ingest = try h.token(.ingest)
            let program = try SplitProgram(in: h.root + "/build")
            // A tar with a symbolic link: refused whole, as `symbols add` refuses it.
            let tar = h.root + "/hostile.tar"
            let script = """
                import io, sys, tarfile
                with tarfile.open(sys.argv[1], "w") as t:
                    data = open(sys.argv[2], "rb").read()
                    info = tarfile.TarInfo("good.debug"); info.size = len(data); t.addfile(info, io.BytesIO(data))
                    link = tarfile.TarInfo("evil.debug"); link.type = tarfile.SYMTYPE; link.linkname = "/etc/passwd"; t.addfile(link)
                """
            try runChecked("python3", ["-c", script, tar, program.debugFile])
            let hostileBody = try Data(contentsOf: URL(fileURLWithPath: tar))
            let debug = try Data(contentsOf: URL(fileURLWithPath: program.debugFile))
            let store = h.store.root
            try await h.withRouter { client in
                let hostile = try await client.send(.post, "/api/v1/symbols?name=../../hostile.tar", token: token, body: hostileBody)
                #expect(hostile.status == 200, "\(hostile)")
                let refused = try #require(files(hostile).first)
                #expect(refused["outcome"] as? String == "refused")
                #expect(
                    (refused["error"] as? String)?.contains("hostile.tar: cannot unpack archive: entry 'evil.debug' is a symbolic link") == true,
                    "\(refused)")
                #expect(storedBuildIDs(store).isEmpty)

                // Not a debug file; an empty body.
                let text = try await client.send(.post, "/api/v1/symbols?name=notes.txt", token: token, body: Data("hello\n".utf8))
                #expect((files(text).first?["error"] as? String)?.contains("notes.txt: not a debug file") == true, "\(text)")
                let empty = try await client.send(.post, "/api/v1/symbols", token: token, body: Data())
                #expect(empty.status == 400)
                #expect(empty.error != nil, "\(empty)")

                // Tokens: none (401), the wrong scope (403).
                #expect(try await client.send(.post, "/api/v1/symbols", body: debug).status == 401)
                #expect(try await client.send(.post, "/api/v1/symbols", token: read, body: debug).status == 403)
                #expect(try await client.send(.post, "/api/v1/symbols/missing", token: ingest, body: Data("[]".utf8)).status == 403)
                #expect(storedBuildIDs(store).isEmpty)
                #expect(incomingIsEmpty(store))
            }
        }

        @Test func debuginfodAnswersStatusCodesRangesAndHeaders() async throws {
            let h = try RouteHarness()
            let program = try SplitProgram(in: h.root + "/build")
            let other = try SplitProgram(in: h.root + "/other")
            #expect(other.buildID != program.buildID)
            for path in [program.debugFile, program.stripped, other.debugFile] {
                #expect(h.store.addTree(path: path).allSatisfy { (try? $0.result.get()) != nil }, "\(path)")
            }
            let read = try h.token(.read)
            let symbols = try h.token(.symbols)
            let id = program.buildID
            let whole = try #require(FileManager.default.contents(atPath: program.debugFile))
            let strippedSize = try #require(FileManager.default.attributesOfItem(atPath: program.stripped)[.size] as? Int)
            try await h.withRouter { client in
                let get = try await client.send(.get, "/buildid/\(id)/debuginfo", token: read)
                #expect(get.status == 200 && get.body == whole, "\(get.status)")
                #expect(get.headers[.contentLength] == "\(whole.count)")
                #expect(get.headers[.init("X-Debuginfod-Size")!] == "\(whole.count)")
                #expect(get.headers[.init("X-Debuginfod-File")!] == ".build-id/\(id.prefix(2))/\(id.dropFirst(2)).debug")
                #expect(get.headers[.acceptRanges] == "bytes")

                // HEAD: the GET's headers, no byte of the file.
                let head = try await client.send(.head, "/buildid/\(id)/executable", token: read)
                #expect(head.status == 200 && head.body.isEmpty, "\(head)")
                #expect(head.headers[.contentLength] == "\(strippedSize)")

                // Ranges (RFC 9110 §14), checked against slices of the file read here.
                let part = try await client.send(.get, "/buildid/\(id)/debuginfo", token: read, headers: ["Range": "bytes=16-1039"])
                #expect(part.status == 206 && part.body == whole[16...1039], "\(part.status)")
                #expect(part.headers[.contentRange] == "bytes 16-1039/\(whole.count)")
                #expect(part.headers[.contentLength] == "1024")
                let tail = try await client.send(.get, "/buildid/\(id)/debuginfo", token: read, headers: ["Range": "bytes=-100"])
                #expect(tail.status == 206 && tail.body == whole.suffix(100))
                let open = try await client.send(.get, "/buildid/\(id)/debuginfo", token: read, headers: ["Range": "bytes=\(whole.count - 10)-"])
                #expect(open.status == 206 && open.body == whole.suffix(10))
                let past = try await client.send(.get, "/buildid/\(id)/debuginfo", token: read, headers: ["Range": "bytes=\(whole.count)-"])
                #expect(past.status == 416 && past.headers[.contentRange] == "bytes */\(whole.count)", "\(past)")
                let several = try await client.send(.get, "/buildid/\(id)/debuginfo", token: read, headers: ["Range": "bytes=0-1,5-6"])
                #expect(several.status == 200 && several.body == whole, "several ranges: the whole file instead")

                // Ids: lowercase hex only (400), unknown (404); the executable role of a debug-only id (404).
                for bad in [id.uppercased(), "xyz" + id.dropFirst(3), String(id.dropLast()), "ab"] {
                    let answer = try await client.send(.get, "/buildid/\(bad)/debuginfo", token: read)
                    #expect(answer.status == 400, "\(bad): \(answer)")
                    #expect(answer.error != nil, "\(bad): \(answer)")
                }
                let unknown = try await client.send(.get, "/buildid/\(String(repeating: "ab", count: 20))/debuginfo", token: read)
                #expect(unknown.status == 404, "\(unknown)")
                let noImage = try await client.send(.get, "/buildid/\(other.buildID)/executable", token: read)
                #expect(noImage.status == 404, "\(noImage)")

                // Tokens: none (401), the wrong scope (403).
                #expect(try await client.send(.get, "/buildid/\(id)/debuginfo").status == 401)
                #expect(try await client.send(.get, "/buildid/\(id)/debuginfo", token: symbols).status == 403)
            }
        }
    }
}
