#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a directory entry or an open file is, from the type bits of its mode.
public enum FileKind: Equatable, Sendable, CustomStringConvertible {
    case regular, directory, symbolicLink, fifo, socket, characterDevice, blockDevice
    case other(mode_t)

    public init(mode: mode_t) {
        switch mode & S_IFMT {
        case S_IFREG: self = .regular
        case S_IFDIR: self = .directory
        case S_IFLNK: self = .symbolicLink
        case S_IFIFO: self = .fifo
        case S_IFSOCK: self = .socket
        case S_IFCHR: self = .characterDevice
        case S_IFBLK: self = .blockDevice
        default: self = .other(mode & S_IFMT)
        }
    }

    /// For "not a regular file (a FIFO)".
    public var description: String {
        switch self {
        case .regular: "a regular file"
        case .directory: "a directory"
        case .symbolicLink: "a symbolic link"
        case .fifo: "a FIFO"
        case .socket: "a socket"
        case .characterDevice: "a character device"
        case .blockDevice: "a block device"
        case .other(let type): "file type \(String(type, radix: 8))"
        }
    }
}
