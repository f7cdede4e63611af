import ReportModel
import SymbolStore

/// Turns a `RawReport` into a `SymbolicatedReport` using the debug files in a store.
/// Owns a cache of opened debug files; keep one per process and reuse it across jobs.
public final class Symbolicator {
    public let store: SymbolStoreDirectory

    public init(store: SymbolStoreDirectory, cacheCapacity: Int = 32) {
        self.store = store
    }

    public func symbolicate(_ report: RawReport) -> SymbolicatedReport {
        // Placeholder until the engine lands: every frame is reported as missing its debug file.
        let threads = report.threads.map { t in
            SymbolicatedThread(
                index: t.index, name: t.name, crashed: t.crashed,
                frames: t.frames.enumerated().map { i, f in
                    SymbolicatedFrame(index: i, address: f.address, kind: f.kind, status: .missingDebugFile)
                })
        }
        return SymbolicatedReport(
            format: report.format, kind: report.kind, status: .unsymbolicated,
            missingBuildIds: report.images.compactMap(\.id), app: report.app, os: report.os,
            arch: report.arch, timestamp: report.timestamp, exception: report.exception,
            images: report.images, threads: threads, warnings: report.warnings)
    }
}
