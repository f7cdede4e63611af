import Foundation
import ReportModel

/// KSCrash's JSON report (raw or processed): `binary_images`, `crash.threads[].backtrace`,
/// `crash.error`, `system`. Addresses are decimal integers up to 2^64−1, decoded exactly.
///
/// Besides crashes it reads the variants KSCrash writes with the same skeleton (docs/formats.md,
/// "KSCrash"): a main-thread hang (`crash.error.type: hang`) and a 2.x profile
/// (`crash.error.type: profile`) are lag reports; a termination with no threads and no images
/// (`memory_termination`, watchdog kills) is a crash with no stack; `recrash_report` ("handler
/// crashed while reporting") becomes threads of part `recrash`.
public struct KSCrashFormat: ReportFormat {
    public let id = "kscrash"

    /// The part label of the threads in `recrash_report`.
    public static let recrashPart = "recrash"

    public init() {}

    public func matches(_ data: Data) -> Bool {
        guard JSONText.looksLikeJSON(data) else { return false }
        if JSONText.head(data, contains: "\"binary_images\"") && JSONText.head(data, contains: "\"image_addr\"") { return true }
        // Termination and profile reports may carry no images; the `crash` object next to the
        // app's `system` block (or the `report` header's process name) is KSCrash's skeleton.
        return JSONText.head(data, contains: "\"crash\"")
            && (JSONText.head(data, contains: "\"CFBundleExecutable\"") || JSONText.head(data, contains: "\"process_name\""))
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        let file = try ExactJSON.decode(KSReport.self, from: data, format: id)
        var warnings = WarningLog()
        // A recrash file holds two reports: the crash and the handler's own crash. Which is
        // which depends on the writer (docs/formats.md, "KSCrash"); the report is the crash's.
        let (report, handler, crashIsInner) = Self.crashAndHandler(file)
        guard let crash = report.crash else {
            throw .invalidReport(format: id, reason: "crash: missing (expected crash.threads and crash.error)")
        }
        let binaryImages = report.binaryImages?.elements ?? handler?.binaryImages?.elements ?? []
        var images = binaryImages.map { image in
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
        // Profile reports (and reports cut short) name each frame's image only in the frame:
        // `object_name`, `object_addr`, `object_uuid`. Those become the images.
        var frameImages = FrameImages(listed: images)

        let error = crash.error
        let kind = error?.type
        var threads: [RawThread] = []
        for (position, thread) in ((crash.crashedThread.map { [$0] } ?? []) + (crash.threads?.elements ?? [])).enumerated() {
            threads.append(self.thread(thread, position: position, part: nil, images: &frameImages, warnings: &warnings))
        }
        Self.warnSkipped(report, label: crashIsInner ? "recrash_report." : "", warnings: &warnings)
        if file.recrashReport != nil, handler == nil {
            warnings.append("recrash_report holds no crash (KSCrash could not copy the crashed report): only the crash handler's own crash is shown")
        }
        if let handler, let recrash = handler.crash {
            // The handler's own crash: its threads keep their indices under their own part, and
            // never count as the report's crashed thread (the report proper says what crashed).
            let recrashThreads = (recrash.crashedThread.map { [$0] } ?? []) + (recrash.threads?.elements ?? [])
            for (position, thread) in recrashThreads.enumerated() {
                var parsed = self.thread(
                    thread, position: position, part: Self.recrashPart, images: &frameImages, warnings: &warnings)
                parsed.crashed = false
                threads.append(parsed)
            }
            Self.warnSkipped(handler, label: crashIsInner ? "" : "recrash_report.", warnings: &warnings)
            let what = [recrash.error?.mach?.exceptionName, recrash.error?.signal?.name].compactMap { $0 }.joined(separator: " ")
            warnings.append(
                "KSCrash's handler crashed while reporting\(what.isEmpty ? "" : " (\(what))"); its threads are part '\(Self.recrashPart)'")
        }

        var lag: LagData?
        switch kind {
        case "hang":
            // A hang caught while the main thread was still stuck: one sample of that thread.
            let main = threads.first { $0.crashed && $0.part == nil } ?? threads.first { $0.index == 0 && $0.part == nil }
            guard let main, !main.frames.isEmpty else {
                throw .invalidReport(format: id, reason: "crash.threads: a hang report without the hung main thread's backtrace")
            }
            lag = LagData(samples: [LagSample(frames: main.frames)])
        case "profile":
            guard let profile = error?.profile else {
                throw .invalidReport(format: id, reason: "crash.error.profile: missing in a profile report")
            }
            lag = try self.profile(profile, reportBytes: data.count, images: &frameImages, warnings: &warnings)
        default:
            if threads.allSatisfy({ $0.frames.isEmpty }) && error == nil {
                throw .invalidReport(format: id, reason: "crash.threads: missing or empty, and no crash.error")
            }
        }
        if let lag { try LagTree.validate(lag, format: id) }
        images += frameImages.images

        let system = report.system ?? handler?.system
        let crashInfo = Self.crashInfoMessages(binaryImages)
        let message = error?.reason ?? error?.nsexception?.reason ?? (crashInfo.isEmpty ? nil : crashInfo.joined(separator: "\n"))
        return RawReport(
            format: id, kind: lag == nil ? .crash : .lag, platform: system?.systemName,
            arch: system?.cpuArch.map { Arch($0) },
            app: AppInfo(
                name: system?.bundleExecutable ?? report.report?.processName ?? handler?.report?.processName,
                version: system?.bundleShortVersion, build: system?.bundleVersion),
            os: Self.os(system),
            device: DeviceInfo(model: system?.machine, osVersion: OSVersionNumber.of(system?.systemVersion), id: system?.deviceAppHash),
            timestamp: (report.report?.timestamp ?? handler?.report?.timestamp)?.text,
            exception: error.map { error in
                ExceptionInfo(
                    type: error.nsexception?.name ?? error.mach?.exceptionName ?? error.type, signal: error.signal?.name,
                    code: error.mach?.code?.text, faultAddress: error.address?.address, message: message)
            },
            images: images, threads: threads, lag: lag, warnings: warnings.all)
    }

    /// The crash and, in a recrash file, the handler's report. KSCrash 1.x's store merged the
    /// handler's minimal report into the crash's as `recrash_report`; KSCrash's C writer (and
    /// SentryCrash) writes the handler's minimal report at the top and copies the crash's file,
    /// cut where the second crash stopped it, into `recrash_report`. The handler's is the one of
    /// `report.type` "minimal", or the one with a `crashed_thread` and no `threads`.
    static func crashAndHandler(_ file: KSReport) -> (report: KSReport.Body, handler: KSReport.Body?, crashIsInner: Bool) {
        let top = file.body
        // When the crash's file could not be copied, KSCrash writes `{"error": "Invalid JSON
        // data: …", "json_data": PATH}` in its place: the handler's crash is all there is.
        guard let inner = file.recrashReport, inner.crash != nil else { return (top, nil, false) }
        func isHandlers(_ body: KSReport.Body) -> Bool {
            if let type = body.report?.type { return type == "minimal" }
            return body.crash?.crashedThread != nil && body.crash?.threads == nil
        }
        return isHandlers(top) && !isHandlers(inner) ? (inner, top, true) : (top, inner, false)
    }

    /// Entries a cut-short report left that are not what their list holds (a crash handler that
    /// crashed while writing leaves a bare key where a thread was): dropped, each list named once.
    static func warnSkipped(_ body: KSReport.Body, label: String, warnings: inout WarningLog) {
        let lists: [(String, Int)] = [
            ("binary_images", body.binaryImages?.skipped ?? 0), ("crash.threads", body.crash?.threads?.skipped ?? 0),
        ]
        for (name, skipped) in lists where skipped > 0 {
            warnings.append("\(label)\(name): \(skipped) entries are not objects (a report cut short) and were left out")
        }
    }

    /// The images' `__crash_info` messages, the Swift runtime's first: a Swift `fatalError`,
    /// `precondition` or `assert` message lives in `libswiftCore.dylib`'s (in
    /// `crash_info_message`, or `crash_info_message2` on newer systems), while other images
    /// (the simulator's `libsystem_sim_platform.dylib`) annotate every crash with their own
    /// text. sentry-cocoa reads libswiftCore's alone for the same reason; the others are kept
    /// after it, one a line, as notes. The runtime's `file:line: ` is dropped from each.
    static func crashInfoMessages(_ images: [KSReport.Image]) -> [String] {
        var swiftRuntime: [String] = [], others: [String] = []
        for image in images {
            let messages = [image.crashInfoMessage, image.crashInfoMessage2].compactMap { $0 }
                .map(SwiftRuntimeMessage.withoutLocation).filter { !$0.isEmpty }
            if image.name.map(ReportText.basename) == "libswiftCore.dylib" {
                swiftRuntime += messages
            } else {
                others += messages
            }
        }
        var seen = Set<String>()
        return (swiftRuntime + others).filter { seen.insert($0).inserted }
    }

    /// `iPhone OS 16.0 (20A362)`: name, version and the OS build, as Apple's reports write it.
    static func os(_ system: KSReport.System?) -> String? {
        guard let system else { return nil }
        var os = [system.systemName, system.systemVersion].compactMap { $0 }.joined(separator: " ")
        if let build = system.osVersion, !build.isEmpty { os += os.isEmpty ? build : " (\(build))" }
        return os.isEmpty ? nil : os
    }

    private func thread(
        _ thread: KSReport.Thread, position: Int, part: String?, images: inout FrameImages, warnings: inout WarningLog
    ) -> RawThread {
        let index = thread.index ?? position
        let label = part.map { "\($0) thread \(index)" } ?? "thread \(index)"
        if let skipped = thread.backtrace?.skipped, skipped > 0 {
            warnings.append("\(label): \(skipped) frames skipped by KSCrash")
        }
        if let skipped = thread.backtrace?.contents?.skipped, skipped > 0 {
            warnings.append("\(label): \(skipped) backtrace entries are not objects (a report cut short) and were left out")
        }
        let frames = (thread.backtrace?.contents?.elements ?? []).enumerated().map { i, frame in
            self.frame(frame, kind: i == 0 ? .pc : .returnAddress, context: "\(label) frame \(i)", images: &images, warnings: &warnings)
        }
        return RawThread(
            index: index, name: thread.name ?? thread.dispatchQueue, crashed: thread.crashed ?? false, frames: frames, part: part)
    }

    /// A frame with the name the device resolved (`symbol_name`), exactly as given, and its
    /// offset `instruction_addr − symbol_addr` when the symbol starts at or below the address.
    private func frame(
        _ frame: KSReport.Frame, kind: FrameKind, context: @autoclosure () -> String, images: inout FrameImages,
        warnings: inout WarningLog
    ) -> RawFrame {
        var raw = frame.instructionAddr.frame(kind: kind, context: context(), warnings: &warnings)
        if let name = frame.symbolName, !name.isEmpty {
            raw.symbol = name
            if let start = frame.symbolAddr?.address.value, raw.malformed != true, raw.address.value >= start {
                raw.symbolOffset = raw.address.value - start
            }
        }
        raw.imageIndex = images.index(of: frame, warnings: &warnings)
        return raw
    }

    /// A 2.x profile: unique frames once, samples as indexes into them (deepest call first);
    /// a multi-thread profile (a hang) keeps its primary thread's samples, each repeated `count` times.
    private func profile(
        _ profile: KSReport.Profile, reportBytes: Int, images: inout FrameImages, warnings: inout WarningLog
    ) throws(ReportParseError) -> LagData {
        let table = profile.frames ?? []
        var samples: [KSReport.ProfileSample]
        if let threads = profile.threads, !threads.isEmpty {
            let primary = threads.first { $0.primary == true } ?? threads[0]
            samples = primary.samples ?? []
        } else {
            samples = profile.samples ?? []
        }
        var lagSamples: [LagSample] = []
        var lagFrames = 0
        // Copies are bounded by the frame limit and by the report's own size, so a few bytes of
        // `count` cannot make a report thousands of times larger than what was sent.
        let (perByte, perByteOverflow) = reportBytes.multipliedReportingOverflow(by: ReportLimits.maxRepeatedFramesPerByte)
        let maxCopied = perByteOverflow ? ReportLimits.maxFrames : min(ReportLimits.maxFrames, perByte)
        for (n, sample) in samples.enumerated() {
            var frames: [RawFrame] = []
            for (i, index) in (sample.frames ?? []).enumerated() {
                let kind: FrameKind = i == 0 ? .pc : .returnAddress
                guard table.indices.contains(index) else {
                    warnings.append("profile sample \(n) frame \(i): index \(index) names no entry of profile.frames; frame marked malformed")
                    frames.append(RawFrame(address: 0, kind: kind, malformed: true))
                    continue
                }
                frames.append(frame(table[index], kind: kind, context: "profile frame \(index)", images: &images, warnings: &warnings))
            }
            let repeats = max(1, sample.count ?? 1)
            // Compared before adding: `count` is any Int the report wrote, `lagSamples.count` at most the limit.
            guard repeats <= ReportLimits.maxLagSamples - lagSamples.count else {
                throw .overLimit(
                    "profile sample \(n): count \(repeats) brings the samples (counted with their repeats) past the limit of \(ReportLimits.maxLagSamples)")
            }
            // The repeats are copies: their frames count against the report's frame limit before
            // they are made, so a few bytes of `count` cannot build more than the limit allows.
            let (copied, overflow) = frames.count.multipliedReportingOverflow(by: repeats)
            guard !overflow, copied <= maxCopied - lagFrames else {
                throw .overLimit(
                    "profile sample \(n): \(frames.count) frames repeated \(repeats) times bring the samples past \(maxCopied) frames "
                        + "(\(ReportLimits.maxRepeatedFramesPerByte) a byte of the report's \(reportBytes), at most \(ReportLimits.maxFrames))")
            }
            lagFrames += copied  // overflow: compared with the limit just above
            let timestamp = sample.timeStartUptime.map { "uptime \($0) ns" }
            lagSamples += Array(repeating: LagSample(timestamp: timestamp, frames: frames), count: repeats)
        }
        guard !lagSamples.isEmpty else {
            throw .invalidReport(format: id, reason: "crash.error.profile: no samples")
        }
        return LagData(samples: lagSamples)
    }
}

/// Images made from the frames themselves (`object_name`, `object_addr`, `object_uuid`), for
/// reports without `binary_images`, and for frames in an image the list leaves out (a recrash
/// copies the crash's report cut short, often inside `binary_images`); one image per load
/// address, in order of first use, numbered after the listed images.
struct FrameImages {
    private(set) var images: [BinaryImage] = []
    /// Load addresses of the listed images: frames in them are matched by address, as before.
    private let listed: Set<UInt64>
    private let firstIndex: Int
    private var byAddress: [UInt64: Int] = [:]

    init(listed: [BinaryImage]) {
        self.listed = Set(listed.map(\.loadAddress.value))
        firstIndex = listed.count
    }

    mutating func index(of frame: KSReport.Frame, warnings: inout WarningLog) -> Int? {
        guard let base = frame.objectAddr?.address, !listed.contains(base.value) else { return nil }
        if let known = byAddress[base.value] { return known }
        let name = frame.objectName ?? "???"
        images.append(BinaryImage(
            name: name, id: BuildID.reported(frame.objectUUID, image: name, lengths: .appleReport, warnings: &warnings),
            loadAddress: base))
        // overflow: both terms count images in memory, far below Int.max
        byAddress[base.value] = firstIndex + images.count - 1
        return byAddress[base.value]
    }
}

/// The parts of a KSCrash report Stackline reads.
struct KSReport: Decodable {
    struct Info: Decodable {
        var processName: String?
        var timestamp: JSONLooseString?
        /// `standard`, or `minimal` for the report a crashed crash handler writes.
        var type: String?
        enum CodingKeys: String, CodingKey {
            case processName = "process_name"
            case timestamp, type
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
        /// The image's `__crash_info` messages (e.g. the Swift runtime's `Fatal error: …`).
        var crashInfoMessage: String?
        var crashInfoMessage2: String?
        enum CodingKeys: String, CodingKey {
            case imageAddr = "image_addr", imageVmaddr = "image_vmaddr", imageSize = "image_size"
            case name, uuid, cpuType = "cpu_type", cpuSubtype = "cpu_subtype"
            case crashInfoMessage = "crash_info_message", crashInfoMessage2 = "crash_info_message2"
        }
    }

    struct System: Decodable {
        var systemName: String?
        var systemVersion: String?
        /// The OS build, e.g. `20A362`.
        var osVersion: String?
        var cpuArch: String?
        var bundleExecutable: String?
        var bundleShortVersion: String?
        var bundleVersion: String?
        /// The hardware model, e.g. `iPhone15,2`.
        var machine: String?
        /// KSCrash's anonymous per-device key.
        var deviceAppHash: String?
        enum CodingKeys: String, CodingKey {
            case systemName = "system_name", systemVersion = "system_version", osVersion = "os_version"
            case machine, deviceAppHash = "device_app_hash"
            case cpuArch = "cpu_arch"
            case bundleExecutable = "CFBundleExecutable", bundleShortVersion = "CFBundleShortVersionString"
            case bundleVersion = "CFBundleVersion"
        }
    }

    struct Frame: Decodable {
        var instructionAddr: JSONFrameAddress
        var symbolName: String?
        var symbolAddr: JSONAddress?
        var objectName: String?
        var objectAddr: JSONAddress?
        var objectUUID: String?
        enum CodingKeys: String, CodingKey {
            case instructionAddr = "instruction_addr", symbolName = "symbol_name", symbolAddr = "symbol_addr"
            case objectName = "object_name", objectAddr = "object_addr", objectUUID = "object_uuid"
        }
    }

    struct Backtrace: Decodable {
        var contents: LossyList<Frame>?
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

    struct ProfileSample: Decodable {
        var timeStartUptime: UInt64?
        var count: Int?
        var frames: [Int]?
        enum CodingKeys: String, CodingKey { case timeStartUptime = "time_start_uptime", count, frames }
    }

    struct ProfileThread: Decodable {
        var primary: Bool?
        var samples: [ProfileSample]?
    }

    struct Profile: Decodable {
        var frames: [Frame]?
        var samples: [ProfileSample]?
        var threads: [ProfileThread]?
    }

    struct ErrorInfo: Decodable {
        struct Mach: Decodable {
            var exceptionName: String?
            var code: JSONLooseString?
            enum CodingKeys: String, CodingKey { case exceptionName = "exception_name", code }
        }
        struct Signal: Decodable { var name: String? }
        struct NSException: Decodable {
            var name: String?
            var reason: String?
        }
        var type: String?
        var reason: String?
        var address: JSONAddress?
        var mach: Mach?
        var signal: Signal?
        var nsexception: NSException?
        var profile: Profile?
    }

    struct Crash: Decodable {
        var threads: LossyList<Thread>?
        /// `recrash_report` holds the handler's crashed thread alone.
        var crashedThread: Thread?
        var error: ErrorInfo?
        enum CodingKeys: String, CodingKey { case threads, crashedThread = "crashed_thread", error }
    }

    /// What the top of a report and its `recrash_report` both hold.
    struct Body: Decodable {
        var report: Info?
        var binaryImages: LossyList<Image>?
        var system: System?
        var crash: Crash?
        enum CodingKeys: String, CodingKey {
            case report, binaryImages = "binary_images", system, crash
        }
    }

    var body: Body
    var recrashReport: Body?
    enum CodingKeys: String, CodingKey { case recrashReport = "recrash_report" }

    init(from decoder: any Decoder) throws {
        body = try Body(from: decoder)
        recrashReport = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(Body.self, forKey: .recrashReport)
    }
}

/// A JSON array whose entries that are not `Element` objects are counted and left out: a report
/// KSCrash copied after its handler crashed mid-write ends lists with whatever key was being
/// written (`"exception"` in a list of threads). Anything else wrong inside an object still
/// fails the decode as usual.
struct LossyList<Element: Decodable>: Decodable {
    var elements: [Element] = []
    var skipped = 0

    /// One entry: an `Element` when it is an object (whose errors are reported as usual), else
    /// nothing.
    private enum Entry: Decodable {
        case element(Element)
        case notAnObject

        init(from decoder: any Decoder) throws {
            guard (try? decoder.container(keyedBy: AnyKey.self)) != nil else {
                self = .notAnObject
                return
            }
            self = .element(try Element(from: decoder))
        }
    }

    init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        while !container.isAtEnd {
            switch try container.decode(Entry.self) {
            case .element(let element): elements.append(element)
            case .notAnObject: skipped += 1
            }
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
