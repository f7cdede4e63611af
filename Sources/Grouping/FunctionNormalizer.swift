/// Reduces a demangled function name to what identifies the function across builds:
/// no parameters, return types, template or generic arguments, compiler clone suffixes or
/// specialisation prefixes. Hand-written because no library normalises names for grouping;
/// the rules follow Sentry's and Socorro's signature normalisation.
public enum FunctionNormalizer {
    /// The source language a name was mangled in, judged from its raw linkage name.
    public enum Language: Sendable {
        case cxx, swift, objectiveC, c
    }

    public static func language(symbol: String?, function: String) -> Language {
        // Every prefix below starts with one of these bytes; a name starting with any other
        // cannot have one, and most names (C symbols, Swift's own names) are decided here.
        if let first = function.utf8.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
            if function.hasPrefix("-[") || function.hasPrefix("+[") { return .objectiveC }
        }
        if let symbol, let first = symbol.utf8.first, first == UInt8(ascii: "_") || first == UInt8(ascii: "$") {
            if symbol.hasPrefix("_Z") || symbol.hasPrefix("__Z") { return .cxx }
            for prefix in swiftPrefixes where symbol.hasPrefix(prefix) {
                return .swift
            }
        }
        return .c
    }

    private static let swiftPrefixes = ["$s", "_$s", "$S", "_$S", "$e", "_$e", "_T0", "__T0"]

    /// What a normalised name depends on: the name and the language its linkage name was
    /// mangled in, not the linkage name itself, so a lookup hashes one string, not two.
    struct Name: Hashable, Sendable {
        var function: String
        var language: Language

        init(_ function: String, symbol: String?) {
            self.function = function
            language = FunctionNormalizer.language(symbol: symbol, function: function)
        }
    }

    public static func normalize(_ function: String, symbol: String? = nil) -> String {
        normalize(Name(function, symbol: symbol))
    }

    static func normalize(_ name: Name) -> String {
        cache.value(for: name, compute: uncachedNormalize)
    }

    /// Normalised names per unique name, for the life of the process: a worker sees the same
    /// system and app frames in report after report, and normalising each again cost more
    /// than resolving the frame (scripts/bench-queue.sh, 30-frame reports).
    private static let cache = BoundedMemo<Name, String>(limit: 50_000)

    private static func uncachedNormalize(_ name: Name) -> String {
        switch name.language {
        case .objectiveC: return name.function
        case .swift: return swift(name.function)
        case .cxx: return cxx(name.function)
        case .c: return stripCloneSuffixes(name.function)
        }
    }

    // MARK: C++

    /// `int (anonymous namespace)::Box<int, 3>::area(int) const [clone .cold]` → `{anonymous}::Box<T>::area`.
    public static func cxx(_ name: String) -> String {
        var s = stripCloneSuffixes(name)
        for spelling in ["(anonymous namespace)", "`anonymous namespace'", "{anonymous}"] {
            s = s.replacingOccurrences(of: spelling, with: "{anonymous}")
        }
        s = collapseLambdas(s)
        s = collapseAngleBrackets(s)
        s = dropParameters(s)
        return dropReturnType(s)
    }

    /// `{lambda(int)#1}` → `{lambda}`: the parameter list and ordinal change with unrelated edits.
    static func collapseLambdas(_ s: String) -> String {
        var out = ""
        var rest = Substring(s)
        while let start = rest.range(of: "{lambda(") {
            out += rest[..<start.lowerBound]
            guard let close = rest[start.upperBound...].firstIndex(of: "}") else {
                rest = rest[start.lowerBound...]
                break
            }
            out += "{lambda}"
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    /// Every outermost `<…>` becomes `<T>`; `operator<`, `operator<<`, `operator->` and friends are kept.
    static func collapseAngleBrackets(_ s: String) -> String {
        let chars = Array(s)
        var out = ""
        var i = 0
        while i < chars.count {
            if let op = operatorToken(chars, at: i) {
                out += String(chars[i..<op])
                i = op
                continue
            }
            if chars[i] == "<" {
                var depth = 0
                var j = i
                while j < chars.count {
                    if let op = operatorToken(chars, at: j) { j = op; continue }
                    if chars[j] == "<" { depth += 1 } else if chars[j] == ">" {
                        depth -= 1
                        if depth == 0 { break }
                    }
                    j += 1
                }
                out += "<T>"
                i = j + 1
                continue
            }
            out.append(chars[i])
            i += 1
        }
        return out
    }

    /// If an `operator…` token starts at `i`, the index just past it.
    private static func operatorToken(_ chars: [Character], at i: Int) -> Int? {
        let word = Array("operator")
        guard i + word.count <= chars.count, Array(chars[i..<i + word.count]) == word else { return nil }  // overflow: an index into a name in memory plus 8
        if i > 0, chars[i - 1].isLetter || chars[i - 1].isNumber || chars[i - 1] == "_" { return nil }
        var j = i + word.count
        if j < chars.count, chars[j] == "(" , j + 1 < chars.count, chars[j + 1] == ")" { return j + 2 }
        if j < chars.count, chars[j] == "[", j + 1 < chars.count, chars[j + 1] == "]" { return j + 2 }
        let symbols: Set<Character> = ["<", ">", "=", "!", "+", "-", "*", "/", "%", "^", "&", "|", "~", ",", "-"]
        while j < chars.count, symbols.contains(chars[j]) { j += 1 }
        return j
    }

    /// Cuts at the first top-level `(`: the parameter list and any `const`/`&` qualifiers after it.
    static func dropParameters(_ s: String) -> String {
        let chars = Array(s)
        var i = 0
        while i < chars.count {
            if let op = operatorToken(chars, at: i) { i = op; continue }
            if chars[i] == "(" && i > 0 { return String(chars[..<i]).trimmingTrailingSpaces() }
            i += 1
        }
        return s
    }

    /// `unsigned long std::foo<T>` → `std::foo<T>`: whatever precedes the last top-level space
    /// is a return type, except in `operator new`, `operator delete` and conversion operators.
    static func dropReturnType(_ s: String) -> String {
        let chars = Array(s)
        var lastSpace: Int?
        var depth = 0
        var i = 0
        while i < chars.count {
            if let op = operatorToken(chars, at: i) {
                // "operator new", "operator bool": the space after `operator` belongs to the name.
                var j = op
                while j < chars.count, chars[j] == " " { j += 1 }
                while j < chars.count, chars[j] != "(" && chars[j] != "<" { j += 1 }
                i = max(j, op)
                continue
            }
            switch chars[i] {
            case "<", "(", "[", "{": depth += 1
            case ">", ")", "]", "}": depth -= 1
            case " " where depth == 0: lastSpace = i
            default: break
            }
            i += 1
        }
        guard let lastSpace else { return s }
        return String(chars[(lastSpace + 1)...])
    }

    // MARK: Swift

    /// `generic specialization <Swift.Int> of Parser.next<A>() -> A?` → `Parser.next()`.
    public static func swift(_ name: String) -> String {
        var s = name
        let prefixes = [
            "specialized ", "merged ", "partial apply for ", "@objc ", "dynamic ", "outlined ",
            "reabstraction thunk helper ", "protocol witness for ", "@nonobjc ",
        ]
        var changed = true
        while changed {
            changed = false
            for prefix in prefixes where s.hasPrefix(prefix) {
                s.removeFirst(prefix.count)
                changed = true
            }
            for kind in ["generic specialization ", "function signature specialization ", "generic partial specialization "]
            where s.hasPrefix(kind) {
                // "<…> of " follows; the bracketed part lists the specialised types.
                if let of = s.range(of: "> of ") {
                    s = String(s[of.upperBound...])
                    changed = true
                }
            }
        }
        if let suffix = s.range(of: " with unmangled suffix ") { s = String(s[..<suffix.lowerBound]) }
        // The full demangler's return type (`-> A?`) and generic arguments vary with specialisation.
        if let arrow = topLevelArrow(s) { s = String(s[..<arrow]).trimmingTrailingSpaces() }
        return collapseAngleBrackets(s)
    }

    private static func topLevelArrow(_ s: String) -> String.Index? {
        var depth = 0
        var i = s.startIndex
        while i < s.endIndex {
            switch s[i] {
            case "(", "<", "[": depth += 1
            case ")", "]": depth -= 1
            case ">":
                // `->` is not a closing bracket.
                if i > s.startIndex, s[s.index(before: i)] == "-" {
                    if depth == 0 { return s.index(before: i) }
                } else {
                    depth -= 1
                }
            default: break
            }
            i = s.index(after: i)
        }
        return nil
    }

    // MARK: Shared

    /// `foo [clone .cold]`, `foo.cold`, `foo.constprop.0`, `foo.isra.0.part.1`, `foo.llvm.1234` → `foo`.
    public static func stripCloneSuffixes(_ name: String) -> String {
        var s = name
        while let clone = s.range(of: " [clone ") {
            guard let close = s[clone.upperBound...].firstIndex(of: "]") else { break }
            s.removeSubrange(clone.lowerBound...close)
        }
        let suffixes = ["cold", "constprop", "isra", "part", "lto_priv", "llvm", "localalias", "clone", "str"]
        var changed = true
        while changed {
            changed = false
            guard let dot = s.lastIndex(of: "."), dot > s.startIndex else { break }
            let tail = s[s.index(after: dot)...]
            if !tail.isEmpty, tail.allSatisfy(\.isNumber) || suffixes.contains(String(tail)) {
                // A numeric tail only counts after a known suffix (`.constprop.0`), not `v1.2`.
                if tail.allSatisfy(\.isNumber) {
                    let before = s[..<dot]
                    guard let previousDot = before.lastIndex(of: "."),
                        suffixes.contains(String(before[before.index(after: previousDot)...]))
                    else { break }
                }
                s = String(s[..<dot])
                changed = true
            }
        }
        return s
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}
