import Foundation
import TestSupport
import Testing

/// Handlers and middleware run on Swift's cooperative pool; blocking work goes through one
/// thread pool (`deps.blocking.run`, or the `BlockingWork` a middleware or `WebSession` was
/// built with: `Sources/Server/BlockingWork.swift`). Checked from the source text of every file
/// of the Server module: every SQLite, disk, inflate or parse call must sit inside the braces of
/// a `blocking.run` closure. Those are the calls through the collaborators that reach the
/// database or the disk (`db`, `queries`, `tokens`, `store`, `writer`, `intake`, the remote
/// `pool`, an upload's `incoming` file, a `served` file, `batches`; the clock's `now()` and the
/// writer's `commit`, which waits on its own thread, aside), and the blocking functions
/// (`Zlib.inflate…`, `JSONDecoder`, `Framing.unbundle`, `ReportPrinter`, `OneShotWorker`,
/// `ElfFile(`, `SDKConfiguration(`, `FileManager`). Comments and string literals do not count.
@Suite struct BlockingWorkTests {
    /// The real collaborators (`Sources/Server/Collaborators`): the blocking work itself, which
    /// runs on whatever thread calls it. Not handler code, so not scanned; the test below checks
    /// that no route or middleware hides there.
    static let collaborators = "Collaborators/"

    /// Every Swift file of the Server module but the collaborators: routes, middleware, the
    /// session, the body reader, the dependencies.
    static func checkedFiles() throws -> [String] {
        try serverFiles().filter { !$0.hasPrefix("Sources/Server/" + collaborators) }
    }

    static func serverFiles() throws -> [String] {
        let root = "Sources/Server"
        let all = FileManager.default.enumerator(atPath: packageRoot + "/" + root)?.compactMap { $0 as? String } ?? []
        return all.filter { $0.hasSuffix(".swift") }.sorted().map { root + "/" + $0 }
    }

    @Test func serverMakesBlockingCallsOnlyOnTheBlockingPool() throws {
        let files = try Self.checkedFiles()
        // The walk reaches the subfolder and the files outside Routes (a wrong root would pass empty).
        for expected in ["Routes/WebRoutes.swift", "Authentication.swift", "WebSession.swift", "BodyReader.swift", "ServerDependencies.swift"] {
            #expect(files.contains("Sources/Server/" + expected), "not checked: \(expected)")
        }
        var found: [String] = []
        for path in files {
            let text = try String(contentsOfFile: packageRoot + "/" + path, encoding: .utf8)
            found += BlockingCallScanner.callsOutsidePool(in: text).map { "\(path):\($0.line): \($0.call)" }
        }
        #expect(found == [], "blocking calls outside blocking.run:\n\(found.joined(separator: "\n"))")
    }

    /// The unscanned folder holds collaborators only: no route is registered and no middleware
    /// or handler is written there.
    @Test func theCollaboratorsFolderHoldsNoHandler() throws {
        let files = try Self.serverFiles().filter { $0.hasPrefix("Sources/Server/" + Self.collaborators) }
        #expect(!files.isEmpty)
        for path in files {
            let code = BlockingCallScanner.blankingCommentsAndStrings(try String(contentsOfFile: packageRoot + "/" + path, encoding: .utf8))
            for handler in [#"\bRouter\b"#, #"\bRouterMiddleware\b"#, #"\bRequest\b"#, #"\.(?:get|post|put|delete|head)\s*\("#] {
                #expect(BlockingCallScanner.matches(of: handler, in: code).isEmpty, "\(path) holds handler code (\(handler))")
            }
        }
    }

    /// The scanner on text made here: it flags what is outside the closure, and only that.
    @Test func theScannerFlagsCallsOutsideThePoolOnly() {
        let source = #"""
            router.get("/a") { _, _ in
                let n = try deps.db.count()            // line 2: outside
                let m = try await deps.blocking.run {
                    try deps.db.count() + (try? Zlib.inflate(x)).map { $0.count }!   // inside
                }
                // deps.db.count() in a comment, and in a string: "{ deps.db.count() }"
                let t = deps.db.now() + tokens.db.now()   // the clock
                let d = try Zlib.inflateUntrusted(body, limit: 1)   // line 8: outside
                let r = try await blocking.run({ [d] in try db.result(reportId: 1) })
                return try db.groups(filter)           // line 10: outside
            }
            let session = WebSession(tokens: deps.db.tokens, blocking: deps.blocking)   // a value, no call
            let row = try tokens.stored(id: id)        // line 13: outside
            try db.pool.read { db in 1 }               // line 14: a trailing closure is a call
            let old = try await Offload.run { try db.report(id: 1) }   // line 15: not the pool's name
            let late = try await blocking.run(work); if x { try db.report(id: 2) }   // line 16: no closure there
            let r = try await BodyReader.readReport(request, limit: db.limit()) { body in try deps.writer.intake.prepare(body) }   // 17: the argument
            let s = try await deps.ingestRequest(request, context: context) { token, body in try batches.ingest(body, tokenNamespace: nil) }
            """#
        let calls = BlockingCallScanner.callsOutsidePool(in: source)
        #expect(calls.map(\.line) == [2, 8, 10, 13, 14, 15, 16, 17])
        #expect(calls.map(\.call) == ["db.", "Zlib.inflate", "db.", "tokens.", "db.", "db.", "db.", "db."])
    }

    /// The collaborators and the parse, disk and render functions, each once outside and once
    /// inside the pool: only the outside ones are flagged, and the writer's `commit` never.
    @Test func theScannerKnowsEveryKindOfBlockingCall() {
        let source = #"""
            let a = try deps.queries.groups(filter)                            // 1
            let b = try deps.store.open(id, role: .debugInfo)                  // 2
            let c = try deps.writer.intake.prepare(body, compressed: nil)      // 3
            let d = try JSONDecoder().decode(Hello.self, from: body)           // 4
            let e = try Framing.unbundle(body)                                 // 5
            let f = try ReportPrinter.document(report, group: nil)             // 6
            let g = OneShotWorker.symbolicate(raw: data)                       // 7
            let h = try ElfFile(file: file)                                    // 8
            let i = try SDKConfiguration(storedJSON: text)                     // 9
            let j = FileManager.default.fileExists(atPath: root)              // 10
            let k = try pool.claim(workerId: id, claim)                        // 11
            try incoming.append(bytes)                                         // 12
            let l = try served.read(at: 0, count: 1)                           // 13
            let m = try batches.ingest(body, tokenNamespace: nil)              // 14
            let n = try deps.writer.intake.parser.parse(body)                  // 15
            let outcomes = try await deps.writer.commit(prepared)              // 16: its own thread
            let now = deps.clock.now()                                         // 17: the clock
            let o = try await deps.blocking.run {
                _ = try deps.queries.groups(filter); _ = try deps.store.open(id, role: .debugInfo)
                _ = try deps.writer.intake.prepare(body, compressed: nil); _ = try JSONDecoder().decode(Hello.self, from: body)
                _ = try Framing.unbundle(body); _ = try ReportPrinter.document(report, group: nil); _ = OneShotWorker.symbolicate(raw: data)
                _ = try ElfFile(file: file); _ = try SDKConfiguration(storedJSON: text); _ = FileManager.default.fileExists(atPath: root)
                _ = try pool.claim(workerId: id, claim); try incoming.append(bytes); _ = try served.read(at: 0, count: 1)
                _ = try batches.ingest(body, tokenNamespace: nil); _ = try deps.writer.intake.parser.parse(body)
            }
            """#
        let calls = BlockingCallScanner.callsOutsidePool(in: source)
        #expect(calls.map(\.line) == Array(1...15))
        #expect(calls.map(\.call) == [
            "queries.", "store.", "writer.", "JSONDecoder", "Framing.unbundle", "ReportPrinter.", "OneShotWorker.", "ElfFile(",
            "SDKConfiguration(", "FileManager.", "pool.", "incoming.", "served.", "batches.", "writer.",
        ])
    }
}

/// A lexical check, deliberately small: it blanks comments and string literals, finds the
/// brace-delimited closures written right after `blocking.run` (`blocking.run {` or
/// `blocking.run({`), and reports the database, token-store and inflate calls outside all of them.
enum BlockingCallScanner {
    struct Call: Equatable {
        var line: Int
        var call: String
    }

    /// A call (parentheses or a trailing closure) reached from `receiver` through any chain of
    /// members, unless the member called is `now` (the clock reads no row) or one of `allowed`.
    /// A receiver is a name of its own (`deps.store.`, not `deps.storeRoot.` nor `x.restore.`).
    static func call(on receiver: String, allowed: [String] = []) -> String {
        let exempt = (["now"] + allowed).map { $0 + #"\s*\("# }.joined(separator: "|")
        return #"(?<![\w])"# + receiver + #"(?:\??\.[A-Za-z_]\w*)*?\??\.(?!(?:"# + exempt + #"))[A-Za-z_]\w*\s*[({]"#
    }

    static let blocking: [(pattern: String, name: String)] =
        ["db", "queries", "tokens", "store", "intake", "pool", "incoming", "served", "batches"].map { (call(on: $0), $0 + ".") }
        + [
            // `commit` awaits the group-commit writer's own thread.
            (call(on: "writer", allowed: ["commit"]), "writer."),
            (#"\bZlib\.inflate"#, "Zlib.inflate"), (#"\bJSONDecoder\b"#, "JSONDecoder"), (#"\bFraming\.unbundle"#, "Framing.unbundle"),
            (#"\bReportPrinter\."#, "ReportPrinter."), (#"\bOneShotWorker\."#, "OneShotWorker."), (#"\bElfFile\s*\("#, "ElfFile("),
            (#"\bSDKConfiguration\s*\("#, "SDKConfiguration("), (#"\bFileManager\."#, "FileManager."),
        ]

    static func callsOutsidePool(in source: String) -> [Call] {
        let code = Array(blankingCommentsAndStrings(source).utf8)
        let text = String(decoding: code, as: UTF8.self)
        var regions: [Range<Int>] = []
        /// The index of the bracket closing the one at `open`.
        func closing(_ open: Int, _ left: UInt8, _ right: UInt8) -> Int? {
            var depth = 0
            for i in open..<code.count {
                if code[i] == left { depth += 1 }
                if code[i] == right {
                    depth -= 1
                    if depth == 0 { return i }
                }
            }
            return nil
        }
        func skipSpaces(_ i: Int) -> Int {
            var i = i
            while i < code.count, code[i] == 32 || code[i] == 10 || code[i] == 9 { i += 1 }
            return i
        }
        // The closures given to the pool: `blocking.run`'s, and the trailing `then` closure of
        // `BodyReader.readReport` and `ingestRequest`, which run it inside their own `blocking.run`.
        // Only closures count: the arguments in parentheses are evaluated by the caller.
        for match in matches(of: #"(?:\bblocking\.run|\breadReport|\bingestRequest)(?=\s*[({])"#, in: text) {
            var i = skipSpaces(match.upperBound)
            if code[i] == UInt8(ascii: "(") {
                guard let end = closing(i, UInt8(ascii: "("), UInt8(ascii: ")")) else { continue }
                var j = i + 1
                while j < end {
                    if code[j] == UInt8(ascii: "{"), let close = closing(j, UInt8(ascii: "{"), UInt8(ascii: "}")) {
                        regions.append(j..<close)
                        j = close
                    } else if code[j] == UInt8(ascii: "("), let close = closing(j, UInt8(ascii: "("), UInt8(ascii: ")")) {
                        j = close  // nested call arguments are the caller's
                    }
                    j += 1
                }
                i = skipSpaces(end + 1)
            }
            if i < code.count, code[i] == UInt8(ascii: "{"), let close = closing(i, UInt8(ascii: "{"), UInt8(ascii: "}")) {
                regions.append(i..<close)
            }
        }
        // One call per line: the first, so `deps.writer.intake.prepare(` counts once, as `writer.`.
        var first: [Int: (offset: Int, name: String)] = [:]
        for (pattern, name) in blocking {
            for offset in matches(of: pattern, in: text).map(\.lowerBound) where !regions.contains(where: { $0.contains(offset) }) {
                let line = code[..<offset].count { $0 == UInt8(ascii: "\n") } + 1
                if let seen = first[line], seen.offset <= offset { continue }
                first[line] = (offset, name)
            }
        }
        return first.sorted { $0.key < $1.key }.map { Call(line: $0.key, call: $0.value.name) }
    }

    /// UTF-8 offsets of the matches of `pattern`.
    static func matches(of pattern: String, in text: String) -> [Range<Int>] {
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return [] }
        let ns = text as NSString
        return regex.matches(in: text, range: NSRange(location: 0, length: ns.length)).map {
            let start = ns.substring(to: $0.range.location).utf8.count
            return start..<(start + ns.substring(with: $0.range).utf8.count)
        }
    }

    /// The source with every comment and string literal's content replaced by spaces (line
    /// breaks kept), so braces and names inside them are not code.
    static func blankingCommentsAndStrings(_ source: String) -> String {
        var out: [UInt8] = []
        let s = Array(source.utf8)
        var i = 0
        func at(_ j: Int, _ text: String) -> Bool { Array(text.utf8).enumerated().allSatisfy { j + $0.offset < s.count && s[j + $0.offset] == $0.element } }
        func blank(_ c: UInt8) { out.append(c == UInt8(ascii: "\n") ? c : UInt8(ascii: " ")) }
        while i < s.count {
            if at(i, "//") {
                while i < s.count, s[i] != UInt8(ascii: "\n") { blank(s[i]); i += 1 }
            } else if at(i, "/*") {
                while i < s.count, !at(i, "*/") { blank(s[i]); i += 1 }
                if i < s.count { out += [32, 32]; i += 2 }
            } else if s[i] == UInt8(ascii: "\"") || (s[i] == UInt8(ascii: "#") && at(i, "#\"")) {
                // A literal: its opening (#s, one or three quotes) up to the same closing.
                var hashes = 0
                while i < s.count, s[i] == UInt8(ascii: "#") { hashes += 1; out.append(32); i += 1 }
                let quotes = at(i, "\"\"\"") ? 3 : 1
                let close = String(repeating: "\"", count: quotes) + String(repeating: "#", count: hashes)
                out += Array(repeating: 32, count: quotes)
                i += quotes
                while i < s.count, !at(i, close) {
                    if hashes == 0, s[i] == UInt8(ascii: "\\"), i + 1 < s.count { blank(s[i]); i += 1 }
                    blank(s[i])
                    i += 1
                }
                for _ in 0..<min(close.utf8.count, s.count - i) { out.append(32); i += 1 }
            } else {
                out.append(s[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
