/// What the program's environment sets for debug files arriving at the store, handed down by
/// the entry point (`StacklineEnvironment`) rather than read here. The byte caps stay text until
/// an archive or upload arrives, so a value that is not a byte count refuses that input,
/// naming the variable, and stops nothing else.
public struct StoreLimits: Sendable, Equatable {
    /// `STACKLINE_UNZIP_MAX_BYTES`: the most one archive may unpack to; nil, `ArchiveRules.defaultLimit`.
    public var unpackMaxBytes: String?
    /// `STACKLINE_SYMBOLS_MAX_UPLOAD_BYTES`: the most one upload may hold; nil, `IncomingFile.defaultLimit`.
    public var uploadMaxBytes: String?
    /// `TMPDIR`: where archives are unpacked (a private directory is made in it).
    public var temporaryDirectory: String

    public init(unpackMaxBytes: String? = nil, uploadMaxBytes: String? = nil, temporaryDirectory: String = "/tmp") {
        self.unpackMaxBytes = unpackMaxBytes
        self.uploadMaxBytes = uploadMaxBytes
        self.temporaryDirectory = temporaryDirectory
    }
}
