import Foundation
import ReportModel

/// The SDK's lag (main-thread hang) report: `dyld_images` plus main-thread stack `samples`
/// and/or a `thread_profile` tree (docs/formats.md, "SDK lag report"). The exact schema is in docs/formats.md.
public struct LagReportFormat: ReportFormat {
    public let id = "sdk-lag"

    public init() {}

    public func matches(_ data: Data) -> Bool {
        JSONText.looksLikeJSON(data) && JSONText.head(data, contains: "\"dyld_images\"")
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        let report = try ExactJSON.decode(LagJSON.self, from: data, format: id)
        if let type = report.type, type != "lag" {
            throw .invalidReport(format: id, reason: "type: expected \"lag\", found \"\(type)\"")
        }
        var warnings = WarningLog()
        var images: [BinaryImage] = []
        for (i, image) in report.dyldImages.enumerated() {
            let name = ReportText.basename(image.name)
            var vmAddress: Address?
            if let slide = image.addrSlide?.address {
                // The slide is how far the image moved from its preferred base.
                guard slide.value <= image.baseAddr.address.value else {
                    throw .invalidReport(format: id, reason: "dyld_images[\(i)]: addr_slide \(slide) exceeds base_addr \(image.baseAddr.address)")
                }
                vmAddress = Address(image.baseAddr.address.value - slide.value)
            }
            images.append(BinaryImage(
                name: name, path: image.name,
                id: BuildID.reported(image.uuid, image: name, lengths: .appleReport, warnings: &warnings),
                arch: (image.arch ?? report.arch).map { Arch($0) }, loadAddress: image.baseAddr.address, size: image.size, vmAddress: vmAddress))
        }
        guard !images.isEmpty else { throw .invalidReport(format: id, reason: "dyld_images: empty") }
        let samples = (report.samples ?? []).enumerated().map { s, sample in
            LagSample(
                timestamp: sample.timestamp,
                // The first address is where the main thread was; the others are return addresses.
                frames: sample.frames.enumerated().map { i, address in
                    address.frame(kind: i == 0 ? .pc : .returnAddress, context: "samples[\(s)][\(i)]", warnings: &warnings)
                })
        }
        let profile = (report.threadProfile ?? []).map { node in
            ProfileNode(
                depth: node.depth, count: node.count, costTime: node.costTime, address: node.methodAddress?.address,
                methodId: node.methodId)
        }
        guard !samples.isEmpty || !profile.isEmpty else {
            throw .invalidReport(format: id, reason: "neither samples nor thread_profile: nothing to symbolicate")
        }
        let lag = LagData(samples: samples, profile: profile)
        try LagTree.validate(lag, format: id)
        return RawReport(
            // `dyld_images` only exist on Apple platforms; the seed's reports name no platform.
            format: id, kind: .lag, platform: report.platform ?? "iOS", arch: report.arch.map { Arch($0) },
            app: report.app.map { AppInfo(name: $0.name, version: $0.version, build: $0.build) }, os: report.os,
            timestamp: report.timestamp?.text, images: images, threads: [],
            lag: lag, warnings: warnings.all)
    }
}

/// The lag report as the SDK uploads it.
struct LagJSON: Decodable {
    struct App: Decodable {
        var name: String?
        var version: String?
        var build: String?
    }
    struct Image: Decodable {
        var name: String
        var uuid: String?
        var baseAddr: JSONAddress
        var addrSlide: JSONAddress?
        var size: UInt64?
        var arch: String?
        enum CodingKeys: String, CodingKey {
            case name, uuid, baseAddr = "base_addr", addrSlide = "addr_slide", size, arch
        }
    }
    /// A sample is either a bare list of addresses or `{"timestamp", "frames"}`.
    struct Sample: Decodable {
        var timestamp: String?
        var frames: [JSONFrameAddress]
        enum CodingKeys: String, CodingKey { case timestamp, frames }
        init(from decoder: Decoder) throws {
            if let list = try? decoder.singleValueContainer().decode([JSONFrameAddress].self) {
                frames = list
                return
            }
            let container = try decoder.container(keyedBy: CodingKeys.self)
            timestamp = try container.decodeIfPresent(JSONLooseString.self, forKey: .timestamp)?.text
            frames = try container.decode([JSONFrameAddress].self, forKey: .frames)
        }
    }
    struct Node: Decodable {
        var depth: Int
        var count: Int
        var costTime: Double
        var methodId: Int?
        var methodAddress: JSONAddress?
    }
    var type: String?
    var platform: String?
    var arch: String?
    var os: String?
    var timestamp: JSONLooseString?
    var app: App?
    var dyldImages: [Image]
    var samples: [Sample]?
    var threadProfile: [Node]?
    enum CodingKeys: String, CodingKey {
        case type, platform, arch, os, timestamp, app, dyldImages = "dyld_images", samples
        case threadProfile = "thread_profile"
    }
}
