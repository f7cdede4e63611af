import Foundation
import ReportFormats
import ReportModel
import Unwinding

/// A minidump or a core file read, then every thread walked by `NativeUnwinder` with libdwfl's
/// callbacks reading the capture's registers and memory: the harness's own executable stands in
/// as the first module's file, so hostile registers and stacks meet real CFI. A core that names
/// no files first goes through `ElfCoreRewriting.addingExecutable` (`submit --exe`) with that executable.
enum NativeUnwindTarget {
    static let formats: [any ReportFormat] = [MinidumpFormat(), ElfCoreFormat()]

    /// The harness's own executable, for `submit --exe`'s addition to a core that names no files.
    static let ownExecutable = try? Data(contentsOf: URL(fileURLWithPath: "/proc/self/exe"), options: .alwaysMapped)

    static func unwind(_ input: Data) throws(FuzzFailure) -> String {
        var data = input
        if ElfCoreFormat().matches(data) {
            // A core that names no files gets the harness's executable, as `submit --exe` adds it
            // (refused when it does not fit, which is most of the time: the check is the point).
            if let exe = ownExecutable, case .added(let core)? = try? ElfCoreRewriting.addingExecutable(exe, path: "/proc/self/exe", to: data) {
                data = core
            }
            // What `submit` keeps of a core past the limit must be a core that reads as one
            // whenever the whole one did, with the same threads.
            if let slim = try? ElfCoreRewriting.slimmed(data), let whole = try? ElfCoreFormat().parse(data) {
                do {
                    let kept = try ElfCoreFormat().parse(slim)
                    guard kept.threads.count == whole.threads.count else {
                        throw FuzzFailure("the slimmed core has \(kept.threads.count) threads, the whole one \(whole.threads.count)")
                    }
                } catch let failure as FuzzFailure {
                    throw failure
                } catch {
                    throw FuzzFailure("the whole core reads, its slimmed copy does not: \(error)")
                }
            }
        }
        guard let format = formats.first(where: { $0.matches(data) }) else { return "skipped: neither a minidump nor a core file" }
        let report: RawReport
        do { report = try format.parse(data) } catch {
            if error.description.isEmpty { throw FuzzFailure("a refusal without a message") }
            return "refused: \(error)"
        }
        guard let native = report.native else { throw FuzzFailure("a parsed \(format.id) carries no capture") }
        guard native.threads.count == report.threads.count else {
            throw FuzzFailure("\(native.threads.count) captured threads for \(report.threads.count) threads")
        }
        for (a, b) in zip(native.memory, native.memory.dropFirst()) {
            guard let end = a.end, end <= b.start else { throw FuzzFailure("memory ranges out of order or overlapping") }
        }
        var files: [NativeUnwinder.ModuleFile] = []
        if !report.images.isEmpty {
            let fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC)
            if fd >= 0 { files.append(NativeUnwinder.ModuleFile(imageIndex: 0, descriptor: fd)) }
        }
        let (threads, _) = NativeUnwinder().unwind(native, images: report.images, files: files)
        guard threads.count == native.threads.count else { throw FuzzFailure("\(threads.count) walks for \(native.threads.count) threads") }
        var total = 0
        for (i, frames) in threads.enumerated() {
            guard frames.first?.trust == .context, frames.first?.address.value == native.threads[i].pc else {
                throw FuzzFailure("thread \(i): the walk does not start at its context")
            }
            guard frames.count <= NativeUnwinder.maxFrames else {
                throw FuzzFailure("thread \(i): \(frames.count) frames, past the bounds")
            }
            total += frames.count
        }
        return "parsed as \(format.id): \(threads.count) threads unwound, \(total) frames"
    }
}
