/// The debug-file store: a directory in the `.build-id/ab/cdef….debug` layout.
public struct SymbolStoreDirectory: Sendable {
    public let root: String

    public init(root: String) { self.root = root }

    /// Path of the debug file stored for `buildID`, if any.
    public func debugFilePath(buildID: String) -> String? { nil }
}
