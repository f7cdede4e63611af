import Foundation
import ReportModel
import TestSupport
import Testing

/// `SymbolicatedReportJSON` writes by hand what a worker sends and the database stores; Foundation's
/// JSONEncoder (`.sortedKeys`, `.withoutEscapingSlashes`) is the oracle for every byte, over
/// reports that set and omit every field, with every kind of string and number.
@Suite struct SymbolicatedReportJSONTests {
    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()

    final class Maker {
        var rng = SeededGenerator(seed: 0x5EED_7E57)
        let names = [
            "main", "", String(decoding: (0..<0x80).map { UInt8($0) }, as: UTF8.self), "a/b\\c\"d",
            "Ünïcödé 名前 🧨", "\u{2028}\u{2029}\u{7f}", "$s4Demo6lookUpySiAA5OrderV_SitF", "std::vector<int>::at(unsigned long) const",
            "<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>",
        ]
        func maybe<T>(_ value: @autoclosure () -> T) -> T? { Bool.random(using: &rng) ? value() : nil }
        func name() -> String { names.randomElement(using: &rng)! }
        func int() -> Int { [0, 1, -1, 42, Int.max, Int.min, Int(Int32.max)].randomElement(using: &rng)! }
        func address() -> Address {
            Address([0, 1, 0xf, 0x10, 0xabc, 0x1000, 0x1_0000_0000, 0x0fed_cba9_8765_4321, UInt64.max, 0xffff_8000_0000_0000].randomElement(using: &rng)!)
        }
        func double() -> Double {
            [0, -0.0, 0.1, 1, 12.5, 1e15, 1e16, 1e20, 1e-7, 2.5e-5, 123456789.125, Double.leastNonzeroMagnitude, Double.greatestFiniteMagnitude]
                .randomElement(using: &rng)!
        }

        func frame() -> SymbolicatedFrame {
            SymbolicatedFrame(
                index: int(), address: address(), kind: Bool.random(using: &rng) ? .pc : .returnAddress, image: maybe(name()),
                imageOffset: maybe(address()),
                status: [.symbolicated, .noLineInfo, .missingDebugFile, .deviceSymbol, .noSymbol, .outsideAnyImage, .malformed]
                    .randomElement(using: &rng)!,
                symbol: maybe(name()), function: maybe(name()), offset: maybe(UInt64.random(in: 0...UInt64.max, using: &rng)),
                file: maybe(name()), line: maybe(int()), column: maybe(int()), inlined: Bool.random(using: &rng),
                inApp: maybe(Bool.random(using: &rng)))
        }

        func frames() -> [SymbolicatedFrame] { (0..<Int.random(in: 0...4, using: &rng)).map { _ in frame() } }

        func report() -> SymbolicatedReport {
            var lag: SymbolicatedLag?
            if Bool.random(using: &rng) {
                lag = SymbolicatedLag(
                    samples: (0..<Int.random(in: 0...3, using: &rng)).map { _ in SymbolicatedSample(timestamp: maybe(name()), frames: frames()) },
                    profile: (0..<Int.random(in: 0...3, using: &rng)).map { _ in
                        SymbolicatedProfileNode(
                            node: ProfileNode(depth: int(), count: int(), costTime: double(), address: maybe(address()), methodId: maybe(int())),
                            frames: frames())
                    })
            }
            return SymbolicatedReport(
                id: maybe(Int64(int())), format: name(), kind: Bool.random(using: &rng) ? .crash : .lag,
                status: [.complete, .partial, .unsymbolicated].randomElement(using: &rng)!,
                missingBuildIds: (0..<Int.random(in: 0...2, using: &rng)).map { _ in
                    BuildID(bytes: (0..<20).map { _ in UInt8.random(in: 0...255, using: &rng) })
                },
                app: maybe(AppInfo(name: maybe(name()), version: maybe(name()), build: maybe(name()))),
                os: maybe(name()), arch: maybe(Arch(name())), timestamp: maybe(name()),
                exception: maybe(ExceptionInfo(type: maybe(name()), signal: maybe(name()), code: maybe(name()), faultAddress: maybe(address()), message: maybe(name()))),
                images: (0..<Int.random(in: 0...3, using: &rng)).map { _ in
                    BinaryImage(
                        name: name(), path: maybe(name()), id: maybe(BuildID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) })),
                        arch: maybe(Arch(name())), loadAddress: address(), size: maybe(UInt64.random(in: 0...UInt64.max, using: &rng)),
                        vmAddress: maybe(address()))
                },
                imageSymbols: maybe((0..<Int.random(in: 0...3, using: &rng)).map { _ in
                    ImageSymbols(
                        image: int(), name: maybe(name()), buildId: maybe(BuildID(bytes: (0..<20).map { _ in UInt8.random(in: 0...255, using: &rng) })),
                        status: SymbolStatus.allCases.randomElement(using: &rng)!, detail: maybe(name()),
                        searched: maybe((0..<Int.random(in: 0...2, using: &rng)).map { _ in name() }))
                }),
                threads: (0..<Int.random(in: 0...3, using: &rng)).map { _ in
                    SymbolicatedThread(index: int(), name: maybe(name()), crashed: Bool.random(using: &rng), frames: frames(), part: maybe(name()))
                },
                lag: lag,
                annotations: maybe((0..<Int.random(in: 0...3, using: &rng)).map { _ in
                    ReportAnnotation(key: name(), value: name(), module: maybe(name()))
                }),
                warnings: (0..<Int.random(in: 0...2, using: &rng)).map { _ in name() })
        }
    }

    @Test func everyFieldMatchesJSONEncoderByteForByte() throws {
        let maker = Maker()
        for _ in 0..<2000 {
            let report = maker.report()
            let mine = Data(try SymbolicatedReportJSON.encode(report))
            let oracle = try Self.encoder.encode(report)
            #expect(mine == oracle, "\(String(decoding: mine, as: UTF8.self))\n\(String(decoding: oracle, as: UTF8.self))")
            #expect(try JSONDecoder().decode(SymbolicatedReport.self, from: mine) == report)
            if mine != oracle { break }
        }
    }

    @Test func refusesWhatJSONCannotHoldAsJSONEncoderDoes() {
        for bad in [Double.nan, .infinity, -.infinity] {
            let report = SymbolicatedReport(
                format: "lag", kind: .lag, status: .complete, missingBuildIds: [], threads: [],
                lag: SymbolicatedLag(profile: [SymbolicatedProfileNode(node: ProfileNode(depth: 0, count: 1, costTime: bad), frames: [])]))
            #expect(throws: SymbolicatedReportJSON.Failure.self) { try SymbolicatedReportJSON.encode(report) }
            #expect(throws: (any Error).self) { try Self.encoder.encode(report) }
        }
    }
}
