import ArgumentParser
import DebugInfo
import Foundation
import ReportModel
import SymbolStore
import Symbolication

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
        let file: DebugFile
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
                file = try DebugFileCache(store: options.store, capacity: 1).file(buildID: id)
            } catch {
                throw fail("stackline lookup: \(error)")
            }
        } else {
            do { file = try DebugFile.open(path: object!, arch: arch.map { Arch($0) }) } catch { throw fail("stackline lookup: \(error.description)") }
        }
        let resolver = AddressResolver(file: file, names: DemangleCache(style: demangle))
        let base = loadAddress.flatMap { Address(parsing: $0)?.value }
        let kind: FrameKind = returnAddresses ? .returnAddress : .pc
        var output = LookupOutput(json: json)
        var badLines = 0

        // A Mach-O arm64 image is Apple code: its addresses may carry pointer-authentication bits.
        let applePAC = file.machO != nil && PointerAuthentication.applies(arch: file.architecture, platform: "darwin")

        func handle(_ text: String, _ raw: UInt64) {
            let value = applePAC ? raw & PointerAuthentication.addressMask : raw
            let fileAddress = base.map { resolver.fileAddress(runtime: value, loadAddress: $0) } ?? value
            output.write(input: text, address: raw, frames: resolver.resolve(fileAddress, kind: kind))
        }

        if addresses.isEmpty {
            var lineNumber = 0
            while let line = readLine(strippingNewline: true) {
                lineNumber += 1
                // Address(parsing:) trims; Foundation's trimmingCharacters cost 15% of a batch.
                guard let a = Address(parsing: line) else {
                    if line.allSatisfy({ $0 == " " || $0 == "\t" || $0 == "\r" }) { continue }
                    printError("stackline lookup: line \(lineNumber): not a hex address: \(line)")
                    badLines += 1
                    continue
                }
                handle(line, a.value)
            }
        } else {
            for a in addresses { handle(a, Address(parsing: a)!.value) }
        }
        output.finish()
        if badLines > 0 { throw ExitCode(1) }
    }
}

/// Buffered writer for lookup results: batches of 100,000 addresses must not pay a syscall each.
struct LookupOutput {
    let json: Bool
    private var buffer: [UInt8] = []
    private var first = true

    init(json: Bool) {
        self.json = json
        buffer.reserveCapacity(1 << 16)
        if json { buffer.append(UInt8(ascii: "[")) }
    }

    private struct Entry: Encodable {
        let address: String
        let frames: [ResolvedFrame]
    }

    private static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()

    mutating func write(input: String, address: UInt64, frames: [ResolvedFrame]) {
        if json {
            if !first { buffer.append(UInt8(ascii: ",")) }
            first = false
            let entry = Entry(address: Address(address).description, frames: frames)
            if let data = try? Self.encoder.encode(entry) { buffer.append(contentsOf: data) }
        } else if frames.isEmpty {
            buffer.append(contentsOf: "??\n??:0:0\n\n".utf8)
        } else {
            // Names come from the debug file, which whoever uploaded it controls.
            for f in frames {
                buffer.append(contentsOf: TerminalText.escape(f.function ?? "??").utf8)
                buffer.append(UInt8(ascii: "\n"))
                buffer.append(contentsOf: "\(TerminalText.escape(f.file ?? "??")):\(f.line ?? 0):\(f.column ?? 0)\n".utf8)
            }
            buffer.append(UInt8(ascii: "\n"))
        }
        if buffer.count > 1 << 16 { flush() }
    }

    mutating func finish() {
        if json { buffer.append(contentsOf: "]\n".utf8) }
        flush()
    }

    private mutating func flush() {
        FileHandle.standardOutput.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }
}

extension Demangler.Style: ExpressibleByArgument {}
