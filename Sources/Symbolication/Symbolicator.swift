import DebugInfo
import Demangling
import ReportModel
import SymbolStore
import Unwinding
import Foundation

/// Turns a `RawReport` into a `SymbolicatedReport` using the debug files in a list of stores
/// (the first holding a build-id's debug file answers; see `OpenDebugFiles`).
/// Keeps debug files and symcaches open (`OpenDebugFiles`); keep one per process and reuse it across jobs.
public final class Symbolicator {
    /// Every store searched, in order.
    public let stores: [SymbolStoreDirectory]
    /// What a report's `ImageSymbols.searched` calls each of `stores`, in the same order.
    public let storeNames: [String]
    /// The first store searched.
    public let store: SymbolStoreDirectory
    public let debugFiles: OpenDebugFiles

    /// Reports show Swift names the way the Swift runtime's own backtracer does.
    public let names: DemangledNames

    /// `stores` must not be empty.
    /// `usesSymbolCaches: false` parses every debug file and leaves symcaches alone.
    /// `storeNames` names the stores in reports (`ImageSymbols.searched`); by default one store is
    /// "symbol store" (a user fixes it by uploading, wherever it lies) and several are their
    /// paths (a worker given several `--symbols` folders: its operator needs to know which).
    public init(
        stores: [SymbolStoreDirectory], cacheCapacity: Int = 32, style: Demangler.Style = .simplified,
        usesSymbolCaches: Bool = true, storeNames: [String]? = nil
    ) {
        self.debugFiles = OpenDebugFiles(stores: stores, capacity: cacheCapacity, usesSymbolCaches: usesSymbolCaches)
        self.stores = stores
        self.storeNames = storeNames.flatMap { $0.count == stores.count ? $0 : nil }
            ?? (stores.count == 1 ? ["symbol store"] : stores.map(\.root))
        self.store = debugFiles.store
        self.names = DemangledNames(style: style)
    }

    public convenience init(store: SymbolStoreDirectory, cacheCapacity: Int = 32, style: Demangler.Style = .simplified) {
        self.init(stores: [store], cacheCapacity: cacheCapacity, style: style)
    }

    public func symbolicate(_ report: RawReport) -> SymbolicatedReport {
        var report = report
        if report.native != nil { unwind(&report) }
        var warnings = report.warnings
        var context = FrameContext(
            report: report, debugFiles: debugFiles, locator: ImageLocator(images: report.images), names: names)
        let threads = report.threads.map { thread in
            SymbolicatedThread(
                index: thread.index, name: thread.name, crashed: thread.crashed,
                frames: context.symbolicate(thread.frames), part: thread.part)
        }
        let lag = report.lag.map { lag in
            SymbolicatedLag(
                samples: lag.samples.map { SymbolicatedSample(timestamp: $0.timestamp, frames: context.symbolicate($0.frames)) },
                profile: lag.profile.map { node in
                    // A profile node's address is a method address the SDK recorded, not a return address.
                    let frames = node.address.map { context.symbolicate([RawFrame(address: $0, kind: .pc)]) } ?? []
                    return SymbolicatedProfileNode(node: node, frames: frames)
                })
        }
        for (i, state) in context.states.enumerated() {
            if case .unusable(let id?, _)? = state, !id.hex.isEmpty {
                warnings.append("image \(report.images[i].name): debug file for \(id) could not be used")
            }
            if case .replaced(_, let reason)? = state {
                warnings.append("image \(report.images[i].name): \(reason)")
            }
        }
        let (resolved, total) = (context.resolved, context.total)
        let status: ReportStatus = resolved == total && total > 0 ? .complete : (resolved == 0 ? .unsymbolicated : .partial)
        return SymbolicatedReport(
            format: report.format, kind: report.kind, status: status,
            missingBuildIds: context.missing, app: report.app, os: report.os,
            arch: report.arch, timestamp: report.timestamp, exception: report.exception,
            images: report.images, imageSymbols: context.imageSymbols(searched: storeNames), threads: threads, lag: lag,
            annotations: report.annotations, warnings: warnings)
    }

    /// Per image: its debug file, or why there is none.
    fileprivate enum ImageState {
        /// `lineTables`: the file has DWARF (nil: its store entry does not say; the frames decide).
        case loaded(LookupSource, lineTables: Bool?)
        case missing(BuildID)
        /// No id (nil), or the stored file cannot be opened (`reason`).
        case unusable(BuildID?, reason: String)
        /// The stored file is another build's: counted as missing, with a warning saying why.
        case replaced(BuildID, reason: String)
        /// The stored file is of another architecture: its answers would be another program's,
        /// so it is not used, and the image counts as missing (adding the right file fixes it).
        case wrongArchitecture(BuildID, reason: String)
    }

    /// What each image's frames came to, for its `ImageSymbols`.
    fileprivate struct ImageTally {
        var frames = 0
        var deviceNamed = 0
        var withLines = 0
        var symbolsOnly = 0
    }

    /// Resolves frame lists of one report, counting what resolved and which build ids were missing.
    fileprivate struct FrameContext {
        let report: RawReport
        let debugFiles: OpenDebugFiles
        let locator: ImageLocator
        let names: DemangledNames
        /// Filled the first time a frame falls in an image: an Apple report lists hundreds of
        /// images, and opening debug files no frame needs would also evict useful ones.
        private(set) var states: [ImageState?]
        private var tallies: [ImageTally]
        var missing: [BuildID] = []
        var resolved = 0
        var total = 0

        init(report: RawReport, debugFiles: OpenDebugFiles, locator: ImageLocator, names: DemangledNames) {
            self.report = report
            self.debugFiles = debugFiles
            self.locator = locator
            self.names = names
            states = Array(repeating: nil, count: report.images.count)
            tallies = Array(repeating: ImageTally(), count: report.images.count)
        }

        mutating func state(ofImage index: Int) -> ImageState {
            if let known = states[index] { return known }
            let state: ImageState
            let image = report.images[index]
            if let id = image.id, !id.hex.isEmpty {
                do throws(LookupError) {
                    let source = try debugFiles.source(buildID: id)
                    if let wanted = image.arch ?? report.arch, let reason = Self.architectureMismatch(wanted: wanted, stored: source.architecture) {
                        state = .wrongArchitecture(id, reason: reason)
                    } else {
                        state = .loaded(source, lineTables: debugFiles.lineTables(buildID: id))
                    }
                } catch {
                    switch error {
                    case .missingDebugFile(let id): state = .missing(id)
                    case .mismatchedDebugFile(let id, _): state = .replaced(id, reason: error.description)
                    case .unusableDebugFile(let id, let reason): state = .unusable(id, reason: reason)
                    case .symbolCacheFailed(let id, let reason): state = .unusable(id, reason: reason)
                    }
                }
            } else {
                state = .unusable(nil, reason: "the report gives no build id or UUID for this image")
            }
            states[index] = state
            return state
        }

        /// Why a file of `stored` cannot answer for an image of `wanted`, or nil when it can.
        /// Only a clear difference counts: both known and of different ELF machines (arm64 and
        /// arm64e share one, as an arm64 app in an arm64e process does).
        static func architectureMismatch(wanted: Arch, stored: Arch) -> String? {
            guard let want = wanted.elfMachine, let have = stored.elfMachine, want != have else { return nil }
            return "the debug file stored for this build id is \(stored.name); the report's image is \(wanted.name)"
        }

        /// Every image's status, in image order, from the states and what its frames came to.
        func imageSymbols(searched stores: [String]) -> [ImageSymbols] {
            report.images.enumerated().map { index, image in
                let id = image.id.flatMap { $0.hex.isEmpty ? nil : $0 }
                let tally = tallies[index]
                func symbols(_ status: SymbolStatus, _ detail: String?, searched: [String]? = nil) -> ImageSymbols {
                    ImageSymbols(image: index, name: image.name, buildId: id, status: status, detail: detail, searched: searched)
                }
                let deviceOnly = tally.frames > 0 && tally.deviceNamed == tally.frames
                switch states[index] {
                case nil:
                    // Only the index: the name and id are in `images` (see `ImageSymbols`).
                    return ImageSymbols(image: index, name: nil, buildId: nil, status: .unused)
                case .loaded(_, let lineTables)?:
                    let hasLines = lineTables ?? (tally.withLines > 0 || tally.symbolsOnly == 0)
                    return hasLines
                        ? symbols(.ok, "answered from the debug file's line tables (DWARF)")
                        : symbols(.symbolTableOnly, "the debug file has no line tables (DWARF): functions from its symbols, without file:line")
                case .missing(let id)?:
                    let searched = stores.joined(separator: ", ")
                    return deviceOnly
                        ? symbols(.deviceSymbolsOnly, "no debug file for build id \(id) (searched: \(searched)); the device's names are shown, without file:line", searched: stores)
                        : symbols(.notFound, "no debug file for build id \(id) (searched: \(searched))", searched: stores)
                case .unusable(nil, let reason)?:
                    return deviceOnly
                        ? symbols(.deviceSymbolsOnly, reason + "; the device's names are shown, without file:line")
                        : symbols(.noIdentifier, reason)
                case .unusable(_?, let reason)?, .replaced(_, let reason)?:
                    return symbols(.unreadable, reason)
                case .wrongArchitecture(_, let reason)?:
                    return symbols(.wrongArchitecture, reason)
                }
            }
        }

        /// Each raw frame becomes one entry per inline level, innermost first.
        mutating func symbolicate(_ raws: [RawFrame]) -> [SymbolicatedFrame] {
            var frames: [SymbolicatedFrame] = []
            // One entry per raw frame at least; growing from empty copied (and retained) every
            // frame's strings five times over for a 30-frame stack.
            frames.reserveCapacity(raws.count)
            for (index, raw) in raws.enumerated() {
                total += 1
                // The parser could not read this frame's address and said why in a warning.
                if raw.malformed == true {
                    frames.append(SymbolicatedFrame(index: index, address: raw.address, kind: raw.kind, status: .malformed))
                    continue
                }
                guard let location = report.location(of: raw, locator: locator) else {
                    frames.append(deviceNamed(
                        SymbolicatedFrame(index: index, address: raw.address, kind: raw.kind, status: .outsideAnyImage), raw))
                    continue
                }
                let (imageIndex, address) = (location.imageIndex, location.address)
                let image = report.images[imageIndex]
                let relative = Address(address &- image.loadAddress.value)
                var base = SymbolicatedFrame(
                    index: index, address: raw.address, kind: raw.kind, image: image.name,
                    imageOffset: relative, status: .missingDebugFile)
                tallies[imageIndex].frames += 1
                switch state(ofImage: imageIndex) {
                case .missing(let id), .replaced(let id, _), .wrongArchitecture(let id, _):
                    if !missing.contains(id) { missing.append(id) }
                    frames.append(tallied(deviceNamed(base, raw), imageIndex))
                case .unusable:
                    base.status = .malformed
                    frames.append(tallied(deviceNamed(base, raw), imageIndex))
                case .loaded(let source, _):
                    let resolver = AddressResolver(source: source, names: names)
                    let fileAddress = resolver.fileAddress(
                        runtime: address, loadAddress: image.loadAddress.value, preferredBase: image.vmAddress?.value)
                    base.imageOffset = Address(fileAddress)
                    let levels = resolver.resolve(fileAddress, kind: raw.kind)
                    if levels.isEmpty {
                        base.status = .noSymbol
                        frames.append(deviceNamed(base, raw))
                        continue
                    }
                    resolved += 1
                    if levels.contains(where: { !$0.noLineInfo }) { tallies[imageIndex].withLines += 1 } else { tallies[imageIndex].symbolsOnly += 1 }
                    for level in levels {
                        var f = base
                        f.status = level.noLineInfo ? .noLineInfo : .symbolicated
                        f.symbol = level.symbol
                        f.function = level.function
                        f.offset = level.offset
                        // A symbol-table-only answer may carry an object name from STT_FILE
                        // (llvm-symbolizer prints it as "Swift.o:0:0"); in a report that reads
                        // like a source location, so such frames show none.
                        if !level.noLineInfo {
                            f.file = level.file
                            f.line = level.line
                            f.column = level.column
                        }
                        f.inlined = level.inlined
                        frames.append(f)
                    }
                }
            }
            // How an unwound frame was found stays with each of its levels.
            if raws.contains(where: { $0.trust != nil }) {
                for i in frames.indices { frames[i].trust = raws[frames[i].index].trust }
            }
            return frames
        }

        /// Counts a frame of an image without a usable debug file that the device named.
        mutating func tallied(_ frame: SymbolicatedFrame, _ imageIndex: Int) -> SymbolicatedFrame {
            if frame.status == .deviceSymbol { tallies[imageIndex].deviceNamed += 1 }
            return frame
        }

        /// A frame no debug file resolved keeps the name the device gave it, marked as such: a
        /// report never comes out with less than it went in with. A stored debug file always wins,
        /// because this is only called where none answered.
        func deviceNamed(_ frame: SymbolicatedFrame, _ raw: RawFrame) -> SymbolicatedFrame {
            guard let symbol = raw.symbol, !symbol.isEmpty else { return frame }
            var named = frame
            named.status = .deviceSymbol
            named.symbol = symbol
            named.function = names.demangle(symbol)
            named.offset = raw.symbolOffset
            return named
        }
    }
}

extension Symbolicator {
    /// A native crash's threads walked with the stored files of its modules (`NativeUnwinder`):
    /// each module's executable, whose `.eh_frame` the walk needs, else its debug file. The
    /// capture is dropped once used: it is not part of the result.
    func unwind(_ report: inout RawReport) {
        guard let native = report.native else { return }
        var files: [NativeUnwinder.ModuleFile] = []
        for (index, image) in report.images.enumerated() {
            guard let id = image.id, !id.isUnknown else { continue }
            search: for store in stores {
                for role in [SymbolStoreDirectory.Role.executable, .debugInfo] {
                    guard let file = try? store.open(id, role: role) else { continue }
                    // A Mach-O file (a macOS or iOS dump's module) is no ELF for libdwfl: such
                    // frames are walked by frame pointers, without a warning per module.
                    guard ObjectFormat.of(file: file) == .elf else { break search }
                    let descriptor = dup(file.descriptor)
                    if descriptor >= 0 { files.append(NativeUnwinder.ModuleFile(imageIndex: index, descriptor: descriptor)) }
                    break search
                }
            }
        }
        let (threads, warnings) = NativeUnwinder().unwind(native, images: report.images, files: files)
        for (i, frames) in zip(report.threads.indices, threads) { report.threads[i].frames = frames }
        report.warnings += warnings
        report.native = nil
    }
}
