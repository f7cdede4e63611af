import Foundation
import ReportModel

/// Apple's MetricKit diagnostics: an `MXDiagnosticPayload` (`crashDiagnostics`, `hangDiagnostics`,
/// `cpuExceptionDiagnostics`, `diskWriteExceptionDiagnostics`, `appLaunchDiagnostics`) or one
/// diagnostic's own `jsonRepresentation()` (`callStackTree` + `diagnosticMetaData`).
///
/// A payload holding several diagnostics is split into one document each (`split`). Crashes
/// become crash reports (one thread per call stack, the root frame on top); hangs become lag
/// reports whose call tree (the root is the outermost frame, `sampleCount` per node) is the lag
/// profile. CPU, disk-write and launch diagnostics are refused by name. Frames carry no load
/// address, only `offsetIntoBinaryTextSegment`, so images are laid out as docs/formats.md says.
public struct MetricKitFormat: ReportFormat {
    public let id = "metrickit"

    public init() {}

    public func matches(_ data: Data) -> Bool {
        JSONText.looksLikeJSON(data) && JSONText.head(data, contains: "\"callStackTree\"")
            && (JSONText.head(data, contains: "Diagnostics\"") || JSONText.head(data, contains: "\"diagnosticMetaData\""))
    }

    public func split(_ data: Data) -> [Data] {
        guard let document = try? MetricKitDocument.read(data), document.diagnostics.count > 1 else { return [data] }
        return document.diagnostics.map { document.standalone($0) }
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        let document = try MetricKitDocument.read(data)
        guard let first = document.diagnostics.first else {
            throw .invalidReport(format: id, reason: "no diagnostics: every *Diagnostics array is empty")
        }
        var warnings = WarningLog()
        var chosen = first
        if document.diagnostics.count > 1 {
            chosen = document.diagnostics.first { $0.kind == .crash || $0.kind == .hang } ?? first
            warnings.append(
                "the payload holds \(document.diagnostics.count) diagnostics; this is the first crash or hang (submit stores each on its own)")
        }
        var reader = MetricKitReport(format: id, document: document, warnings: warnings)
        return try reader.report(for: chosen)
    }
}

/// What one diagnostic is; all but crashes and hangs are refused with their name.
enum MetricKitKind: Equatable {
    case crash, hang, cpuException, diskWriteException, appLaunch
    case other(String)

    init(section: String) {
        switch section {
        case "crashDiagnostics": self = .crash
        case "hangDiagnostics": self = .hang
        case "cpuExceptionDiagnostics": self = .cpuException
        case "diskWriteExceptionDiagnostics": self = .diskWriteException
        case "appLaunchDiagnostics": self = .appLaunch
        default: self = .other(section)
        }
    }

    /// A lone diagnostic (`MXCrashDiagnostic.jsonRepresentation()`) names no section; its metadata says what it is.
    init(metadata: [String: String]) {
        if metadata["hangDuration"] != nil { self = .hang }
        else if metadata["totalCPUTime"] != nil { self = .cpuException }
        else if metadata["writesCaused"] != nil { self = .diskWriteException }
        else if metadata["launchDuration"] != nil { self = .appLaunch }
        else { self = .crash }
    }

    var section: String {
        switch self {
        case .crash: "crashDiagnostics"
        case .hang: "hangDiagnostics"
        case .cpuException: "cpuExceptionDiagnostics"
        case .diskWriteException: "diskWriteExceptionDiagnostics"
        case .appLaunch: "appLaunchDiagnostics"
        case .other(let name): name
        }
    }

    /// Why a diagnostic that is not a crash or hang is not stored.
    var refusal: String {
        switch self {
        case .crash, .hang: ""
        case .cpuException: "a MetricKit CPU exception diagnostic (too much CPU time) is a resource report, not a crash or hang; Stackline keeps crashes and hangs"
        case .diskWriteException: "a MetricKit disk-write exception diagnostic (too many bytes written) is a resource report, not a crash or hang; Stackline keeps crashes and hangs"
        case .appLaunch: "a MetricKit app-launch diagnostic (a slow launch) is not a crash or hang; Stackline keeps crashes and hangs"
        case .other(let name): "MetricKit \(name) are not crashes or hangs; Stackline keeps crashes and hangs"
        }
    }
}

/// One frame of a call tree, as written; `depth` counts the frames above it in its tree.
struct MetricKitFrame {
    var depth: Int
    var uuid: String?
    var name: String?
    var offset: String?
    var address: String?
    var sampleCount: String?
}

/// One call stack: a thread (crashes) or a sampled tree (hangs), its frames in pre-order.
struct MetricKitStack {
    var attributed: Bool?
    var frames: [MetricKitFrame] = []
}

/// One diagnostic and where it lies in the document.
struct MetricKitDiagnostic {
    var kind: MetricKitKind
    var range: Range<Int>
    var stacks: [MetricKitStack] = []
    var metadata: [String: String] = [:]
    /// `exceptionReason` / `objectiveCexceptionReason` (iOS 17+).
    var reason: [String: String] = [:]
}

/// The diagnostics of a document, read in one pass of `JSONEventReader`.
struct MetricKitDocument {
    var bytes: [UInt8]
    var diagnostics: [MetricKitDiagnostic] = []
    var timeStampBegin: String?
    var timeStampEnd: String?
    /// The timestamps' JSON text, copied as written into each split part.
    var timeStampText: [(key: String, text: Range<Int>)] = []

    private enum Node {
        case root, payload, section(MetricKitKind), diagnostic, tree, callStacks, callStack, frameList(Int)
        /// A frame at a depth, and its index in its stack: its name and address follow its subFrames.
        case frame(Int, index: Int)
        case metadata, reason, ignored
    }

    /// A call tree nests two levels per frame; past this many frames per stack the report is over
    /// `ReportLimits` anyway, so the bound only stops a pathological document early.
    static let maxDepth = 2 * ReportLimits.maxFramesPerThread + 16

    static func read(_ data: Data) throws(ReportParseError) -> MetricKitDocument {
        try JSONPreflight.check(data, maxDepth: maxDepth)
        var reader = JSONEventReader(data)
        var document = MetricKitDocument(bytes: reader.bytes)
        // One entry per open container: what it is, the key its next child sits under.
        var stack: [(node: Node, key: String?)] = [(.root, nil)]
        var lone: MetricKitDiagnostic?  // a document that is itself one diagnostic
        var current: MetricKitDiagnostic?

        func withDiagnostic(_ body: (inout MetricKitDiagnostic) -> Void) {
            if current != nil { body(&current!) } else {
                if lone == nil { lone = MetricKitDiagnostic(kind: .crash, range: 0..<reader.bytes.count) }
                body(&lone!)
            }
        }

        while let event = try reader.next() {
            let parent = stack[stack.count - 1]
            switch event {
            case .key(let key):
                stack[stack.count - 1].key = key
            case .beginObject, .beginArray:
                let isObject = event == .beginObject
                let child: Node
                switch (parent.node, parent.key, isObject) {
                case (.root, _, true): child = .payload
                case (.payload, let key?, false) where key.hasSuffix("Diagnostics"): child = .section(MetricKitKind(section: key))
                case (.section(let kind), _, true):
                    current = MetricKitDiagnostic(kind: kind, range: reader.eventStart..<reader.eventStart)
                    child = .diagnostic
                case (.payload, "callStackTree", true), (.diagnostic, "callStackTree", true): child = .tree
                case (.payload, "diagnosticMetaData", true), (.diagnostic, "diagnosticMetaData", true): child = .metadata
                case (.tree, "callStacks", false): child = .callStacks
                case (.callStacks, _, true):
                    withDiagnostic { $0.stacks.append(MetricKitStack()) }
                    child = .callStack
                case (.callStack, "callStackRootFrames", false): child = .frameList(0)
                case (.frame(let depth, _), "subFrames", false): child = .frameList(depth + 1)
                case (.frameList(let depth), _, true):
                    var index = 0
                    withDiagnostic {
                        index = $0.stacks[$0.stacks.count - 1].frames.count
                        $0.stacks[$0.stacks.count - 1].frames.append(MetricKitFrame(depth: depth))
                    }
                    child = .frame(depth, index: index)
                case (.metadata, "exceptionReason", true), (.metadata, "objectiveCexceptionReason", true): child = .reason
                default: child = .ignored
                }
                stack.append((child, nil))
            case .endObject, .endArray:
                let closed = stack.removeLast()
                if case .diagnostic = closed.node, var diagnostic = current {
                    diagnostic.range = diagnostic.range.lowerBound..<reader.position
                    document.diagnostics.append(diagnostic)
                    current = nil
                }
            case .string(let text), .number(let text):
                document.scalar(text, parent: parent, start: reader.eventStart, end: reader.position, into: withDiagnostic)
            case .bool(let flag):
                if case .callStack = parent.node, parent.key == "threadAttributed" {
                    withDiagnostic { $0.stacks[$0.stacks.count - 1].attributed = flag }
                } else if case .metadata = parent.node, let key = parent.key {
                    withDiagnostic { $0.metadata[key] = String(flag) }
                }
            case .null:
                break
            }
        }
        if var lone, document.diagnostics.isEmpty {
            lone.kind = MetricKitKind(metadata: lone.metadata)
            document.diagnostics = [lone]
        }
        return document
    }

    private mutating func scalar(
        _ text: String, parent: (node: Node, key: String?), start: Int, end: Int,
        into withDiagnostic: ((inout MetricKitDiagnostic) -> Void) -> Void
    ) {
        guard let key = parent.key else { return }
        switch parent.node {
        case .payload where key == "timeStampBegin" || key == "timeStampEnd":
            if key == "timeStampBegin" { timeStampBegin = text } else { timeStampEnd = text }
            timeStampText.append((key, start..<end))
        case .metadata:
            withDiagnostic { $0.metadata[key] = text }
        case .reason:
            withDiagnostic { $0.reason[key] = text }
        case .frame(_, let f):
            withDiagnostic { diagnostic in
                let s = diagnostic.stacks.count - 1
                switch key {
                case "binaryUUID": diagnostic.stacks[s].frames[f].uuid = text
                case "binaryName": diagnostic.stacks[s].frames[f].name = text
                case "offsetIntoBinaryTextSegment": diagnostic.stacks[s].frames[f].offset = text
                case "address": diagnostic.stacks[s].frames[f].address = text
                case "sampleCount": diagnostic.stacks[s].frames[f].sampleCount = text
                default: break
                }
            }
        default:
            break
        }
    }

    /// `diagnostic` as a payload of its own: the timestamps and its section holding it alone,
    /// every byte of the diagnostic as it was written.
    func standalone(_ diagnostic: MetricKitDiagnostic) -> Data {
        var out = Data("{".utf8)
        for (key, text) in timeStampText {
            out += Data("\"\(key)\":".utf8) + Data(bytes[text]) + Data(",".utf8)
        }
        out += Data("\"\(diagnostic.kind.section)\":[".utf8) + Data(bytes[diagnostic.range]) + Data("]}\n".utf8)
        return out
    }
}

/// Turns one diagnostic into a `RawReport`.
struct MetricKitReport {
    let format: String
    let document: MetricKitDocument
    var warnings: WarningLog

    /// Synthetic images start here, where an arm64 iOS main executable usually loads.
    static let syntheticBase: UInt64 = 0x1_0000_0000
    /// Each synthetic image spans its highest offset, rounded up to a 16 KiB page.
    static let page: UInt64 = 0x4000

    mutating func report(for diagnostic: MetricKitDiagnostic) throws(ReportParseError) -> RawReport {
        guard diagnostic.kind == .crash || diagnostic.kind == .hang else {
            throw .invalidReport(format: format, reason: diagnostic.kind.refusal)
        }
        let metadata = diagnostic.metadata
        func known(_ key: String) -> String? { metadata[key].flatMap { $0.isEmpty ? nil : $0 } }
        let arch = known("platformArchitecture").map { Arch($0) }
        let (images, addresses) = try layOut(diagnostic, arch: arch)
        func frame(_ stack: Int, _ index: Int, kind: FrameKind) -> RawFrame {
            let (address, image) = addresses[stack][index]
            return RawFrame(address: Address(address), kind: kind, imageIndex: image)
        }
        let app = AppInfo(name: known("bundleIdentifier"), version: known("appVersion"), build: known("appBuildVersion"))
        let os = known("osVersion")
        var report = RawReport(
            format: format, kind: .crash, platform: os.flatMap(AppleCrashTextParser.platform(os:)), arch: arch, app: app, os: os,
            device: DeviceInfo(model: known("deviceType"), osVersion: OSVersionNumber.of(os), id: nil),
            timestamp: document.timeStampBegin ?? document.timeStampEnd, images: images)

        if diagnostic.kind == .crash {
            for (s, stack) in diagnostic.stacks.enumerated() {
                // A crash stack is one chain: the root is the top frame, each subFrames[0] its caller.
                if zip(stack.frames, stack.frames.dropFirst()).contains(where: { $1.depth != $0.depth + 1 }) {
                    warnings.append("call stack \(s) branches; its frames are listed in tree order")
                }
                report.threads.append(RawThread(
                    index: s, crashed: stack.attributed ?? false,
                    frames: stack.frames.indices.map { frame(s, $0, kind: $0 == 0 ? .pc : .returnAddress) }))
            }
            report.exception = exception(metadata, reason: diagnostic.reason)
        } else {
            report.kind = .lag
            let s = diagnostic.stacks.firstIndex { $0.attributed == true } ?? 0
            if diagnostic.stacks.count > 1 {
                warnings.append("\(diagnostic.stacks.count - 1) call stacks not attributed to the hang are not kept")
            }
            var profile: [ProfileNode] = []
            if diagnostic.stacks.indices.contains(s) {
                let stack = diagnostic.stacks[s]
                let counts = try sampleCounts(stack)
                // Within maxProfileSamples together (`sampleCounts`), so this sum never saturates.
                let rootSamples = zip(stack.frames, counts).filter { $0.0.depth == 0 }.map(\.1).saturatingSum()
                // Milliseconds per sample: the hang's duration spread over the samples of its roots.
                let duration = Self.milliseconds(known("hangDuration"))
                if duration == nil, let text = known("hangDuration") {
                    warnings.append("hangDuration \"\(text.prefix(40))\" is not a usable duration; costs count 1 ms a sample")
                }
                let perSample = duration.map { rootSamples > 0 ? $0 / Double(rootSamples) : 1 } ?? 1
                for (i, node) in stack.frames.enumerated() {
                    profile.append(ProfileNode(
                        depth: node.depth, count: counts[i], costTime: Double(counts[i]) * perSample,
                        address: Address(addresses[s][i].address)))
                }
            }
            guard !profile.isEmpty else { throw .invalidReport(format: format, reason: "hang diagnostic without a call stack") }
            let lag = LagData(profile: profile)
            try LagTree.validate(lag, format: format)
            report.lag = lag
        }
        guard report.kind == .lag || report.threads.contains(where: { !$0.frames.isEmpty }) else {
            throw .invalidReport(format: format, reason: "crash diagnostic without frames (callStackTree.callStacks is empty)")
        }
        report.warnings = warnings.all
        return report
    }

    /// Each frame's `sampleCount` (1 when absent or not an integer), refused past
    /// `ReportLimits.maxProfileSamples`, alone or all of the stack's together, before anything sums them.
    func sampleCounts(_ stack: MetricKitStack) throws(ReportParseError) -> [Int] {
        var total = 0
        var counts: [Int] = []
        counts.reserveCapacity(stack.frames.count)
        for (i, frame) in stack.frames.enumerated() {
            let count = frame.sampleCount.flatMap { Int($0) } ?? 1
            guard count >= 0 else {
                throw .invalidReport(format: format, reason: "callStackTree node[\(i)]: sampleCount \(count) is negative")
            }
            // Compared before adding: both sides are at most the limit.
            guard count <= ReportLimits.maxProfileSamples - total else {
                throw .overLimit(
                    "callStackTree node[\(i)]: sampleCount \(count) brings the hang's samples past the limit of \(ReportLimits.maxProfileSamples)")
            }
            total += count  // overflow: compared with the limit just above
            counts.append(count)
        }
        return counts
    }

    /// One image per `binaryUUID`, and every frame's address in it. When every frame gives an
    /// `address` and each image's `address − offsetIntoBinaryTextSegment` is one value, that value
    /// is the image's load address and the device's addresses are kept. Otherwise (MetricKit
    /// usually gives offsets alone) images are laid out one after another from `syntheticBase` in
    /// the order they first appear, each as long as its highest offset rounded up to a page, and a
    /// frame's address is its image's start plus its offset. Either way `address − load = offset`,
    /// the file address is `__TEXT.vmaddr + offset`, and `vmAddress` stays nil.
    mutating func layOut(_ diagnostic: MetricKitDiagnostic, arch: Arch?) throws(ReportParseError) -> ([BinaryImage], [[(address: UInt64, image: Int?)]]) {
        var order: [String] = []
        var byKey: [String: (name: String?, uuid: String?, maxOffset: UInt64, slide: Set<UInt64>, allAddressed: Bool)] = [:]
        var offsets: [[(key: String, offset: UInt64)?]] = []
        var limits = LimitCounter()
        for (s, stack) in diagnostic.stacks.enumerated() {
            offsets.append(stack.frames.enumerated().map { i, frame in
                guard let text = frame.offset, let offset = UInt64(text) else {
                    warnings.append("call stack \(s) frame \(i): offsetIntoBinaryTextSegment \(frame.offset ?? "missing") is not an offset; frame marked malformed")
                    return nil
                }
                let key = frame.uuid ?? frame.name ?? "?"
                var entry = byKey[key] ?? (frame.name, frame.uuid, 0, [], true)
                if byKey[key] == nil { order.append(key) }
                entry.maxOffset = max(entry.maxOffset, offset)
                if let address = frame.address.flatMap({ UInt64($0) }), address >= offset {
                    entry.slide.insert(address - offset)
                } else {
                    entry.allAddressed = false
                }
                if entry.name == nil { entry.name = frame.name }
                byKey[key] = entry
                return (key, offset)
            })
        }
        try limits.add(images: order.count)
        let deviceAddresses = byKey.values.allSatisfy { $0.allAddressed && $0.slide.count == 1 }
        if !deviceAddresses, byKey.values.contains(where: { $0.allAddressed && $0.slide.count > 1 }) {
            warnings.append("address − offsetIntoBinaryTextSegment differs between frames of one image (iOS 14.0 wrote each image's load address as the offset); frames are placed by their offsets")
        }
        var images: [BinaryImage] = []
        var indexOf: [String: Int] = [:]
        var cursor = Self.syntheticBase
        for key in order {
            let entry = byKey[key]!
            // The highest offset rounded up to a page; past 2^64 − page that does not fit.
            let (size, sizeOverflow) = (entry.maxOffset / Self.page + 1).multipliedReportingOverflow(by: Self.page)
            guard !sizeOverflow else {
                throw .invalidReport(format: format, reason: "offsetIntoBinaryTextSegment \(entry.maxOffset) leaves no room for the image in 64 bits")
            }
            let load: UInt64
            if deviceAddresses, let slide = entry.slide.first {
                load = slide
            } else {
                load = cursor
                let (next, overflow) = cursor.addingReportingOverflow(size)
                guard !overflow else { throw .invalidReport(format: format, reason: "offsetIntoBinaryTextSegment values too large to lay the images out in 64 bits") }
                cursor = next
            }
            let name = entry.name ?? entry.uuid ?? "???"
            indexOf[key] = images.count
            images.append(BinaryImage(
                name: name, id: BuildID.reported(entry.uuid, image: name, lengths: .appleReport, warnings: &warnings),
                arch: arch, loadAddress: Address(load), size: size))
        }
        let addresses = offsets.map { stack in
            stack.map { entry -> (address: UInt64, image: Int?) in
                guard let entry, let index = indexOf[entry.key] else { return (0, nil) }
                return (images[index].loadAddress.value &+ entry.offset, index)
            }
        }
        return (images, addresses)
    }

    /// `EXC_BAD_ACCESS` / `SIGSEGV` from MetricKit's numbers; the message is the Objective-C
    /// exception's text, then the termination reason and the memory region, one per line.
    func exception(_ metadata: [String: String], reason: [String: String]) -> ExceptionInfo {
        let type = metadata["exceptionType"].flatMap { Int($0) }.map { Self.machExceptions[$0] ?? "exception \($0)" }
        let signal = metadata["signal"].flatMap { Int($0) }.map { Self.signals[$0] ?? "signal \($0)" }
        var lines: [String] = []
        if let composed = reason["composedMessage"], !composed.isEmpty {
            let name = reason["exceptionName"] ?? reason["className"]
            lines.append(name.map { composed.hasPrefix($0) ? composed : "\($0): \(composed)" } ?? composed)
        }
        for key in ["terminationReason", "virtualMemoryRegionInfo"] {
            if let text = metadata[key]?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty { lines.append(text) }
        }
        // "0x88 is not in any region." names the faulting address.
        let fault = metadata["virtualMemoryRegionInfo"].flatMap { info -> Address? in
            guard let word = info.split(separator: " ").first, info.dropFirst(word.count).hasPrefix(" is ") else { return nil }
            return word.hasPrefix("0x") ? Address(parsing: word) : UInt64(word).map { Address($0) }
        }
        return ExceptionInfo(
            type: type, signal: signal, code: metadata["exceptionCode"], faultAddress: fault,
            message: lines.isEmpty ? nil : lines.joined(separator: "\n"))
    }

    /// "20 secs.", "4.5 sec", "20000 ms" in milliseconds.
    static func milliseconds(_ text: String?) -> Double? {
        guard let text else { return nil }
        let number = text.prefix { $0.isNumber || $0 == "." || $0 == "," }.replacingOccurrences(of: ",", with: "")
        guard let value = Double(number) else { return nil }
        let unit = text.dropFirst(text.prefix { $0.isNumber || $0 == "." || $0 == "," }.count).trimmingCharacters(in: .whitespaces)
        guard let ms = unit.hasPrefix("ms") ? value : unit.hasPrefix("s") ? value * 1000 : nil else { return nil }
        // A duration Stackline can spread over samples: finite (400 nines parse as infinity) and bounded.
        return ms.isFinite && ms <= ReportLimits.maxProfileCostMilliseconds ? ms : nil
    }

    /// <mach/exception_types.h>
    static let machExceptions: [Int: String] = [
        1: "EXC_BAD_ACCESS", 2: "EXC_BAD_INSTRUCTION", 3: "EXC_ARITHMETIC", 4: "EXC_EMULATION", 5: "EXC_SOFTWARE",
        6: "EXC_BREAKPOINT", 7: "EXC_SYSCALL", 8: "EXC_MACH_SYSCALL", 9: "EXC_RPC_ALERT", 10: "EXC_CRASH",
        11: "EXC_RESOURCE", 12: "EXC_GUARD", 13: "EXC_CORPSE_NOTIFY",
    ]

    /// Darwin's <sys/signal.h> numbers (they differ from Linux above 6).
    static let signals: [Int: String] = [
        1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGEMT", 8: "SIGFPE",
        9: "SIGKILL", 10: "SIGBUS", 11: "SIGSEGV", 12: "SIGSYS", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM",
    ]
}
