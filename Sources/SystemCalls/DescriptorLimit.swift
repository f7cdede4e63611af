#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SystemCall {
    #if canImport(Glibc)
    private static let descriptorResource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let descriptorResource = RLIMIT_NOFILE
    #endif

    /// This process's soft limit on open descriptors (RLIMIT_NOFILE), or nil when there is none
    /// or it cannot be read. `serve` keeps its connections below it.
    public static func openDescriptorLimit() -> Int? {
        var limit = rlimit()
        guard getrlimit(descriptorResource, &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
        return Int(clamping: limit.rlim_cur)
    }

    /// Raises the soft descriptor limit to the hard one, as Go's runtime and nginx do: the soft
    /// default (1024 under systemd and most shells) is kept low for programs that still use
    /// `select`, which nothing here does, while the hard limit (524288 under systemd) is what the
    /// administrator allows. Without it `serve` would cap its connections below 1024. Best effort:
    /// on failure the soft limit stays as it was.
    public static func raiseOpenDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(descriptorResource, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        #if canImport(Darwin)
        // macOS refuses a soft limit above OPEN_MAX even when the hard limit is unlimited.
        limit.rlim_cur = min(limit.rlim_max, rlim_t(OPEN_MAX))
        #else
        limit.rlim_cur = limit.rlim_max
        #endif
        _ = setrlimit(descriptorResource, &limit)
    }
}
