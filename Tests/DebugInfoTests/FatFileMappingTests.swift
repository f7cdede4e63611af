import Foundation
import TestSupport
import Testing

/// A fat Mach-O file is mapped once however many slices it has: strace counts the real
/// `mmap` calls of the file's bytes (an oracle outside Stackline).
@Suite struct FatFileMappingTests {
    /// `mmap` calls, in `strace -f -e trace=mmap` output, that map `length` bytes of a file
    /// descriptor (an anonymous mapping passes fd -1).
    static func fileMappings(of length: Int, in log: String) -> Int {
        log.split(separator: "\n").filter { line in
            guard let open = line.range(of: "mmap(") else { return false }
            let arguments = line[open.upperBound...].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            return arguments.count >= 6 && arguments[1] == String(length) && arguments[4] != "-1"
        }.count
    }

    /// Runs `stackline ARGS` under strace and returns how often it mapped `file`.
    static func mappings(of file: String, running arguments: [String]) throws -> (count: Int, output: ProcessOutput) {
        let scratch = try TempDirectory()
        defer { scratch.remove() }
        let log = scratch.file("strace.log")
        let output = try runProcess(
            try findTool("strace"), ["-f", "-e", "trace=mmap", "-o", log, try stacklineExecutable()] + arguments)
        let size = (try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? -1
        return (fileMappings(of: size, in: try String(contentsOfFile: log, encoding: .utf8)), output)
    }

    @Test(arguments: [MachOFixtures.executable, MachOFixtures.dSYMDWARF])
    func symbolsAddMapsAFatFileOnce(path: String) throws {
        let slices = try MachOFixtures.uuids(path)
        #expect(slices.count == 2, "the fixture is fat")
        let store = try TempDirectory()
        defer { store.remove() }
        let run = try Self.mappings(of: path, running: ["symbols", "add", "--symbols", store.path, path])
        #expect(run.output.status == 0, "\(run.output.stderr)")
        for uuid in slices.values {
            #expect(run.output.stdout.contains(uuid), "slice \(uuid) stored")
        }
        #expect(run.count == 1, "\(path) mapped \(run.count) times for \(slices.count) slices")
    }

    @Test func lookupMapsAFatFileOnce() throws {
        let path = MachOFixtures.dSYMDWARF
        let run = try Self.mappings(of: path, running: ["lookup", "--obj", path, "--arch", "x86_64", "0x0"])
        #expect(run.output.status == 0, "\(run.output.stderr)")
        #expect(run.count == 1, "\(path) mapped \(run.count) times")
    }
}
