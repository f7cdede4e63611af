import DebugInfo
import Foundation
import TestSupport
import Testing

/// A symcache build indexes a file's units on two threads, the later half through a second
/// reader with its own string table (issue 31). Its answers must be the ones a file indexed
/// on one thread gives, at every address where an answer may change and just after it (the
/// one-thread path is what AccuracyTests hold to llvm-symbolizer).
@Suite struct TwoThreadIndexTests {
    @Test func unitsIndexedOnTwoThreadsAnswerAsOnOne() throws {
        // Six units, each with inlined calls and a name the others also define (static).
        let scratch = try makeTemporaryDirectory(prefix: "two-thread-index")
        var sources: [String] = []
        for unit in 0..<6 {
            let source = "\(scratch)/unit\(unit).c"
            try """
            static int helper(int x) { return x * \(unit + 3) + (x >> 2); }
            static inline int twice(int x) { return helper(x) + helper(x + 1); }
            int entry\(unit)(int x) { int s = 0; for (int i = 0; i < x; i++) s += twice(i) ^ twice(s); return s; }
            \(unit == 0 ? "int main(int argc, char **argv) { return entry0(argc) + entry1(argc) + entry2(argc) + entry3(argc) + entry4(argc) + entry5(argc); }" : "")
            """.write(toFile: source, atomically: true, encoding: .utf8)
            sources.append(source)
        }
        let path = "\(scratch)/program"
        _ = try runChecked("gcc", ["-g", "-O2"] + sources + ["-o", path])

        let twoThreads = try DebugFile(path: path)
        #expect(twoThreads.unitCount >= 6)
        twoThreads.endDWARFReading()
        #expect(twoThreads.indexedOnTwoThreads)

        let oneThread = try DebugFile(path: path)
        oneThread.indexAllUnits()
        let boundaries = Array(oneThread.answerBoundaries())
        #expect(Array(twoThreads.answerBoundaries()) == boundaries)
        var named = 0
        for address in boundaries.flatMap({ [$0, $0 &+ 1] }) {
            let expected = oneThread.frames(at: address)
            #expect(twoThreads.frames(at: address) == expected, "at 0x\(String(address, radix: 16))")
            if expected.contains(where: { $0.symbol?.hasPrefix("entry") == true }) { named += 1 }
        }
        #expect(named > 20)
    }
}
