import DebugInfo
import Foundation
import ReportModel
import SymbolStore
import TestSupport
import Testing

/// A binary whose only symbols are its MiniDebugInfo (`.gnu_debugdata`, as Fedora ships every
/// binary) answers names, so the store counts it as having a symbol table: it replaces a file
/// stripped of everything, and such a file does not replace it.
@Suite struct MiniDebugInfoStoreTests {
    @Test(arguments: [false, true])
    func miniDebugInfoCountsAsASymbolTable(miniFirst: Bool) throws {
        let fixture = try sharedElfFixtures.get().named("c-gcc-pie")
        let scratch = try TempDirectory("stackline-mini-store")
        defer { scratch.remove() }
        let mini = scratch.file("mini"), bare = scratch.file("bare")
        try runChecked("/bin/bash", [packageRoot + "/Tests/Fixtures/add-minidebuginfo.sh", fixture.unstripped, mini])
        try runChecked("strip", ["--strip-all", "-o", bare, fixture.unstripped])

        // The oracle, from binutils and xz: the section decodes to an ELF file with functions in
        // its .symtab, and neither binary has a .symtab of its own.
        let section = scratch.file("gnu_debugdata.xz"), inner = scratch.file("inner")
        try runChecked("objcopy", ["--dump-section", ".gnu_debugdata=" + section, mini, scratch.file("unused")])
        try runChecked("/bin/sh", ["-c", "xz -dc \"$1\" > \"$2\"", "sh", section, inner])
        let functions = try runChecked("readelf", ["-sW", inner]).stdout.split(separator: "\n").filter { $0.contains(" FUNC ") }
        #expect(functions.count > 0)
        for file in [mini, bare] {
            #expect(!(try runChecked("readelf", ["-SW", file]).stdout.contains(" SYMTAB ")), "\(file) has a .symtab")
        }

        let store = SymbolStoreDirectory(root: scratch.file("store"))
        let id = try BuildID(try #require(fixture.buildID))
        let first = try store.add(path: miniFirst ? mini : bare)
        let second = try store.add(path: miniFirst ? bare : mini)
        #expect(first.entry.hasSymbolTable == miniFirst)
        if miniFirst {
            guard case .kept = second else { Issue.record("a bare binary replaced MiniDebugInfo: \(second)"); return }
        } else {
            guard case .upgraded = second else { Issue.record("MiniDebugInfo did not replace a bare binary: \(second)"); return }
        }
        let entry = try #require(store.entry(buildID: id))
        #expect(entry.hasSymbolTable && !entry.hasDWARF, "\(entry)")
        let stored = try #require(store.debugFilePath(buildID: id))
        #expect(FileManager.default.contents(atPath: stored) == FileManager.default.contents(atPath: mini))
    }
}
