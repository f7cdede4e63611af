import Foundation

/// Crash or lag: lag reports are main-thread hangs sampled by the SDK.
public enum ReportKind: String, Codable, Sendable, CaseIterable {
    case crash
    case lag
}

/// Whether an address is the faulting pc or a return address (looked up at `address - 1`).
public enum FrameKind: String, Codable, Sendable {
    case pc
    case returnAddress
}

/// The application that produced a report.
public struct AppInfo: Codable, Sendable, Hashable {
    public var name: String?
    public var version: String?
    public var build: String?
    public init(name: String? = nil, version: String? = nil, build: String? = nil) {
        self.name = name
        self.version = version
        self.build = build
    }
}

/// A key and value the crashing process attached to its report, as Crashpad's annotations
/// are: process-wide (`module` nil), or kept by one module (`module` names it). A module's
/// list annotations (plain strings) have their position as the key, `[0]`, `[1]`, ….
public struct ReportAnnotation: Codable, Sendable, Hashable {
    public var key: String
    public var value: String
    public var module: String?

    public init(key: String, value: String, module: String? = nil) {
        self.key = key
        self.value = value
        self.module = module
    }
}

/// What went wrong, as the report states it.
public struct ExceptionInfo: Codable, Sendable, Hashable {
    public var type: String?
    public var signal: String?
    public var code: String?
    public var faultAddress: Address?
    public var message: String?
    public init(
        type: String? = nil, signal: String? = nil, code: String? = nil,
        faultAddress: Address? = nil, message: String? = nil
    ) {
        self.type = type
        self.signal = signal
        self.code = code
        self.faultAddress = faultAddress
        self.message = message
    }
}

extension ExceptionInfo {
    /// `EXC_BAD_ACCESS / SIGSEGV / KERN_INVALID_ADDRESS at 0x10`: type, signal, code and fault
    /// address, each fact once. Formats repeat themselves (a tombstone's code already says
    /// `at 0x88`, Apple's type is often the signal), and every view prints this one line.
    public var summary: String {
        var parts: [String] = []
        for part in [type, signal, code] {
            guard let part = part?.trimmingCharacters(in: .whitespaces), !part.isEmpty else { continue }
            if parts.contains(where: { UTF8Search.contains($0, part) }) { continue }
            parts.removeAll { UTF8Search.contains(part, $0) }
            parts.append(part)
        }
        var text = parts.isEmpty ? "unknown" : parts.joined(separator: " / ")
        if let fault = faultAddress, !Self.hexNumbers(in: text).contains(fault.value) { text += " at \(fault)" }
        return text
    }

    /// Every `0x…` number in `text`, so a fault address already spelled out (with any padding) is not repeated.
    static func hexNumbers(in text: String) -> Set<UInt64> {
        var found: Set<UInt64> = []
        var rest = Substring(text)
        while let start = rest.range(of: "0x") {
            let digits = rest[start.upperBound...].prefix { $0.isHexDigit }
            if let value = UInt64(digits.suffix(16), radix: 16) { found.insert(value) }
            rest = rest[start.upperBound...].dropFirst(digits.count)
        }
        return found
    }
}

/// A binary loaded in the crashed process.
public struct BinaryImage: Codable, Sendable, Hashable {
    public var name: String
    public var path: String?
    /// GNU build-id or Mach-O UUID.
    public var id: BuildID?
    public var arch: Arch?
    /// Lowest mapped address of the image (ELF) or its load address (Mach-O).
    public var loadAddress: Address
    public var size: UInt64?
    /// The image's preferred base (`__TEXT.vmaddr`, or first `PT_LOAD` vaddr) when the report carries it.
    public var vmAddress: Address?

    public init(
        name: String, path: String? = nil, id: BuildID? = nil, arch: Arch? = nil,
        loadAddress: Address, size: UInt64? = nil, vmAddress: Address? = nil
    ) {
        self.name = name
        self.path = path
        self.id = id
        self.arch = arch
        self.loadAddress = loadAddress
        self.size = size
        self.vmAddress = vmAddress
    }

    public func contains(_ address: UInt64) -> Bool {
        guard address >= loadAddress.value else { return false }
        guard let size else { return false }
        return address - loadAddress.value < size
    }
}

/// One frame as reported: an absolute address.
public struct RawFrame: Codable, Sendable, Hashable {
    public var address: Address
    public var kind: FrameKind
    /// The image the report itself attributes the frame to, when it does.
    public var imageIndex: Int?
    /// True when the report's address for this frame could not be read (it is then 0, and the
    /// parser said why in a warning): the frame is shown as `malformed`, never looked up.
    public var malformed: Bool?
    /// The name the device already resolved this frame to (`JSValueIsString + 155`), as the report
    /// printed it. Kept so a frame without a debug file still has a name (`FrameStatus.deviceSymbol`);
    /// a debug file in the store always wins over it.
    public var symbol: String?
    /// Distance from `symbol`'s start, when the report gives one.
    public var symbolOffset: UInt64?
    /// How the server's unwinder found the frame (native crashes); nil when the report listed it.
    public var trust: FrameTrust?
    public init(
        address: Address, kind: FrameKind, imageIndex: Int? = nil, malformed: Bool? = nil,
        symbol: String? = nil, symbolOffset: UInt64? = nil, trust: FrameTrust? = nil
    ) {
        self.trust = trust
        self.address = address
        self.kind = kind
        self.imageIndex = imageIndex
        self.malformed = malformed
        self.symbol = symbol
        self.symbolOffset = symbolOffset
    }
}

/// One thread's backtrace.
public struct RawThread: Codable, Sendable, Hashable {
    public var index: Int
    public var name: String?
    public var crashed: Bool
    public var frames: [RawFrame]
    /// Which part of a composite report the thread comes from, e.g. `recrash` for the threads of
    /// KSCrash's "handler crashed while reporting" section. Nil for the report proper.
    public var part: String?
    public init(index: Int, name: String? = nil, crashed: Bool = false, frames: [RawFrame], part: String? = nil) {
        self.index = index
        self.name = name
        self.crashed = crashed
        self.frames = frames
        self.part = part
    }
}

/// The one model every report parser produces.
public struct RawReport: Codable, Sendable, Hashable {
    /// Identifier of the wire format, e.g. `swift-backtrace-json`.
    public var format: String
    public var kind: ReportKind
    public var platform: String?
    public var arch: Arch?
    public var app: AppInfo?
    public var os: String?
    /// The device the report itself names (model, OS version number, device key); nil when it
    /// names none. Not part of the fingerprint.
    public var device: DeviceInfo?
    public var timestamp: String?
    public var exception: ExceptionInfo?
    public var images: [BinaryImage]
    public var threads: [RawThread]
    /// Lag reports: the SDK's samples and thread-profile tree. Nil for crashes.
    public var lag: LagData?
    /// A native crash's registers and memory, for the worker to unwind (`RawReport.threads`
    /// then hold each thread's context frame alone until it does). Nil for reports that
    /// arrive unwound.
    public var native: NativeCapture?
    /// What the process attached to the report (Crashpad's annotations); nil when nothing.
    public var annotations: [ReportAnnotation]?
    /// Things the parser noticed but could work around.
    public var warnings: [String]

    public init(
        format: String, kind: ReportKind, platform: String? = nil, arch: Arch? = nil,
        app: AppInfo? = nil, os: String? = nil, device: DeviceInfo? = nil, timestamp: String? = nil,
        exception: ExceptionInfo? = nil, images: [BinaryImage] = [], threads: [RawThread] = [],
        lag: LagData? = nil, native: NativeCapture? = nil, annotations: [ReportAnnotation]? = nil, warnings: [String] = []
    ) {
        self.native = native
        self.annotations = annotations
        self.format = format
        self.kind = kind
        self.platform = platform
        self.arch = arch
        self.app = app
        self.os = os
        self.device = device
        self.timestamp = timestamp
        self.exception = exception
        self.images = images
        self.threads = threads
        self.lag = lag
        self.warnings = warnings
    }
}
