import ArgumentParser
import DebugInfo
import Demangling
import Foundation
import JSONFormat
import ReportModel
import SymbolCache
import SymbolStore
import Symbolication
import SystemCalls

/// `stackline lookup`: addresses to functions, files and lines, like llvm-symbolizer.
struct LookupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookup",
        abstract: "Resolve addresses in a stored debug file (reads stdin when no address is given).",
        discussion: """
            Addresses are file addresses unless --load-address is given, in which case they are \
            runtime addresses in an image whose lowest mapping starts there. Text output follows \
            `llvm-symbolizer -i -f -C`.
            """)

    @OptionGroup var options: StoreOptions
    @Option(name: .customLong("build-id"), help: "Build-id (or UUID) of the debug file in the store, or a unique prefix of it.")
    var buildID: String?
    @Option(name: .customLong("obj"), help: "Use this file directly instead of the store.")
    var object: String?
    @Option(help: "Slice of a fat Mach-O file given with --obj (arm64, arm64e, x86_64, …).")
    var arch: String?
    @Option(name: .customLong("load-address"), help: "Runtime load address (lowest mapping) of the image.")
    var loadAddress: String?
    @Flag(name: .customLong("return-addresses"), help: "Treat addresses as return addresses (look up at address - 1).")
    var returnAddresses = false
    @Option(help: "Swift name style: full (module-qualified signature) or simplified (as the Swift backtracer prints).")
    var demangle: Demangler.Style = .full
    @Flag(help: "Print JSON.") var json = false
    @Argument(help: "Addresses (hex, 0x optional).") var addresses: [String] = []

    func validate() throws {
        guard (buildID == nil) != (object == nil) else {
            throw ValidationError("give exactly one of --build-id or --obj")
        }
        guard arch == nil || object != nil else {
            throw ValidationError("--arch chooses a slice of the file given with --obj")
        }
    }

    func run() throws {
        // Checked here rather than in validate() so a bad address is one line, not a usage dump.
        if let loadAddress, Address(parsing: loadAddress) == nil {
            throw fail("stackline lookup: not a hex address: \(loadAddress)")
        }
        for a in addresses where Address(parsing: a) == nil {
            throw fail("stackline lookup: not a hex address: \(a)")
        }
        let source: LookupSource
        if let buildID {
            let id: BuildID
            do throws(StoreError) { id = try options.store.resolve(prefix: buildID) } catch {
                if case .ambiguousBuildID = error { throw fail("stackline lookup: \(error.description)") }
                // A missing id is named by the cache below, in the words workers use.
                do throws(StoreError) { id = try SymbolStoreDirectory.buildID(buildID) } catch {
                    throw fail("stackline lookup: \(error.description)")
                }
            }
            do {
                // The symcache when a usable one lies beside the debug file, else the file.
                let cache = OpenDebugFiles(
                    stores: [options.store], capacity: 1, warn: { printError("stackline lookup: warning: \($0)") })
                source = try cache.source(buildID: id)
            } catch {
                throw fail("stackline lookup: \(error)")
            }
        } else {
            // A file given by path has no symcache: the DWARF path answers.
            do { source = .debugFile(try DebugFile.open(path: object!, arch: arch.map { Arch($0) })) } catch {
                throw fail("stackline lookup: \(error.description)")
            }
        }
        let base = loadAddress.flatMap { Address(parsing: $0)?.value }
        var output = LookupOutput(json: json, style: demangle)
        var badLines = 0

        // A Mach-O arm64 image is Apple code: its addresses may carry pointer-authentication bits.
        let applePAC = source.isMachO && PointerAuthentication.applies(arch: source.architecture, platform: "darwin")

        let cache: SymbolCache?
        let resolver: AddressResolver?
        switch source {
        case .symcache(let c):
            (cache, resolver) = (c, nil)
        case .debugFile(let file):
            (cache, resolver) = (nil, AddressResolver(file: file, names: DemangledNames(style: demangle)))
        }
        let kind: FrameKind = returnAddresses ? .returnAddress : .pc

        func handle(_ raw: UInt64) throws {
            let value = applePAC ? raw & PointerAuthentication.addressMask : raw
            if let cache {
                // Answers written straight from the mapped symcache, with the DWARF path's arithmetic.
                let fileAddress = base.map { Address.fileAddress(runtime: value, loadAddress: $0, preferredBase: cache.preferredBase) } ?? value
                let lookup = Address.lookupAddress(fileAddress, kind: kind)
                try output.write(address: raw, lookup: lookup, cache: cache)
            } else if let resolver {
                let fileAddress = base.map { resolver.fileAddress(runtime: value, loadAddress: $0) } ?? value
                try output.write(address: raw, frames: resolver.resolve(fileAddress, kind: kind))
            }
        }

        do {
            if addresses.isEmpty {
                var lineNumber = 0
                // Bytes, a line at a time, never a String per line; answers go out after every
                // read from stdin, so an interactive caller gets each answer before sending the next.
                try LineInput.forEachLine(fd: 0, afterEachRead: { try output.flush() }) { line in
                    lineNumber += 1
                    guard let a = Address(parsingUTF8: line) else {
                        if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0d }) { return }
                        printError("stackline lookup: line \(lineNumber): not a hex address: \(String(decoding: line, as: UTF8.self))")
                        badLines += 1
                        return
                    }
                    try handle(a.value)
                }
            } else {
                for a in addresses { try handle(Address(parsing: a)!.value) }
            }
            try output.finish()
        } catch {
            // Typically EPIPE: whoever read our output is gone.
            throw fail("stackline lookup: \(error)")
        }
        if badLines > 0 { throw ExitCode(1) }
    }
}

/// Standard input read in chunks and cut into lines, as bytes.
enum LineInput {
    /// Calls `body` with each line (without its newline; a last line without one included), and
    /// `afterEachRead` once the lines of each chunk read are handled.
    static func forEachLine(
        fd: Int32, afterEachRead: () throws -> Void, _ body: (ArraySlice<UInt8>) throws -> Void
    ) throws {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = try chunk.withUnsafeMutableBytes { buffer in try SystemCall.read(fd, into: buffer) }
            if n == 0 { break }
            pending.append(contentsOf: chunk[..<n])
            var start = pending.startIndex
            while let newline = pending[start...].firstIndex(of: 0x0a) {
                try body(pending[start..<newline])
                start = newline + 1
            }
            pending.removeSubrange(..<start)
            try afterEachRead()
        }
        if !pending.isEmpty { try body(pending[...]) }
    }
}

/// Buffered writer for lookup results: batches of 100,000 addresses must not pay a syscall
/// each, and nothing goes through a `String` or `JSONEncoder` (`LookupJSON`).
struct LookupOutput {
    let json: Bool
    let style: Demangler.Style
    private var out = JSONBytes(reservingCapacity: 1 << 16)
    private var first = true

    init(json: Bool, style: Demangler.Style) {
        self.json = json
        self.style = style
        if json { out.bytes.append(UInt8(ascii: "[")) }
    }

    mutating func write(address: UInt64, frames: [ResolvedFrame]) throws {
        if json {
            if !first { out.bytes.append(UInt8(ascii: ",")) }
            first = false
            LookupJSON.appendEntry(address: address, frames: frames, to: &out)
        } else if frames.isEmpty {
            out.bytes.append(contentsOf: "??\n??:0:0\n\n".utf8)
        } else {
            // Names come from the debug file, which whoever uploaded it controls.
            for f in frames {
                out.bytes.append(contentsOf: TerminalText.escape(f.function ?? "??").utf8)
                out.bytes.append(UInt8(ascii: "\n"))
                out.bytes.append(contentsOf: TerminalText.escape(f.file ?? "??").utf8)
                out.bytes.append(UInt8(ascii: ":"))
                out.bytes.append(contentsOf: String(f.line ?? 0).utf8)
                out.bytes.append(UInt8(ascii: ":"))
                out.bytes.append(contentsOf: String(f.column ?? 0).utf8)
                out.bytes.append(UInt8(ascii: "\n"))
            }
            out.bytes.append(UInt8(ascii: "\n"))
        }
        if out.bytes.count > 1 << 16 { try flush() }
    }

    /// The same output for an address answered by a symcache, from its mapped bytes: no
    /// `String` per frame. Text and JSON are byte for byte what `write(address:frames:)` writes
    /// for the DWARF path's frames (the line and column print as 0 when the resolver has nil:
    /// it has nil only where they are 0).
    mutating func write(address: UInt64, lookup: UInt64, cache: SymbolCache) throws {
        if json {
            if !first { out.bytes.append(UInt8(ascii: ",")) }
            first = false
            LookupJSON.appendEntry(address: address, lookup: lookup, cache: cache, style: style, to: &out)
        } else {
            let style = style
            let count = cache.visitFrames(at: lookup) { f in
                Self.appendEscaped(f.name(style), to: &out.bytes)
                out.bytes.append(UInt8(ascii: "\n"))
                Self.appendEscaped(f.file, to: &out.bytes)
                out.bytes.append(UInt8(ascii: ":"))
                JSONBytes.decimal(f.line, to: &out.bytes)
                out.bytes.append(UInt8(ascii: ":"))
                JSONBytes.decimal(f.column, to: &out.bytes)
                out.bytes.append(UInt8(ascii: "\n"))
            }
            if count == 0 { out.bytes.append(contentsOf: "??\n??:0:0\n".utf8) }
            out.bytes.append(UInt8(ascii: "\n"))
        }
        if out.bytes.count > 1 << 16 { try flush() }
    }

    /// A symcache string as `TerminalText.escape` prints it: the writer recorded which strings
    /// it would change, so only those become a `String`.
    private static func appendEscaped(_ s: CachedString?, to bytes: inout [UInt8]) {
        guard let s else { return bytes.append(contentsOf: "??".utf8) }
        if s.needsTerminalEscaping {
            bytes.append(contentsOf: TerminalText.escape(s.string).utf8)
        } else {
            bytes.append(contentsOf: s.bytes)
        }
    }

    mutating func finish() throws {
        if json { out.bytes.append(contentsOf: "]\n".utf8) }
        try flush()
    }

    mutating func flush() throws {
        guard !out.bytes.isEmpty else { return }
        try out.bytes.withUnsafeBytes { bytes in try SystemCall.writeAll(1, bytes, path: "standard output") }
        out.bytes.removeAll(keepingCapacity: true)
    }
}

extension Demangler.Style: ExpressibleByArgument {}
