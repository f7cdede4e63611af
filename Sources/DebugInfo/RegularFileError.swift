import Foundation

/// Why a path could not be opened as a regular file; `reason` reads as the end of a sentence.
public struct RegularFileError: Error, Equatable, CustomStringConvertible {
    public let path: String
    public let reason: String
    /// What the path is instead, when it opened but is not a regular file ("a FIFO").
    public var kind: String? = nil
    public var description: String { "\(path): \(reason)" }
}
