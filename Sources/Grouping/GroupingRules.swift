import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A versioned set of grouping rules: which images are the app's, which top frames are
/// crash-handling machinery, how many frames decide a group, and the lag-tree limits.
public struct GroupingRules: Codable, Sendable, Equatable {
    public var name: String
    /// Recorded with every fingerprint; bump it whenever a rule changes.
    public var version: Int
    /// At most this many frames (after skipping and collapsing recursion) decide a group.
    public var maxFrames: Int
    public var inApp: InAppRules
    public var skipTop: SkipRules
    public var lag: LagRules

    /// Image-name/path globs that decide whether a frame belongs to the app.
    public struct InAppRules: Codable, Sendable, Equatable {
        public var include: [String]
        public var exclude: [String]
    }

    /// Globs for frames dropped from the top of the crashing stack.
    public struct SkipRules: Codable, Sendable, Equatable {
        public var functions: [String]
        public var images: [String]
    }

    /// The SDK's thread-profile limits (docs/formats.md, "SDK lag report").
    public struct LagRules: Codable, Sendable, Equatable {
        public var maxProfileDepth: Int
        public var maxProfileNodes: Int
        public var trimStepMs: Double
        public var trimRounds: Int
    }

    /// The built-in rules (`DefaultRules.json`).
    public static let standard: GroupingRules = {
        // The built-in text is part of the program and covered by tests, so failing here is a build defect.
        guard let rules = try? GroupingRules.decode(Data(DefaultRules.json.utf8)) else {
            preconditionFailure("the built-in grouping rules do not parse")
        }
        return rules
    }()

    /// Reads a rules file, with a one-line reason when it is unusable.
    public static func load(path: String) throws(GroupingRulesError) -> GroupingRules {
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadable(path) }
        return try decode(data, source: path)
    }

    static func decode(_ data: Data, source: String = "built-in rules") throws(GroupingRulesError) -> GroupingRules {
        let rules: GroupingRules
        do { rules = try JSONDecoder().decode(GroupingRules.self, from: data) } catch {
            throw .invalid(source, "\(error)")
        }
        guard rules.version > 0 else { throw .invalid(source, "version must be a positive integer") }
        guard rules.maxFrames > 0 else { throw .invalid(source, "maxFrames must be positive") }
        return rules
    }

    /// The rules file at `path` (`--grouping-rules`, else `STACKLINE_GROUPING_RULES`) when there
    /// is one, else the built-in rules.
    public static func load(fileOrStandard path: String?) throws(GroupingRulesError) -> GroupingRules {
        guard let path, !path.isEmpty else { return standard }
        return try load(path: path)
    }
}

/// Why a rules file cannot be used.
public enum GroupingRulesError: Error, CustomStringConvertible, Equatable {
    case unreadable(String)
    case invalid(String, String)

    public var description: String {
        switch self {
        case .unreadable(let path): "cannot read grouping rules \(path)"
        case .invalid(let source, let why): "invalid grouping rules \(source): \(why)"
        }
    }
}

/// fnmatch(3) globs: `*`, `?`, `[…]`, the same syntax as shell patterns.
struct GlobList: Sendable {
    /// NUL-terminated once here: passing Swift strings made a C string of the pattern and of the
    /// text for every pattern tried (perf: `String.utf8CString` under every match).
    private let patterns: [[CChar]]

    init(patterns: [String]) {
        self.patterns = patterns.map { Array($0.utf8CString) }
    }

    func matches(_ text: String) -> Bool {
        text.withCString { text in
            patterns.contains { fnmatch($0, text, 0) == 0 }
        }
    }
}
