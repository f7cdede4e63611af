import Foundation
import Testing
import TestSupport

/// Mach-O symbol names as they come out of `stackline lookup`: the leading underscore goes the
/// way llvm-symbolizer drops it, Swift (`_$s…`) and C++ (`__Z…`) names are demangled, and
/// Objective-C method names (`-[Class method]`) are kept. A real arm64 iOS executable is linked
/// here with asm-labelled functions, since Linux has no Apple SDK to compile Swift or
/// Objective-C for iOS.
@Suite struct MachONameTests {
    @Test func swiftCxxAndObjectiveCNamesInASymbolTable() throws {
        let dir = try TempDirectory("macho-names")
        defer { dir.remove() }
        try """
            int swift_like(int x) __asm__("_$s4main5crashyySiF");
            int swift_like(int x) { return x * 3; }
            int objc_like(int x) __asm__("-[Cart checkout]");
            int objc_like(int x) { return x + 1; }
            int cxx_like(int x) __asm__("__ZN4Shop4Cart8checkoutEi");
            int cxx_like(int x) { return x - 1; }
            int main(void) { return swift_like(1) + objc_like(2) + cxx_like(3); }
            """.write(toFile: dir.file("names.c"), atomically: true, encoding: .utf8)
        try runChecked(try findTool("clang"), ["-target", "arm64-apple-ios14.0", "-O1", "-fno-inline", "-c", dir.file("names.c"), "-o", dir.file("names.o")])
        try runChecked(
            try findTool(anyOf: ["ld64.lld-14", "ld64.lld"]),
            ["-arch", "arm64", "-platform_version", "ios", "14.0", "14.0", "-e", "_main", "-undefined", "dynamic_lookup",
             dir.file("names.o"), "-o", dir.file("names")])

        // Addresses and linkage names from llvm-nm; demangled forms from the toolchain's demanglers.
        let nm = try runChecked(try findTool(anyOf: ["llvm-nm-14", "llvm-nm"]), ["--defined-only", dir.file("names")]).stdout
        var symbols: [(address: UInt64, name: String)] = []
        for line in nm.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 2)
            guard parts.count == 3, parts[1] == "T", let address = UInt64(parts[0], radix: 16),
                parts[2] != "__mh_execute_header"
            else { continue }
            symbols.append((address, String(parts[2])))
        }
        #expect(symbols.count == 4)
        let swiftDemangle = try findTool("swift-demangle")
        for (address, name) in symbols {
            let raw = try runChecked(try findTool(anyOf: ["llvm-symbolizer-14", "llvm-symbolizer"]), ["--obj=\(dir.file("names"))", "--no-demangle", "0x" + String(address, radix: 16)])
                .stdout.split(separator: "\n").first.map(String.init)
            let expected: String
            if name.hasPrefix("_$s") {
                expected = try runChecked(swiftDemangle, ["--compact", String(name.dropFirst())]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            } else if name.hasPrefix("__Z") {
                expected = try runChecked(try findTool("c++filt"), [String(name.dropFirst())]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            } else if name.hasPrefix("_") {
                expected = String(name.dropFirst())
            } else {
                expected = name  // -[Cart checkout]: Objective-C symbols carry no underscore
            }
            let out = try runStackline(["lookup", "--obj", dir.file("names"), "--json", "0x" + String(address, radix: 16)])
            #expect(out.status == 0, "\(out.stderr)")
            let answers = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [[String: Any]]
            let frame = (answers?.first?["frames"] as? [[String: Any]])?.first
            #expect(frame?["function"] as? String == expected, "\(name)")
            #expect(frame?["symbol"] as? String == raw, "\(name): raw name as llvm-symbolizer prints it")
        }
    }
}
