#if canImport(Glibc)
import Glibc
#endif

extension SystemCall {
    /// CPU time (user and system) the calling thread has used so far: what one request's work
    /// cost when it runs on one thread, whatever else the process does meanwhile. Zero if the
    /// clock cannot be read (it always can on Linux).
    public static func threadCPUTime() -> Duration {
        var spec = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec) == 0 else { return .zero }
        return .seconds(spec.tv_sec) + .nanoseconds(spec.tv_nsec)
    }
}
