/// How far a frame could be resolved.
public enum FrameStatus: String, Codable, Sendable {
    /// Function and source location from DWARF.
    case symbolicated
    /// Function from a symbol table only: no line information.
    case noLineInfo
    /// The image is known but its debug file is not in the store.
    case missingDebugFile
    /// No debug file, but the report carried the name the device resolved (`function`, `offset`).
    case deviceSymbol
    /// The debug file is there but nothing covers this address.
    case noSymbol
    /// The address lies in no image of the report.
    case outsideAnyImage
    /// The frame or its image is unusable (e.g. a malformed build id).
    case malformed
}

/// Summary over all frames of a report.
public enum ReportStatus: String, Codable, Sendable {
    /// Every frame in an image resolved.
    case complete
    /// Some frames resolved, some did not.
    case partial
    /// No frame resolved.
    case unsymbolicated
}

/// One inline level of one raw frame. A raw frame expands to one entry per level, innermost first.
public struct SymbolicatedFrame: Codable, Sendable, Hashable {
    /// Index of the raw frame in its thread.
    public var index: Int
    public var address: Address
    public var kind: FrameKind
    public var image: String?
    /// Address relative to the image: the file address the debug file was searched at.
    public var imageOffset: Address?
    public var status: FrameStatus
    /// Raw linkage name.
    public var symbol: String?
    /// Demangled name.
    public var function: String?
    /// Distance from the start of the outermost function (only on the outermost level).
    public var offset: UInt64?
    public var file: String?
    public var line: Int?
    public var column: Int?
    /// True for every level but the outermost.
    public var inlined: Bool
    public var inApp: Bool?
    /// How the server's unwinder found the frame (native crashes; `RawFrame.trust`).
    public var trust: FrameTrust?

    public init(
        index: Int, address: Address, kind: FrameKind, image: String? = nil,
        imageOffset: Address? = nil, status: FrameStatus, symbol: String? = nil,
        function: String? = nil, offset: UInt64? = nil, file: String? = nil, line: Int? = nil,
        column: Int? = nil, inlined: Bool = false, inApp: Bool? = nil
    ) {
        self.index = index
        self.address = address
        self.kind = kind
        self.image = image
        self.imageOffset = imageOffset
        self.status = status
        self.symbol = symbol
        self.function = function
        self.offset = offset
        self.file = file
        self.line = line
        self.column = column
        self.inlined = inlined
        self.inApp = inApp
    }
}

/// A thread with its frames resolved.
public struct SymbolicatedThread: Codable, Sendable, Hashable {
    public var index: Int
    public var name: String?
    public var crashed: Bool
    public var frames: [SymbolicatedFrame]
    /// `RawThread.part`: which part of a composite report the thread comes from.
    public var part: String?
    public init(index: Int, name: String? = nil, crashed: Bool, frames: [SymbolicatedFrame], part: String? = nil) {
        self.index = index
        self.name = name
        self.crashed = crashed
        self.frames = frames
        self.part = part
    }
}

/// A report with every raw frame kept and resolved as far as the store allows.
public struct SymbolicatedReport: Codable, Sendable, Hashable {
    public var id: Int64?
    public var format: String
    public var kind: ReportKind
    public var status: ReportStatus
    public var missingBuildIds: [BuildID]
    public var app: AppInfo?
    public var os: String?
    public var arch: Arch?
    public var timestamp: String?
    public var exception: ExceptionInfo?
    public var images: [BinaryImage]
    /// Per image (same order as `images`), why its frames are or are not symbolicated. Nil in
    /// reports stored before it existed.
    public var imageSymbols: [ImageSymbols]?
    public var threads: [SymbolicatedThread]
    /// Lag reports: samples and profile nodes resolved like thread frames.
    public var lag: SymbolicatedLag?
    /// What the process attached to the report (`RawReport.annotations`).
    public var annotations: [ReportAnnotation]?
    public var warnings: [String]

    public init(
        id: Int64? = nil, format: String, kind: ReportKind, status: ReportStatus,
        missingBuildIds: [BuildID], app: AppInfo? = nil, os: String? = nil, arch: Arch? = nil,
        timestamp: String? = nil, exception: ExceptionInfo? = nil, images: [BinaryImage] = [],
        imageSymbols: [ImageSymbols]? = nil, threads: [SymbolicatedThread], lag: SymbolicatedLag? = nil,
        annotations: [ReportAnnotation]? = nil, warnings: [String] = []
    ) {
        self.annotations = annotations
        self.id = id
        self.format = format
        self.kind = kind
        self.status = status
        self.missingBuildIds = missingBuildIds
        self.app = app
        self.os = os
        self.arch = arch
        self.timestamp = timestamp
        self.exception = exception
        self.images = images
        self.imageSymbols = imageSymbols
        self.threads = threads
        self.lag = lag
        self.warnings = warnings
    }
}
