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
            guard let platform else { return false }
            return isApple(platform: platform)
        default: return false
        }
    }

    private static let applePlatformWords: [[UInt8]] =
        ["ios", "iphone", "ipad", "macos", "mac os", "os x", "tvos", "watchos", "visionos", "xros", "darwin"].map { Array($0.utf8) }

    /// Whether a platform name is one of Apple's, ignoring ASCII case. Byte by byte, without
    /// Foundation: it runs for every frame of an arm64 report (at intake and in the worker),
    /// and lowercasing plus Foundation's `contains` showed in the ingest profile (scripts/bench-serve.sh).
    static func isApple(platform: String) -> Bool {
        var platform = platform
        return platform.withUTF8 { text in
            applePlatformWords.contains { word in
                guard text.count >= word.count else { return false }
                return (0...(text.count - word.count)).contains { start in
                    word.indices.allSatisfy { k in
                        let c = text[start + k]
                        return (c >= 0x41 && c <= 0x5a ? c | 0x20 : c) == word[k]
                    }
                }
            }
        }
    }

    public static func strip(_ address: UInt64, arch: Arch?, platform: String?) -> UInt64 {
        applies(arch: arch, platform: platform) ? address & addressMask : address
    }
}
