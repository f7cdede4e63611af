import Foundation
import FuzzTargets
import ServiceRuntime

/// The environment, read once as the program starts; the targets get its values (`FuzzTarget.use`).
private let environment: StacklineEnvironment = {
    let environment = StacklineEnvironment(ProcessInfo.processInfo.environment)
    FuzzTarget.use(
        FuzzTarget.Settings(validUTF8Only: environment.fuzzValidUTF8Only, temporaryDirectory: environment.temporaryDirectory))
    return environment
}()

/// One line to stderr; stdout carries the replay results.
private func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// `stackline-fuzz --list`, in both builds: one target per line, name and what it runs.
private func listTargetsIfAsked() {
    guard CommandLine.arguments.dropFirst().first == "--list" else { return }
    for target in FuzzTarget.all { print("\(target.name)\t\(target.summary)") }
    exit(0)
}

#if STACKLINE_LIBFUZZER
// Built by scripts/fuzz.sh with -sanitize=fuzzer: main hands over to libFuzzer's driver,
// which calls fuzzerTestOneInput for every input it makes.
import CLibFuzzer

/// The target named by STACKLINE_FUZZ_TARGET; libFuzzer's own arguments leave no room for ours.
private let selected: FuzzTarget = {
    let name = environment.fuzzTarget ?? ""
    guard let target = FuzzTarget.named(name) else {
        let names = FuzzTarget.all.map(\.name).joined(separator: ", ")
        printError("stackline-fuzz: set STACKLINE_FUZZ_TARGET to one of: \(names) (got '\(name)')")
        exit(2)
    }
    return target
}()

private func fuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let data = bytes.map { Data(bytes: $0, count: size) } ?? Data()
    do { try selected.run(data) } catch {
        // libFuzzer saves the input as crash-<sha1> when the process aborts.
        printError("stackline-fuzz \(selected.name): \(error.description)")
        abort()
    }
    return 0
}

@main
struct FuzzMain {
    static func main() {
        _ = environment
        listTargetsIfAsked()
        _ = selected
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzerTestOneInput($0, $1) })
    }
}

#else

/// Without the sanitizer: runs inputs through a target outside libFuzzer, for the crash
/// replay tests and for reproducing a finding under a debugger.
@main
struct ReplayMain {
    static func main() {
        _ = environment
        listTargetsIfAsked()
        let args = Array(CommandLine.arguments.dropFirst())
        guard args.count >= 2, let target = FuzzTarget.named(args[0]) else {
            let names = FuzzTarget.all.map(\.name).joined(separator: ", ")
            printError("usage: stackline-fuzz TARGET FILE|DIR...  (targets: \(names); --list describes them)")
            exit(64)
        }
        var failed = false
        for file in inputs(args.dropFirst()) {
            guard let data = FileManager.default.contents(atPath: file) else {
                printError("\(file): cannot read")
                failed = true
                continue
            }
            do {
                print("\(target.name) \(file): \(try target.run(data))")
            } catch {
                print("\(target.name) \(file): FAILED: \(error.description)")
                failed = true
            }
        }
        FuzzTarget.removeScratchFiles()
        exit(failed ? 1 : 0)
    }

    /// Files as given; a directory stands for the regular files under it.
    private static func inputs(_ paths: ArraySlice<String>) -> [String] {
        paths.flatMap { path -> [String] in
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else { return [path] }
            let walker = FileManager.default.enumerator(atPath: path)
            var files: [String] = []
            while let relative = walker?.nextObject() as? String {
                var dir: ObjCBool = false
                if FileManager.default.fileExists(atPath: path + "/" + relative, isDirectory: &dir), !dir.boolValue {
                    files.append(path + "/" + relative)
                }
            }
            return files.sorted()
        }
    }
}
#endif
