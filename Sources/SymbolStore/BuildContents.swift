import DebugInfo
import Foundation
import ReportModel

/// One ELF or Mach-O file found in a build (an app, an `.xcarchive`, an `.ipa` or `.apk`, a
/// build folder), identified, not stored: what `symbols verify` checks the store against.
public struct BuildFile: Sendable {
    /// Where it was found (`App.ipa/Payload/App.app/App` inside an archive).
    public var path: String
    /// The file `symbols add` or `upload` takes to store it: itself, or the archive it came out of.
    public var upload: String
    /// One per slice (one for an ELF file).
    public var slices: [Slice]

    /// One slice: an image the app ships (what a crash report names by its id), or a debug file.
    public struct Slice: Sendable {
        /// GNU build-id or Mach-O UUID; nil for an image that has none (no report can name it).
        public var id: BuildID?
        public var arch: Arch
        /// Holds runnable code (an executable, a shared library, a framework), not debug information alone.
        public var isImage: Bool
        public var hasDWARF: Bool
        public var hasSymbolTable: Bool
        /// `elf` or `mach-o`.
        public var format: String
    }
}

extension SymbolStoreDirectory {
    /// Walks `path` as `addTree` does (directories, `.dSYM` bundles, zip and tar archives
    /// unpacked under `limits`) and identifies every ELF and Mach-O file without storing it.
    /// Unlike `identifyTree`, an image without a build-id or `LC_UUID` is listed (with a nil id)
    /// rather than refused, and an object file without one (a `.o` in a build folder, which
    /// no app ships) is passed over.
    public static func identifyBuild(path: String, limits: StoreLimits, skipped: inout [String]) -> WalkResults<BuildFile> {
        walkTree(path: path, limits: limits, skipped: &skipped) { file, archive in
            let found = { (slices: [BuildFile.Slice]) in BuildFile(path: file.path, upload: archive ?? file.path, slices: slices) }
            do throws(StoreError) {
                let slices = try StoreCandidate.identify(file: file).map { c in
                    BuildFile.Slice(id: c.id, arch: c.arch, isImage: c.isImage, hasDWARF: c.hasDWARF, hasSymbolTable: c.hasSymbolTable, format: c.format)
                }
                return [(file.path, .success(found(slices)))]
            } catch {
                switch error {
                case .noBuildID:
                    guard let elf = try? ElfFile(file: file) else { return [(file.path, .failure(error))] }
                    guard !elf.isDebugOnly && !elf.loadSegments.isEmpty else { return [] }
                    let slice = BuildFile.Slice(
                        id: nil, arch: elf.architecture, isImage: true, hasDWARF: elf.hasDWARF, hasSymbolTable: elf.answersFromSymbols, format: "elf")
                    return [(file.path, .success(found([slice])))]
                case .rejectedMachO(.missingUUID(_, let arch)):
                    let slice = BuildFile.Slice(id: nil, arch: Arch(arch), isImage: true, hasDWARF: false, hasSymbolTable: false, format: "mach-o")
                    return [(file.path, .success(found([slice])))]
                default:
                    return [(file.path, .failure(error))]
                }
            }
        }
    }
}
