import Foundation
import TestSupport
import Testing

/// Handlers and middleware run on Swift's cooperative pool; blocking work goes through one
/// thread pool (`deps.blocking.run`, or the `BlockingWork` a middleware or `WebSession` was
/// built with: `Sources/Server/BlockingWork.swift`). Checked from the source text of every file
/// of the Server module: a call on the database or its token store (`db.…(`, `tokens.…(`, the
/// clock `now()` aside) or an inflate (`Zlib.inflate…`) must sit inside the braces of a
/// `blocking.run` closure. Comments and string literals do not count.
@Suite struct BlockingWorkTests {
    /// Every Swift file of the Server module: routes, middleware, the session, the body reader.
    static func checkedFiles() throws -> [String] {
        let root = "Sources/Server"
        let all = FileManager.default.enumerator(atPath: packageRoot + "/" + root)?.compactMap { $0 as? String } ?? []
        return all.filter { $0.hasSuffix(".swift") }.sorted().map { root + "/" + $0 }
    }

    @Test func serverCallsTheDatabaseAndInflatesOnlyOnTheBlockingPool() throws {
        let files = try Self.checkedFiles()
        // The walk reaches the subfolder and the files outside Routes (a wrong root would pass empty).
        for expected in ["Routes/WebRoutes.swift", "Authentication.swift", "WebSession.swift", "BodyReader.swift"] {
            #expect(files.contains("Sources/Server/" + expected), "not checked: \(expected)")
        }
        var found: [String] = []
        for path in files {
            let text = try String(contentsOfFile: packageRoot + "/" + path, encoding: .utf8)
            found += BlockingCallScanner.callsOutsidePool(in: text).map { "\(path):\($0.line): \($0.call)" }
        }
        #expect(found == [], "blocking calls outside blocking.run:\n\(found.joined(separator: "\n"))")
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
            """#
        let calls = BlockingCallScanner.callsOutsidePool(in: source)
        #expect(calls.map(\.line) == [2, 8, 10, 13, 14, 15, 16])
        #expect(calls.map(\.call) == ["db.", "Zlib.inflate", "db.", "tokens.", "db.", "db.", "db."])
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
    /// members, unless the member called is `now` (the database's clock reads no row).
    static func call(on receiver: String) -> String {
        #"\b"# + receiver + #"(?:\??\.[A-Za-z_]\w*)*?\??\.(?!now\s*\()[A-Za-z_]\w*\s*[({]"#
    }

    static let blocking: [(pattern: String, name: String)] = [
        (call(on: "db"), "db."), (call(on: "tokens"), "tokens."), (#"\bZlib\.inflate"#, "Zlib.inflate"),
    ]

    static func callsOutsidePool(in source: String) -> [Call] {
        let code = Array(blankingCommentsAndStrings(source).utf8)
        let text = String(decoding: code, as: UTF8.self)
        var regions: [Range<Int>] = []
        for match in matches(of: #"\bblocking\.run\s*(?:\(\s*)?\{"#, in: text) {
            let open = match.upperBound - 1
            var depth = 0
            for i in open..<code.count {
                if code[i] == UInt8(ascii: "{") { depth += 1 }
                if code[i] == UInt8(ascii: "}") {
                    depth -= 1
                    if depth == 0 {
                        regions.append(open..<i)
                        break
                    }
                }
            }
        }
        var calls: [Call] = []
        for (pattern, name) in blocking {
            for offset in matches(of: pattern, in: text).map(\.lowerBound) where !regions.contains(where: { $0.contains(offset) }) {
                calls.append(Call(line: code[..<offset].count { $0 == UInt8(ascii: "\n") } + 1, call: name))
            }
        }
        return calls.sorted { $0.line < $1.line }
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
