import DebugInfo
import Foundation
import TestSupport
import Testing

/// A symcache build indexes every unit once and then reads only the strings its answers name:
/// the file's pages it went through leave the process's resident set when libdw's reader ends
/// (issue 31: the build's peak RSS under twice the debug file). The kernel's own count of the
/// mapping's resident pages (`/proc/self/smaps`) is the oracle.
@Suite struct ResidentPagesTests {
    @Test func theFilesPagesLeaveTheResidentSetWhenTheReaderEnds() throws {
        let fixtures = try sharedElfFixtures.get()
        // The largest debug file, copied so that no other test maps the same path meanwhile.
        let sized = try fixtures.accuracy.compactMap(\.debugFile).map { ($0, try fileSize($0)) }
        let source = try #require(sized.max { $0.1 < $1.1 }).0
        let scratch = try makeTemporaryDirectory(prefix: "resident-pages")
        let path = scratch + "/copy.debug"
        try FileManager.default.copyItem(atPath: source, toPath: path)

        let file = try DebugFile(path: path)
        file.indexAllUnits()
        let afterIndexing = try residentKilobytes(mapping: path)
        #expect(afterIndexing >= 8, "indexing \(source) left only \(afterIndexing) KiB of it resident: nothing to check")

        file.endDWARFReading()
        let afterEnd = try residentKilobytes(mapping: path)
        // All but the file's last page, which it fills only in part (a partial page may be
        // shared with other data, so it is never dropped).
        #expect(afterEnd * 1024 <= Int(sysconf(Int32(_SC_PAGESIZE))), "\(afterEnd) KiB of \(source) still resident after the reader ended (\(afterIndexing) KiB before)")

        // The answers still read their strings (DWARF names are pointers into the mapping):
        // every function's innermost name reads back, mapping pages in again.
        var named = 0
        for symbol in file.symbolsDescribedByDWARF.prefix(200) where file.frames(at: symbol.address).first?.symbol != nil { named += 1 }
        #expect(named > 0)
    }

    private func fileSize(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
    }

    /// The `Rss:` of every mapping of `path` in this process, in KiB, as the kernel counts it.
    private func residentKilobytes(mapping path: String) throws -> Int {
        // Read to its end: procfs files state no size, and reading by size stops at a page.
        let handle = try #require(FileHandle(forReadingAtPath: "/proc/self/smaps"))
        defer { try? handle.close() }
        let smaps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        var total = 0
        var inMapping = false
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let first = fields.first, first.contains("-"), fields.count >= 5 {
                inMapping = fields.count >= 6 && fields[5...].joined(separator: " ") == path
            } else if inMapping, fields.first == "Rss:", fields.count >= 2, let kb = Int(fields[1]) {
                total += kb
            }
        }
        return total
    }
}
