import Foundation
import Testing
import TestSupport

/// Per-fixture outcome of comparing Stackline with the oracles over every instruction.
struct FixtureAgreement: Sendable {
    var name: String
    var addresses = 0
    var agreeing = 0  // function + file:line at every level, same number of levels
    var agreeingLLVM = 0  // of which with llvm-symbolizer itself (the rest via eu-addr2line)
    var columnsAgreeing = 0
    var symbolsAgreeing = 0  // raw linkage names vs llvm-symbolizer --no-demangle / eu-addr2line
    var oracleWithLine = 0  // addresses where llvm-symbolizer knows a file:line
    var oracleWithFunction = 0  // … and a function name
    var disagreements: [String] = []
    var columnDisagreements: [String] = []
    var symbolDisagreements: [String] = []

    var rate: Double { addresses == 0 ? 0 : Double(agreeing) / Double(addresses) }
    var columnRate: Double { addresses == 0 ? 0 : Double(columnsAgreeing) / Double(addresses) }
    var symbolRate: Double { addresses == 0 ? 0 : Double(symbolsAgreeing) / Double(addresses) }
}

func sameFunctionsAndLines(_ a: Answer, _ b: Answer) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { $0.function == $1.function && $0.file == $1.file && $0.line == $1.line }
}

/// eu-addr2line is only a second opinion where it knows as much as llvm-symbolizer: its
/// libdw (elfutils 0.188) finds no CU for code without .debug_aranges (clang and swiftc
/// emit none), and "??:0" there must not excuse a Stackline answer that is equally blank.
func asInformative(_ second: Answer, as first: Answer) -> Bool {
    let hasLine = { (a: Answer) in a.contains { $0.file != nil } }
    let hasName = { (a: Answer) in a.contains { $0.function != nil } }
    // Without a CU, eu-addr2line also gives no inline chain: fewer levels is knowing less.
    return !(hasLine(first) && !hasLine(second)) && !(hasName(first) && !hasName(second)) && second.count >= first.count
}

func sameNames(_ a: Answer, _ b: Answer) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { $0.function == $1.function }
}

func sameColumns(_ a: Answer, _ b: Answer) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { $0.column == $1.column }
}

let listCap = 30

func clip(_ s: String, _ n: Int = 160) -> String { s.count <= n ? s : String(s.prefix(n)) + "…" }

/// Where Stackline's answer first differs from an oracle's, in one line.
func difference(_ mine: Answer, _ other: Answer, _ oracle: String) -> String {
    func frame(_ f: Frame) -> String { "\(clip(f.function ?? "??")) @ \(f.file ?? "??"):\(f.line):\(f.column)" }
    if mine.isEmpty || other.isEmpty {
        return "stackline [\(mine.count) frames] \(mine.first.map(frame) ?? "??") / \(oracle) [\(other.count) frames] \(other.first.map(frame) ?? "??")"
    }
    for level in 0..<min(mine.count, other.count) {
        let a = mine[level], b = other[level]
        if a.function != b.function || a.file != b.file || a.line != b.line || a.column != b.column {
            return "level \(level) of \(mine.count)/\(other.count): stackline \(frame(a)) / \(oracle) \(frame(b))"
        }
    }
    if mine.count == other.count { return "same as \(oracle)" }
    let extra = mine.count > other.count ? "stackline has extra \(frame(mine[other.count]))" : "\(oracle) has extra \(frame(other[mine.count]))"
    return "levels stackline \(mine.count) vs \(oracle) \(other.count): \(extra)"
}

func percent(_ x: Double) -> String { String(format: "%.2f%%", x * 100) }

/// Compares Stackline's answers for every .text instruction of `fixture` with
/// llvm-symbolizer, falling back to eu-addr2line where they differ.
func measureAgreement(_ fixture: ElfFixture, store: String) throws -> FixtureAgreement {
    guard let buildID = fixture.buildID else { throw TestSupportError("\(fixture.name) has no build-id") }
    return try measureAgreement(
        name: fixture.name, file: fixture.unstripped, buildID: buildID,
        addresses: try instructionAddresses(in: fixture.unstripped), store: store)
}

/// Compares Stackline's answers at `addresses` of `file` (stored under `buildID` in `store`)
/// with llvm-symbolizer, falling back to eu-addr2line where they differ. Without
/// `secondOracle` (eu-addr2line reads no Mach-O), llvm-symbolizer alone decides; `file` may
/// then name a slice the way llvm-symbolizer does (`FILE:arm64`).
func measureAgreement(name: String, file unstripped: String, buildID: String, addresses: [UInt64], store: String, secondOracle: Bool = true) throws -> FixtureAgreement {
    let stackline = try StacklineLookup.lookup(store: store, buildID: buildID, addresses)

    // llvm-symbolizer answers twice: demangled by itself (-C), and raw (--no-demangle).
    // The raw names demangled by the contract's demanglers (Swift: swift-demangle, C++:
    // c++filt = __cxa_demangle's code) give the spelling Stackline is expected to print;
    // llvm's own spelling (Swift: swift-demangle with its default sugar) is accepted too.
    let llvmOwn = try SwiftDemangle.demangleSwiftNames(
        try LLVMSymbolizer.symbolize(unstripped, addresses, demangle: true), sugar: true)
    let llvmRaw = try LLVMSymbolizer.symbolize(unstripped, addresses, demangle: false)
    let llvm = try GNUDemangle.demangleCxxNames(try SwiftDemangle.demangleSwiftNames(llvmRaw))

    // Second opinion, only where llvm-symbolizer and Stackline differ.
    // The llvm-symbolizer answer to compare with: the one spelled like Stackline's, if any.
    let llvmAnswer = addresses.indices.map { i in
        sameFunctionsAndLines(stackline.demangled[i], llvm[i]) || !sameFunctionsAndLines(stackline.demangled[i], llvmOwn[i])
            ? llvm[i] : llvmOwn[i]
    }
    let suspects = addresses.indices.filter {
        !sameFunctionsAndLines(stackline.demangled[$0], llvmAnswer[$0]) || !sameColumns(stackline.demangled[$0], llvmAnswer[$0])
    }
    let euRawSuspects = try EuAddr2line.symbolize(unstripped, secondOracle ? suspects.map { addresses[$0] } : [], demangle: false)
    let eu = try GNUDemangle.demangleCxxNames(try SwiftDemangle.demangleSwiftNames(euRawSuspects))
    let euByIndex = Dictionary(uniqueKeysWithValues: zip(suspects, eu))
    let rawSuspects = secondOracle ? addresses.indices.filter { !sameNames(stackline.raw[$0], llvmRaw[$0]) } : []
    let euRaw = try EuAddr2line.symbolize(unstripped, rawSuspects.map { addresses[$0] }, demangle: false)
    let euRawByIndex = Dictionary(uniqueKeysWithValues: zip(rawSuspects, euRaw))

    var result = FixtureAgreement(name: name, addresses: addresses.count)
    result.oracleWithLine = llvm.filter { $0.contains { $0.file != nil } }.count
    result.oracleWithFunction = llvm.filter { $0.contains { $0.function != nil } }.count
    for i in addresses.indices {
        let mine = stackline.demangled[i]
        let second = euByIndex[i].flatMap { asInformative($0, as: llvmAnswer[i]) ? $0 : nil }
        let line = { "\(hex(addresses[i])): \(difference(mine, llvmAnswer[i], "llvm-symbolizer"))\n        vs eu-addr2line: \(euByIndex[i].map { difference(mine, $0, "eu-addr2line") } ?? "(not asked)")\(euByIndex[i] != nil && second == nil ? " (knows less than llvm-symbolizer: not used)" : "")" }
        if sameFunctionsAndLines(mine, llvmAnswer[i]) {
            result.agreeing += 1
            result.agreeingLLVM += 1
        } else if let second, sameFunctionsAndLines(mine, second) {
            result.agreeing += 1
        } else {
            result.disagreements.append(line())
        }
        if sameColumns(mine, llvmAnswer[i]) && sameFunctionsAndLines(mine, llvmAnswer[i])
            || second.map({ sameColumns(mine, $0) && sameFunctionsAndLines(mine, $0) }) == true
        {
            result.columnsAgreeing += 1
        } else if sameFunctionsAndLines(mine, llvmAnswer[i]) || second.map({ sameFunctionsAndLines(mine, $0) }) == true {
            result.columnDisagreements.append(line())
        }
        if sameNames(stackline.raw[i], llvmRaw[i])
            || euRawByIndex[i].map({ asInformative($0, as: llvmRaw[i]) && sameNames(stackline.raw[i], $0) }) == true
        {
            result.symbolsAgreeing += 1
        } else {
            let names = { (a: Answer?) in a.map { $0.isEmpty ? "??" : $0.map { $0.function ?? "??" }.joined(separator: " | ") } ?? "(none)" }
            result.symbolDisagreements.append(
                "\(hex(addresses[i])): stackline symbol: \(names(stackline.raw[i]))\n      llvm-symbolizer --no-demangle: \(names(llvmRaw[i]))\n      eu-addr2line: \(names(euRawByIndex[i]))")
        }
    }
    return result
}

func printReport(_ r: FixtureAgreement) {
    print("""
        [accuracy] \(r.name): \(r.agreeing)/\(r.addresses) addresses agree (\(percent(r.rate))); \
        \(r.agreeingLLVM) with llvm-symbolizer, \(r.agreeing - r.agreeingLLVM) only with eu-addr2line; \
        columns \(percent(r.columnRate)); raw symbols \(percent(r.symbolRate)); \
        llvm-symbolizer knew a function at \(percent(Double(r.oracleWithFunction) / Double(max(r.addresses, 1)))), \
        a file:line at \(percent(Double(r.oracleWithLine) / Double(max(r.addresses, 1))))
        """)
    for d in r.disagreements.prefix(listCap) { print("  DIFF \(d)") }
    if r.disagreements.count > listCap { print("  … \(r.disagreements.count - listCap) more disagreements") }
    for d in r.symbolDisagreements.prefix(10) { print("  SYMBOL \(d)") }
    if r.symbolDisagreements.count > 10 { print("  … \(r.symbolDisagreements.count - 10) more symbol disagreements") }
    for d in r.columnDisagreements.prefix(5) { print("  COLUMN \(d)") }
    if r.columnDisagreements.count > 5 { print("  … \(r.columnDisagreements.count - 5) more column disagreements") }
}

@Suite("Accuracy against llvm-symbolizer and eu-addr2line")
struct AccuracyTests {
    @Test("every .text instruction of every fixture symbolicates like the oracles (≥ 99%)")
    func agreementWithOracles() throws {
        let set = try sharedElfFixtures.get()
        let store = try makeTemporaryDirectory(prefix: "stackline-store")
        defer { try? FileManager.default.removeItem(atPath: store) }
        let fixtures = set.accuracy
        // Stripped binaries in one call, their debug files in another.
        for files in [fixtures.compactMap(\.stripped), fixtures.compactMap(\.debugFile)] {
            let added = try runStackline(["symbols", "add", "--symbols", store] + files)
            try #require(added.succeeded, "symbols add failed: \(added.summary)")
        }

        var results: [FixtureAgreement] = []
        for fixture in fixtures {
            let r = try measureAgreement(fixture, store: store)
            printReport(r)
            results.append(r)
        }
        let total = results.reduce(0) { $0 + $1.addresses }
        let agreeing = results.reduce(0) { $0 + $1.agreeing }
        let columns = results.reduce(0) { $0 + $1.columnsAgreeing }
        let symbols = results.reduce(0) { $0 + $1.symbolsAgreeing }
        let overall = Double(agreeing) / Double(max(total, 1))
        print("""
            [accuracy] OVERALL: \(agreeing)/\(total) addresses agree (\(percent(overall))) over \(results.count) fixtures; \
            columns \(percent(Double(columns) / Double(max(total, 1)))); \
            raw symbols \(percent(Double(symbols) / Double(max(total, 1))))
            """)
        #expect(overall >= 0.99, "overall agreement \(percent(overall)) is below 99%")
        for (fixture, r) in zip(fixtures, results) {
            // Agreement on "??" proves nothing: the oracle must actually know these addresses.
            let withFunction = Double(r.oracleWithFunction) / Double(max(r.addresses, 1))
            let withLine = Double(r.oracleWithLine) / Double(max(r.addresses, 1))
            // (Swift puts line 0 on much of its code, so the bar for lines is low.)
            #expect(withFunction >= 0.9, "\(r.name): llvm-symbolizer named a function at only \(percent(withFunction)) of addresses; is the oracle reading the right file?")
            if !fixture.name.contains("symtab-only") {
                #expect(withLine >= 0.1, "\(r.name): llvm-symbolizer knew a file:line at only \(percent(withLine)) of addresses; is the oracle reading the right file?")
            }
            #expect(r.rate >= 0.99, "\(r.name): agreement \(percent(r.rate)) is below 99% (\(r.disagreements.count) disagreements; see the DIFF lines)")
            #expect(r.symbolRate >= 0.99, "\(r.name): raw symbol agreement \(percent(r.symbolRate)) is below 99% (see the SYMBOL lines)")
        }
    }
}

@Suite("Accuracy on a large real binary")
struct LargeBinaryAccuracyTests {
    /// 20,000 evenly spaced instructions of the debug `stackline` binary itself (Swift with
    /// generics and closures, the static Swift packages it links, C shims): far more code
    /// shapes than the small fixtures.
    @Test("a sample of the debug stackline binary symbolicates like the oracles (≥ 99%)")
    func sampleOfDebugStackline() throws {
        let target = ProcessInfo.processInfo.environment["STACKLINE_ACCURACY_LARGE_BINARY"] ?? TestPaths.stackline
        try #require(FileManager.default.isExecutableFile(atPath: target), "no binary at \(target); run swift build")
        let all = try instructionAddresses(in: target)
        let count = min(20_000, all.count)
        let sample = (0..<count).map { all[$0 * all.count / count] }
        let notes = try runChecked("readelf", ["-n", target]).stdout
        let buildID = try #require(
            notes.split(separator: "\n").first { $0.contains("Build ID:") }.flatMap { $0.split(separator: " ").last.map(String.init) },
            "\(target) has no GNU build-id")
        let store = try makeTemporaryDirectory(prefix: "stackline-store")
        defer { try? FileManager.default.removeItem(atPath: store) }
        let added = try runStackline(["symbols", "add", "--symbols", store, target])
        try #require(added.succeeded, "symbols add failed: \(added.summary)")

        let r = try measureAgreement(name: "debug stackline (\(count) of \(all.count) instructions)", file: target, buildID: buildID, addresses: sample, store: store)
        printReport(r)
        #expect(Double(r.oracleWithFunction) / Double(max(r.addresses, 1)) >= 0.9, "llvm-symbolizer knew few functions: is it reading \(target)?")
        #expect(Double(r.oracleWithLine) / Double(max(r.addresses, 1)) >= 0.1, "llvm-symbolizer knew few lines: is it reading \(target)?")
        #expect(r.rate >= 0.99, "agreement \(percent(r.rate)) is below 99% (see the DIFF lines)")
        #expect(r.symbolRate >= 0.99, "raw symbol agreement \(percent(r.symbolRate)) is below 99% (see the SYMBOL lines)")
    }
}
