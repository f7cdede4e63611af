import Foundation

/// The seed's lag example as a real program: `func1` → `func2` → `func3` → `func4` →
/// `func5`…`func8`, compiled with DWARF; function addresses come from `nm`.
public struct LagProgram: Sendable {
    public var binary: String
    public var buildID: String
    /// Function start addresses (file addresses) by name.
    public var functions: [String: UInt64]

    public static let shared: Result<LagProgram, TestSupportError> = {
        do { return .success(try build()) } catch let error as TestSupportError {
            return .failure(error)
        } catch {
            return .failure(TestSupportError("\(error)"))
        }
    }()

    static func build() throws -> LagProgram {
        let dir = try makeTemporaryDirectory(prefix: "lag-program")
        var source = ""
        for i in (5...8).reversed() {
            source += "__attribute__((noinline)) int func\(i)(int x) { return x * \(i) + 1; }\n"
        }
        source += """
            __attribute__((noinline)) int func4(int x) { return func5(x) + func6(x) + func7(x) + func8(x); }
            __attribute__((noinline)) int func3(int x) { return func4(x) + 3; }
            __attribute__((noinline)) int func2(int x) { return func3(x) + 2; }
            __attribute__((noinline)) int func1(int x) { return func2(x) + 1; }
            int main(int argc, char **argv) { (void)argv; return func1(argc); }

            """
        try source.write(toFile: dir + "/lag.c", atomically: true, encoding: .utf8)
        let binary = dir + "/lagdemo"
        try runChecked(try findTool("gcc"), ["-g", "-O1", "-fno-inline", dir + "/lag.c", "-o", binary])
        guard let buildID = try readelfBuildID(binary) else { throw TestSupportError("no build-id in \(binary)") }
        var functions: [String: UInt64] = [:]
        for line in try runChecked(try findTool("nm"), ["--defined-only", binary]).stdout.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 3, parts[1] == "T" || parts[1] == "t", let address = UInt64(parts[0], radix: 16) {
                functions[String(parts[2])] = address
            }
        }
        return LagProgram(binary: binary, buildID: buildID, functions: functions)
    }

    /// The seed's 8 samples (written root first there), as runtime addresses with the image at
    /// `load`, each innermost first: the top is a pc at a function's start, the rest return
    /// addresses one byte past a function's start.
    public func seedSamples(load: UInt64) -> [[UInt64]] {
        let base = ["func1", "func2", "func3", "func4"]
        let stacks = [base + ["func5"], base + ["func6"], base + ["func6"], base + ["func7"], base, base, base, base + ["func8"]]
        return stacks.map { names in
            names.reversed().enumerated().map { i, name in load + functions[name, default: 0] + (i == 0 ? 0 : 1) }
        }
    }

    /// The seed's samples as an SDK lag report of app `lagdemo` at `version` (docs/formats.md,
    /// "SDK lag report"), the image loaded at `load`.
    public func sdkLagReport(load: UInt64, version: String) -> Data {
        let samples = seedSamples(load: load).map { "[" + $0.map { "\"0x\(String($0, radix: 16))\"" }.joined(separator: ", ") + "]" }
        return Data("""
            {"type": "lag", "app": {"name": "lagdemo", "version": "\(version)"},
             "dyld_images": [{"name": "\(binary)", "uuid": "\(buildID)", "base_addr": "0x\(String(load, radix: 16))"}],
             "samples": [\(samples.joined(separator: ",\n"))]}
            """.utf8)
    }

}
