import Foundation
import TestSupport
import Testing

/// A grouping rules file reaches the workers that group the reports, given as
/// `--grouping-rules` or as `STACKLINE_GROUPING_RULES`: the master reads the environment once
/// and passes the file to its workers as an argument (nothing is set in its environment at run
/// time). The oracle is the rules version the test writes into the file, read back from the
/// `groups` table with the sqlite3 shell.
@Suite(.serialized) struct GroupingRulesEndToEndTests {
    /// The built-in rules (the JSON in Sources/Grouping/DefaultRules.swift) with `version` set.
    static func rules(version: Int) throws -> Data {
        let source = try String(contentsOfFile: TestPaths.packageRoot + "/Sources/Grouping/DefaultRules.swift", encoding: .utf8)
        let start = try #require(source.range(of: "#\"\"\"\n")), end = try #require(source.range(of: "\"\"\"#"))
        var rules = try #require(
            try JSONSerialization.jsonObject(with: Data(source[start.upperBound..<end.lowerBound].utf8)) as? [String: Any])
        #expect(rules["version"] as? Int == 1, "the built-in rules are version 1")
        rules["version"] = version
        return try JSONSerialization.data(withJSONObject: rules)
    }

    /// Runs three reports through `master --once` and returns the rules versions of the groups made.
    func groupedVersions(arguments: [String] = [], environment: [String: String] = [:]) throws -> [String] {
        let h = try Harness()
        h.extraEnvironment = environment
        let raw = try CrashFixture.shared.report(symbolicate: "off")
        _ = try h.submit(try h.write([raw, raw + Data(" ".utf8), raw + Data("  ".utf8)]))
        let master = try h.startMaster(["--workers", "2", "--once"] + arguments)
        #expect(try master.waitForExit() == 0, "\(master.log.suffix(2000))")
        let out = try runProcess("sqlite3", [h.dbPath, "SELECT DISTINCT rules_version FROM groups ORDER BY 1"])
        #expect(out.status == 0, "\(out.stderr)")
        return out.stdout.split(separator: "\n").map(String.init)
    }

    @Test func theOptionAndTheVariableReachTheWorkers() throws {
        let dir = try TempDirectory("grouping-rules")
        defer { dir.remove() }
        let option = dir.file("option.json"), variable = dir.file("variable.json")
        try Self.rules(version: 41).write(to: URL(fileURLWithPath: option))
        try Self.rules(version: 42).write(to: URL(fileURLWithPath: variable))

        #expect(try groupedVersions() == ["1"], "the built-in rules")
        #expect(try groupedVersions(arguments: ["--grouping-rules", option]) == ["41"])
        #expect(try groupedVersions(environment: ["STACKLINE_GROUPING_RULES": variable]) == ["42"])
        #expect(
            try groupedVersions(arguments: ["--grouping-rules", option], environment: ["STACKLINE_GROUPING_RULES": variable]) == ["41"],
            "the option wins")
    }

    /// A bad file stops the master once, naming it, whichever way it was given.
    @Test func anUnusableRulesFileStopsTheMasterAtStart() throws {
        let h = try Harness()
        let bad = h.dir.file("bad.json")
        try Data(#"{"version": 2}"#.utf8).write(to: URL(fileURLWithPath: bad))
        let byOption = try h.stackline(["master", "--once", "--workers", "1", "--grouping-rules", bad])
        #expect(byOption.status != 0 && !byOption.signaled, "\(byOption.summary)")
        #expect(byOption.stderr.contains(bad), "\(byOption.stderr)")
        h.extraEnvironment = ["STACKLINE_GROUPING_RULES": bad]
        let byVariable = try h.stackline(["master", "--once", "--workers", "1"])
        #expect(byVariable.status != 0 && !byVariable.signaled, "\(byVariable.summary)")
        #expect(byVariable.stderr.contains(bad), "\(byVariable.stderr)")
    }
}
