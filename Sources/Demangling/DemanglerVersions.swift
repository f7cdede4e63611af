import CDemangle

/// Which build of one demangler library this process calls: what a stored demangled name
/// depends on besides the mangled name.
///
/// The loaded object's GNU build id, read from its notes in memory (`dl_iterate_phdr`): it
/// changes exactly when the library's code does, whatever its path, and survives a copy or a
/// `touch` that would change a file's time. An object without one is named by its file's size,
/// mtime and inode instead. When the runtime is linked into the executable, the executable's
/// build id stands for it (every new build of the program then counts as a new demangler).
public struct DemanglerIdentity: Sendable, Hashable, CustomStringConvertible {
    /// A tag byte (1 build id, 2 file identity) and its value; empty when the library was not
    /// found, which then compares equal only to another unknown.
    public let bytes: [UInt8]

    /// The longest identity kept (a longer build id is cut): what a symcache header has room for.
    public static let maximumLength = 47

    public init(bytes: [UInt8]) {
        self.bytes = Array(bytes.prefix(Self.maximumLength))
    }

    public static let unknown = DemanglerIdentity(bytes: [])

    public var description: String {
        guard let tag = bytes.first else { return "unknown" }
        let hex = bytes.dropFirst().map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        return tag == 1 ? "build-id \(hex)" : "file \(hex)"
    }

    /// The identity of `family`'s library in this process.
    static func loaded(_ family: Demangler.Family) -> DemanglerIdentity {
        var buffer = [UInt8](repeating: 0, count: maximumLength)
        let written = buffer.withUnsafeMutableBufferPointer { out in
            stackline_demangler_identity(family == .swift ? 0 : 1, out.baseAddress, out.count)
        }
        guard written > 0 else { return .unknown }
        return DemanglerIdentity(bytes: Array(buffer.prefix(Int(written))))
    }
}

/// The identities of both demanglers, one per `Demangler.Family`.
public struct DemanglerVersions: Sendable, Hashable {
    public var swift: DemanglerIdentity
    public var cxx: DemanglerIdentity

    public init(swift: DemanglerIdentity, cxx: DemanglerIdentity) {
        self.swift = swift
        self.cxx = cxx
    }

    public subscript(family: Demangler.Family) -> DemanglerIdentity {
        get { family == .swift ? swift : cxx }
        set { if family == .swift { swift = newValue } else { cxx = newValue } }
    }

    /// This process's, read once: the libraries cannot change while it runs.
    public static let current = DemanglerVersions(swift: .loaded(.swift), cxx: .loaded(.cxx))
}
