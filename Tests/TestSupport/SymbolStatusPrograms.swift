import Foundation

/// Shared libraries built for the symbol-status tests, one per way an image's debug file can
/// stand, each with a build id the test chose (`ld --build-id=0x…`, 16 bytes, so Apple-style
/// report formats take it too) and one exported function whose address `nm` reads:
/// - `lines`: gcc -g, stored as is: answers with line tables (`ok`).
/// - `symbols`: the same kind of library after `objcopy --strip-debug`: a symbol table only.
/// - `aarch64`: clang --target=aarch64-linux-gnu with lld: another architecture than x86_64.
/// - `replaced`: stored, then its stored bytes are overwritten with `replacement`'s (another
///   build id), as a copy gone wrong would.
/// For the fixes: `unstripped` is `symbols` before stripping, `x86Twin` an x86_64 build carrying
/// `aarch64`'s id, `notFound` a library with `notFoundID`; none is stored by the tests first.
/// The ids `deviceOnly` and `unused` name nothing that is ever built.
public struct SymbolStatusPrograms: Sendable {
    public struct Library: Sendable {
        public var name: String
        /// The file to store (for `symbols`, the stripped one).
        public var path: String
        public var buildID: String
        public var function: String
        /// The function's address in the file, from `nm`.
        public var address: UInt64
    }

    public var lines: Library
    public var symbols: Library
    public var aarch64: Library
    public var replaced: Library
    public var replacement: Library
    /// `symbols` with its DWARF (the file the fix uploads).
    public var unstripped: String
    public var x86Twin: Library
    public var notFound: Library
    public static let notFoundID = String(repeating: "33", count: 16)
    public static let deviceOnlyID = String(repeating: "77", count: 16)
    public static let unusedID = String(repeating: "88", count: 16)

    public static func build() throws -> SymbolStatusPrograms {
        let dir = try makeTemporaryDirectory(prefix: "symbol-status")
        let gcc = try findTool("gcc")
        let clang = try findTool(anyOf: ["clang-14", "/opt/swift/usr/bin/clang", "clang"])
        let lld = try findTool(anyOf: ["ld.lld-14", "/opt/swift/usr/bin/ld.lld", "ld.lld"])
        func library(_ name: String, id byte: String, function: String, compiler: [String]) throws -> Library {
            let source = "\(dir)/\(name).c"
            // Long enough that an address a few bytes in still lies inside the function.
            try """
                int \(function)(int x) {
                    int total = 0;
                    for (int i = 0; i < x; i++) total += i * 3 + (x ^ i);
                    return total;
                }

                """.write(toFile: source, atomically: true, encoding: .utf8)
            let id = String(repeating: byte, count: 16)
            let out = "\(dir)/lib\(name).so"
            try runChecked(compiler[0], Array(compiler.dropFirst()) + ["-g", "-O0", "-shared", "-fPIC", "-Wl,--build-id=0x\(id)", source, "-o", out])
            guard try readelfBuildID(out) == id else { throw TestSupportError("\(out) does not carry build id \(id)") }
            return Library(name: "lib\(name).so", path: out, buildID: id, function: function, address: try nmAddress(function, in: out))
        }
        let lines = try library("lines", id: "11", function: "lines_func", compiler: [gcc])
        var symbols = try library("symbols", id: "22", function: "symbols_func", compiler: [gcc])
        let stripped = "\(dir)/libsymbols-stripped.so"
        try runChecked(try findTool("objcopy"), ["--strip-debug", symbols.path, stripped])
        let unstripped = symbols.path
        symbols.path = stripped
        let aarch64 = try library(
            "arm", id: "44", function: "arm_func",
            compiler: [clang, "--target=aarch64-linux-gnu", "-fuse-ld=\(lld)", "-nostdlib"])
        let replaced = try library("replaced", id: "55", function: "replaced_func", compiler: [gcc])
        let replacement = try library("replacement", id: "66", function: "replacement_func", compiler: [gcc])
        let x86Twin = try library("arm-x86", id: "44", function: "arm_func", compiler: [gcc])
        let notFound = try library("notfound", id: "33", function: "notfound_func", compiler: [gcc])
        return SymbolStatusPrograms(
            lines: lines, symbols: symbols, aarch64: aarch64, replaced: replaced, replacement: replacement, unstripped: unstripped,
            x86Twin: x86Twin, notFound: notFound)
    }

    /// `name`'s address in `file`, from binutils `nm` (llvm-nm for another architecture works the same).
    static func nmAddress(_ name: String, in file: String) throws -> UInt64 {
        let out = try runChecked(try findTool(anyOf: ["nm", "llvm-nm"]), ["--defined-only", file]).stdout
        for line in out.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 3, parts[2] == name, let address = UInt64(parts[0], radix: 16) { return address }
        }
        throw TestSupportError("nm found no \(name) in \(file)")
    }
}
