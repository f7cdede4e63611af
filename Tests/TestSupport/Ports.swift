import Foundation

/// A loopback port nothing listens on now: the kernel's pick for port 0, bound and closed.
/// The one way tests find a port for a server they start, or one where nothing answers.
public func freeLoopbackPort() throws(TestSupportError) -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSupportError("socket failed: errno \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw TestSupportError("bind on 127.0.0.1 failed: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}
