import Foundation
import ReportModel

/// KSCrash's JSON report (raw or processed): `binary_images`, `crash.threads[].backtrace`,
/// `crash.error`, `system`. Addresses are decimal integers up to 2^64−1, decoded exactly.
public struct KSCrashFormat: ReportFormat {
    public let id = "kscrash"

    public init() {}

    public func matches(_ data: Data) -> Bool {
        JSONText.looksLikeJSON(data) && JSONText.head(data, contains: "\"binary_images\"")
            && JSONText.head(data, contains: "\"image_addr\"")
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        let report = try ExactJSON.decode(KSReport.self, from: data, format: id)
        var warnings = WarningLog()
        let images = (report.binaryImages ?? []).map { image in
            let path = image.name
            let name = path.map(ReportText.basename) ?? "???"
            return BinaryImage(
                name: name, path: path,
                id: BuildID.reported(image.uuid, image: name, lengths: .appleReport, warnings: &warnings),
                arch: image.cpuType.map { Arch(machOCPUType: $0, subtype: image.cpuSubtype ?? 0) },
                loadAddress: image.imageAddr.address, size: image.imageSize,
                // Absent means "not reported": the debug file's __TEXT.vmaddr is used instead.
                vmAddress: image.imageVmaddr?.address)
        }
        guard let crash = report.crash else {
            throw .invalidReport(format: id, reason: "crash: missing (expected crash.threads and crash.error)")
        }
        var threads: [RawThread] = []
        for (position, thread) in (crash.threads ?? []).enumerated() {
            let index = thread.index ?? position
            let contents = thread.backtrace?.contents ?? []
            if let skipped = thread.backtrace?.skipped, skipped > 0 {
                warnings.append("thread \(index): \(skipped) frames skipped by KSCrash")
            }
            let frames = contents.enumerated().map { i, frame in
                frame.instructionAddr.frame(
                    kind: i == 0 ? .pc : .returnAddress, context: "thread \(index) frame \(i)", warnings: &warnings)
            }
            threads.append(RawThread(
                index: index, name: thread.name ?? thread.dispatchQueue, crashed: thread.crashed ?? false, frames: frames))
        }
        guard !threads.isEmpty else {
            throw .invalidReport(format: id, reason: "crash.threads: missing or empty")
        }
        let error = crash.error
        let system = report.system
        let os = [system?.systemName, system?.systemVersion].compactMap { $0 }.joined(separator: " ")
        return RawReport(
            format: id, kind: .crash, platform: system?.systemName, arch: system?.cpuArch.map { Arch($0) },
            app: AppInfo(
                name: system?.bundleExecutable ?? report.report?.processName,
                version: system?.bundleShortVersion, build: system?.bundleVersion),
            os: os.isEmpty ? nil : os, timestamp: report.report?.timestamp?.text,
            exception: error.map { error in
                ExceptionInfo(
                    type: error.mach?.exceptionName ?? error.type, signal: error.signal?.name,
                    code: error.mach?.code?.text, faultAddress: error.address?.address,
                    message: error.reason ?? error.nsexception?.reason)
            },
            images: images, threads: threads, warnings: warnings.all)
    }
}

/// The parts of a KSCrash report Stackline reads.
struct KSReport: Decodable {
    struct Info: Decodable {
        var processName: String?
        var timestamp: JSONLooseString?
        enum CodingKeys: String, CodingKey {
            case processName = "process_name"
            case timestamp
        }
    }

    struct Image: Decodable {
        var imageAddr: JSONAddress
        var imageVmaddr: JSONAddress?
        var imageSize: UInt64?
        var name: String?
        var uuid: String?
        var cpuType: Int64?
        var cpuSubtype: Int64?
        enum CodingKeys: String, CodingKey {
            case imageAddr = "image_addr", imageVmaddr = "image_vmaddr", imageSize = "image_size"
            case name, uuid, cpuType = "cpu_type", cpuSubtype = "cpu_subtype"
        }
    }

    struct System: Decodable {
        var systemName: String?
        var systemVersion: String?
        var cpuArch: String?
        var bundleExecutable: String?
        var bundleShortVersion: String?
        var bundleVersion: String?
        enum CodingKeys: String, CodingKey {
            case systemName = "system_name", systemVersion = "system_version", cpuArch = "cpu_arch"
            case bundleExecutable = "CFBundleExecutable", bundleShortVersion = "CFBundleShortVersionString"
            case bundleVersion = "CFBundleVersion"
        }
    }

    struct Frame: Decodable {
        var instructionAddr: JSONFrameAddress
        enum CodingKeys: String, CodingKey { case instructionAddr = "instruction_addr" }
    }

    struct Backtrace: Decodable {
        var contents: [Frame]?
        var skipped: Int?
    }

    struct Thread: Decodable {
        var index: Int?
        var name: String?
        var dispatchQueue: String?
        var crashed: Bool?
        var backtrace: Backtrace?
        enum CodingKeys: String, CodingKey {
            case index, name, dispatchQueue = "dispatch_queue", crashed, backtrace
        }
    }

    struct ErrorInfo: Decodable {
        struct Mach: Decodable {
            var exceptionName: String?
            var code: JSONLooseString?
            enum CodingKeys: String, CodingKey { case exceptionName = "exception_name", code }
        }
        struct Signal: Decodable { var name: String? }
        struct NSException: Decodable { var reason: String? }
        var type: String?
        var reason: String?
        var address: JSONAddress?
        var mach: Mach?
        var signal: Signal?
        var nsexception: NSException?
    }

    struct Crash: Decodable {
        var threads: [Thread]?
        var error: ErrorInfo?
    }

    var report: Info?
    var binaryImages: [Image]?
    var system: System?
    var crash: Crash?
    enum CodingKeys: String, CodingKey {
        case report, binaryImages = "binary_images", system, crash
    }
}
