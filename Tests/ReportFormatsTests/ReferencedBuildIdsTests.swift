import Foundation
import ReportFormats
import ReportModel
import TestSupport
import Testing

/// `RawReport.referencedBuildIds` (what the queue stores for symbol affinity) checked against a
/// plain loop over each fixture's images and frame addresses, and on hand-made reports for the
/// parts of the frame → image rule real fixtures do not reach.
@Suite struct ReferencedBuildIdsTests {
    /// Every address the symbolicator looks up: thread frames, lag samples, profile nodes.
    static func addresses(_ report: RawReport) -> [UInt64] {
        var out = report.threads.flatMap(\.frames).filter { $0.malformed != true }.map(\.address.value)
        out += (report.lag?.samples ?? []).flatMap(\.frames).map(\.address.value)
        out += (report.lag?.profile ?? []).compactMap(\.address?.value)
        return out
    }

    /// The ids, in image order, of the images holding one of the addresses: by extent when the
    /// images have sizes, else the image starting nearest below (how unsized images are read).
    static func expectedIds(_ report: RawReport) -> [String] {
        let images = report.images
        var hit = Set<Int>()
        for address in addresses(report) {
            if images.allSatisfy({ ($0.size ?? 0) > 0 }) {
                for (i, image) in images.enumerated()
                where image.loadAddress.value <= address && address - image.loadAddress.value < image.size! {
                    hit.insert(i)
                }
            } else {
                #expect(images.allSatisfy { $0.size == nil }, "fixture mixes sized and unsized images")
                var best: Int?
                for (i, image) in images.enumerated() where image.loadAddress.value <= address {
                    if best == nil || image.loadAddress.value >= images[best!].loadAddress.value { best = i }
                }
                if let best { hit.insert(best) }
            }
        }
        var ids: [String] = []
        for (i, image) in images.enumerated() where hit.contains(i) {
            if let hex = image.id?.hex, !hex.isEmpty, !ids.contains(hex) { ids.append(hex) }
        }
        return ids
    }

    @Test(arguments: [
        "wild/apple-crash/multithread-test.crash", "wild/apple-crash/XCDYouTubeKit-54.txt",
        "wild/kscrash/raw.json", "fuzz-seeds/sdk-lag/documented-example.json",
    ])
    func listsExactlyTheImagesTheFramesFallIn(fixture: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: TestPaths.packageRoot + "/Tests/Fixtures/" + fixture))
        let report = try FormatRegistry.standard.detectAndParse(data)
        let expected = Self.expectedIds(report)
        #expect(!expected.isEmpty)
        // Some listed image is not referenced, so the list is not just "every id".
        #expect(expected.count < report.images.compactMap(\.id).count)
        #expect(report.referencedBuildIds.map(\.hex) == expected)
    }

    static func image(_ name: String, _ id: String?, at load: UInt64, size: UInt64? = 0x1000) throws -> BinaryImage {
        BinaryImage(name: name, id: try id.map { try BuildID($0) }, loadAddress: Address(load), size: size)
    }

    @Test func samplesAndProfileNodesCountAndIdsAreListedOnceInImageOrder() throws {
        let images = [
            try Self.image("a", "aa01", at: 0x1000), try Self.image("b", "bb01", at: 0x2000),
            try Self.image("c", "cc01", at: 0x3000), try Self.image("d", nil, at: 0x4000),
            try Self.image("e", "aa01", at: 0x5000),
        ]
        let report = RawReport(
            format: "test", kind: .lag, images: images,
            threads: [RawThread(index: 0, frames: [RawFrame(address: 0x4010, kind: .pc), RawFrame(address: 0x5010, kind: .returnAddress)])],
            lag: LagData(
                samples: [LagSample(frames: [RawFrame(address: 0x9999, kind: .pc), RawFrame(address: 0x1010, kind: .returnAddress)])],
                profile: [ProfileNode(depth: 0, count: 1, costTime: 1, address: 0x2020), ProfileNode(depth: 1, count: 1, costTime: 1, methodId: 3)]))
        #expect(report.referencedBuildIds.map(\.hex) == ["aa01", "bb01"])
    }

    @Test func attributionMalformedFramesAndEmptyIdsFollowTheSymbolicatorsRule() throws {
        var images = [try Self.image("a", "aa01", at: 0x1000), try Self.image("b", "bb01", at: 0x2000), try Self.image("c", "cc01", at: 0x3000)]
        images[2].id = try JSONDecoder().decode(BuildID.self, from: Data(#""""#.utf8))
        let frames = [
            // The report's own attribution wins over the address.
            RawFrame(address: 0x1010, kind: .pc, imageIndex: 1),
            // An index out of range falls back to the address (still image b here).
            RawFrame(address: 0x2010, kind: .returnAddress, imageIndex: 7),
            // A frame whose address could not be read points nowhere, whatever it claims.
            RawFrame(address: 0, kind: .returnAddress, imageIndex: 0, malformed: true),
            // Image c is referenced, but its id is empty.
            RawFrame(address: 0x3010, kind: .returnAddress),
        ]
        let report = RawReport(format: "test", kind: .crash, images: images, threads: [RawThread(index: 0, frames: frames)])
        let locator = ImageLocator(images: images)
        #expect(frames.map { report.imageIndex(of: $0, locator: locator) } == [1, 1, nil, 2])
        #expect(report.referencedBuildIds.map(\.hex) == ["bb01"])
    }

    @Test func applePointerAuthenticationBitsAreStrippedBeforeMatching() throws {
        let images = [try Self.image("app", "aa01", at: 0x1_0000_0000, size: 0x10000)]
        let signed: UInt64 = 0x8012_0001_0000_4010
        func report(arch: Arch, platform: String) -> RawReport {
            RawReport(
                format: "test", kind: .crash, platform: platform, arch: arch, images: images,
                threads: [RawThread(index: 0, frames: [RawFrame(address: Address(signed), kind: .returnAddress)])])
        }
        let apple = report(arch: "arm64e", platform: "iOS")
        #expect(apple.location(of: apple.threads[0].frames[0], locator: ImageLocator(images: images))
            == FrameLocation(imageIndex: 0, address: 0x1_0000_4010))
        #expect(apple.referencedBuildIds.map(\.hex) == ["aa01"])
        // Linux arm64 code lives above 2^36: nothing is masked, so the address is outside the image.
        #expect(report(arch: "arm64", platform: "Linux").referencedBuildIds == [])
    }
}
