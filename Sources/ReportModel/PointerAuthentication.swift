/// arm64e return addresses and function pointers carry a pointer-authentication code in
/// their upper bits; Apple's arm64 user space fits in the low 36 bits, so masking recovers
/// the address before it is matched to an image.
public enum PointerAuthentication {
    public static let addressMask: UInt64 = 0x0000_000f_ffff_ffff

    /// Only Apple arm64 code: arm64e always, arm64 when the platform is Apple's. Linux and
    /// Android arm64 map code far above 2^36, and x86_64 has no such bits, so neither is masked.
    public static func applies(arch: Arch?, platform: String?) -> Bool {
        switch arch?.cpu {
        case .arm64e: return true
        case .arm64:
            guard let platform = platform?.lowercased() else { return false }
            return ["ios", "iphone", "ipad", "macos", "mac os", "os x", "tvos", "watchos", "visionos", "xros", "darwin"]
                .contains { platform.contains($0) }
        default: return false
        }
    }

    public static func strip(_ address: UInt64, arch: Arch?, platform: String?) -> UInt64 {
        applies(arch: arch, platform: platform) ? address & addressMask : address
    }
}
