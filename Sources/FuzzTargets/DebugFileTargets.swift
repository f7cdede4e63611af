import DebugInfo
import Foundation

/// The debug-file readers, walked the way `symbols add` validates a file and a worker then
/// uses it: open, identify (build id or UUID, architecture, kind), index every DWARF unit as a
/// symcache build does, and look up a few addresses in the code sections.
enum DebugFileTargets {
    static func elf(_ data: Data) throws(FuzzFailure) -> String {
        let path = try Scratch.shared.write(data, name: "input.elf")
        let elf: ElfFile
        let debug: DebugFile
        do {
            elf = try ElfFile(path: path)
            debug = try DebugFile(elf: elf)
        } catch {
            return try refusal(error.description)
        }
        _ = (elf.architecture, elf.kindDescription, elf.isDebugOnly, elf.hasDynamicSymbols)
        // As a symcache build reads it: every unit, on two threads when the file has several
        // (a second reader of its own), then libdw's reader ended and the pages dropped.
        debug.endDWARFReading()
        let code = elf.sections.filter { $0.isExecutable }.prefix(4).map { ($0.address, $0.size) }
        let found = lookUp(debug, in: code + [(elf.preferredBase, 0)])
        return "opened: build id \(elf.buildID?.hex ?? "none"), \(elf.sections.count) sections, \(debug.unitCount) units, \(debug.symbolCount) symbols, \(found) lookups answered"
    }

    static func machO(_ data: Data) throws(FuzzFailure) -> String {
        let path = try Scratch.shared.write(data, name: "input.macho")
        let file: MachOFile
        do { file = try MachOFile(path: path) } catch { return try refusal(error.description) }
        var outcomes: [String] = []
        for slice in file.slices {
            _ = (slice.kindDescription, slice.isImage, slice.hasDWARF, slice.hasSymbolTable)
            let debug: DebugFile
            do { debug = try DebugFile(machO: path, uuid: slice.uuid) } catch {
                outcomes.append("\(slice.arch) " + (try refusal(error.description)))
                continue
            }
            debug.indexAllUnits()
            let text = slice.textSection.map { [($0.address, $0.size)] } ?? []
            let found = lookUp(debug, in: text + [(slice.textVMAddress, 0)])
            outcomes.append("\(slice.arch) \(slice.uuid): \(debug.unitCount) units, \(debug.symbolCount) symbols, \(found) lookups answered")
        }
        return "opened: " + outcomes.joined(separator: "; ")
    }

    private static func refusal(_ message: String) throws(FuzzFailure) -> String {
        if message.isEmpty { throw FuzzFailure("refusal without a message") }
        return "refused: \(message)"
    }

    /// A handful of lookups per range: its start, middle and last byte. Returns how many found something.
    private static func lookUp(_ debug: DebugFile, in ranges: [(start: UInt64, size: UInt64)]) -> Int {
        var found = 0
        for (start, size) in ranges {
            for offset in Set([0, size / 2, max(size, 1) - 1]) where !debug.frames(at: start &+ offset).isEmpty {
                found += 1
            }
        }
        return found
    }
}
