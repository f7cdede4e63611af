import Foundation

/// A small C program, built with DWARF and split the way distributions ship it: a stripped
/// executable and its `objcopy --only-keep-debug` file. gcc, objcopy, strip and readelf make it;
/// nothing of Stackline's.
public struct SplitProgram: Sendable {
    public let dir: String
    public var unstripped: String { dir + "/crashy" }
    public var debugFile: String { dir + "/crashy.debug" }
    public var stripped: String { dir + "/crashy.stripped" }
    public let buildID: String
    /// File address of `crash_site` in the unstripped binary, by nm.
    public let crashSite: UInt64

    public static let source = """
        #include <stdio.h>
        #include <stdlib.h>
        __attribute__((noinline)) int crash_site(int *p, int v) { *p = v; return v + 1; }
        int main(int argc, char **argv) { (void)argv; printf("%d\\n", crash_site(argc > 5 ? &argc : NULL, argc)); return 0; }
        """

    public init(in dir: String) throws {
        self.dir = dir
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Self.source.write(toFile: dir + "/crashy.c", atomically: true, encoding: .utf8)
        try runChecked("gcc", ["-g", "-O0", "-Wl,--build-id", "-o", dir + "/crashy", dir + "/crashy.c"])
        try runChecked("objcopy", ["--only-keep-debug", dir + "/crashy", dir + "/crashy.debug"])
        try runChecked("strip", ["--strip-all", "-o", dir + "/crashy.stripped", dir + "/crashy"])
        guard let id = try readelfBuildID(dir + "/crashy") else { throw TestSupportError("readelf found no build id in crashy") }
        buildID = id
        let nm = try runChecked("nm", [dir + "/crashy"]).stdout
        guard let line = nm.split(separator: "\n").first(where: { $0.hasSuffix(" T crash_site") }),
            let address = UInt64(line.split(separator: " ")[0], radix: 16)
        else { throw TestSupportError("no crash_site in nm's list: \(nm)") }
        crashSite = address
    }
}
