import ArgumentParser
import Foundation
import JSONFormat
import ReportModel
import ServiceClient
import SymbolFetch
import SymbolStore
import Symbolication

extension SymbolsCommand {
    /// `stackline symbols verify`: a release gate that finds missing debug files before crashes do.
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check that every image a build ships has debug files that answer.",
            discussion: """
                PATH is an .xcarchive, an .app folder, an .ipa or .apk (zips), or any build \
                folder; it is walked as `symbols add` walks it. Every Mach-O and ELF image it \
                ships (the app, extensions, frameworks, .so libraries, each slice of a fat file; \
                not dSYMs or .debug files) must have a debug file with line tables for its \
                build-id or UUID in the store, or with --server on that server's debuginfod \
                endpoint. Each debug file found must answer: a few functions of its own symbol \
                table are looked up and must come back with their name and a file:line. \
                Statuses: ok, missing, symbolTableOnly, noIdentifier, unreadable, answersWrong. \
                Exit status 0 when every image is ok, 1 otherwise, 64 for a PATH that is not \
                there or holds no image.
                """)
        @OptionGroup var options: StoreOptions
        @Option(help: "Check this `stackline serve` (its /buildid endpoint) instead of the store, e.g. http://symbols.example:8080.")
        var server: String?
        @Option(help: "With --server, a token of scope `read` (default: $STACKLINE_TOKEN, which keeps it off the command line).")
        var token: String?
        @Flag(help: "Machine-readable output.") var json = false
        @Argument(help: "An .xcarchive, .app, .ipa, .apk or build folder.") var path: String

        func validate() throws {
            if server != nil && options.symbols != nil { throw ValidationError("--server and --symbols each name where to look: give one") }
            if server == nil && token != nil { throw ValidationError("--token only applies with --server") }
            guard FileManager.default.fileExists(atPath: path) else {
                throw ValidationError("\(TerminalText.escape(path)): no such file or directory")
            }
        }

        func run() throws {
            // A trailing slash would make every image's path start with "/".
            var root = path
            while root.count > 1 && root.hasSuffix("/") { root.removeLast() }
            var skipped: [String] = []
            let build = SymbolStoreDirectory.identifyBuild(path: root, limits: processEnvironment.storeLimits, skipped: &skipped)
            // PATH itself is neither a folder, an archive nor a binary (a text file, a .tar.gz): a usage error.
            if build.count == 1, case .failure(let error) = build[0].result, case .notDebugFile = error {
                throw ValidationError(TerminalText.escape(error.description))
            }

            let images: [VerifiedImage]
            let lookedIn: String
            if let server {
                lookedIn = "the server \(server)"
                images = try Self.overServer(server, token: token ?? processEnvironment.token, build: build, root: root)
            } else {
                let store = options.store
                lookedIn = "the store \(store.root)"
                images = SymbolVerifier(stores: [store]).verify(build, root: root)
            }
            guard !images.isEmpty else {
                throw ValidationError("\(TerminalText.escape(path)) holds no ELF or Mach-O image (\(skipped.count) other files passed over)")
            }
            let report = SymbolsVerification(path: path, lookedIn: lookedIn, images: images.map { image in
                var image = image
                image.fix = fix(for: image)
                return image
            })
            if json {
                print(try encodeJSON(report))
            } else {
                print(Self.render(report))
            }
            if !report.ok { throw ExitCode(1) }
        }

        /// The debug files of the build's images, fetched from `server` through the same client
        /// and checks a remote worker uses (each file checked by build-id) into a temporary
        /// directory that is removed afterwards, then verified there.
        static func overServer(_ server: String, token: String?, build: SymbolStoreDirectory.WalkResults<BuildFile>, root: String) throws -> [VerifiedImage] {
            guard let token, !token.isEmpty else {
                throw ValidationError("no token: pass --token or set STACKLINE_TOKEN (a token of scope read)")
            }
            let client: ServiceClient
            do { client = try ServiceClient(base: server, token: token) } catch { throw fail("stackline symbols verify: \(error)") }
            let scratch = processEnvironment.storeLimits.temporaryDirectory + "/stackline-verify-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
            do {
                // Fails if the name exists: the directory is this run's own.
                try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            } catch {
                throw fail("stackline symbols verify: cannot make a temporary directory \(scratch): \(error.localizedDescription)")
            }
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            let cache: FetchedDebugFiles
            do {
                // No capacity to speak of: the run holds only what one build needs, and removes it.
                cache = try FetchedDebugFiles(directory: scratch, capacityBytes: 1 << 50, client: client, localStores: [])
            } catch {
                throw fail("stackline symbols verify: \(error)")
            }
            let fetched = cache.ensure(SymbolVerifier.imageIDs(in: build))
            defer { fetched.release() }
            var notFound: [BuildID: String] = [:]
            for id in fetched.missing {
                notFound[id] = fetched.errors[id]?.description ?? "fetching \(id) from \(server) gave no file"
            }
            var verifier = SymbolVerifier(stores: [cache.store], notFound: notFound)
            verifier.usesSymbolCaches = false
            return verifier.verify(build, root: root)
        }

        /// The command that fixes `image`, when one does.
        func fix(for image: VerifiedImage) -> String? {
            let storeOption = options.symbols.map { " --symbols " + Self.shellQuoted($0) } ?? ""
            let debugFile = image.debugFileInBuild.map(Self.shellQuoted)
                ?? (image.format == "mach-o" ? "<the dSYM of \(image.id?.hex ?? "?")>" : "<the debug file of \(image.id?.hex ?? "?")>")
            let store = server.map { "STACKLINE_TOKEN=… stackline symbols upload --server \(Self.shellQuoted($0)) \(debugFile)" }
                ?? "stackline symbols add\(storeOption) \(debugFile)"
            switch image.status {
            case .ok:
                return nil
            case .missing, .symbolTableOnly:
                return store
            case .unreadable:
                // The stored file is damaged or another build's: storing the right one replaces it.
                return image.id == nil ? nil : store
            case .answersWrong:
                // The store keeps a stored file against one of equal quality: remove it first.
                guard server == nil, let id = image.id else { return nil }
                return "stackline symbols rm\(storeOption) \(id.hex) && \(store)"
            case .noIdentifier:
                return image.format == "elf" ? "relink with -Wl,--build-id" : "relink without -no_uuid"
            }
        }

        /// The table, then one line per image that is not ok saying why, then the counts.
        static func render(_ report: SymbolsVerification) -> String {
            var table = Table("IMAGE", "ARCH", "ID", "STATUS", "FIX")
            for image in report.images {
                table.add(image.image, image.arch?.name ?? "-", image.id?.hex ?? "-", image.status.rawValue, image.fix ?? "")
            }
            var lines = [table.render(), ""]
            for image in report.images where image.status != .ok {
                lines.append(TerminalText.escape("\(image.image): \(image.status.rawValue): \(image.detail ?? "")"))
            }
            let counts = ImageSymbolsStatus.allCases.compactMap { status in
                report.counts[status.rawValue].flatMap { $0 > 0 ? "\($0) \(status.rawValue)" : nil }
            }
            let n = report.images.count
            lines.append(TerminalText.escape("\(n) image\(n == 1 ? "" : "s") checked against \(report.lookedIn): \(counts.joined(separator: ", "))"))
            return lines.joined(separator: "\n")
        }

        /// `text` as one shell word: as it is when it holds only characters no shell treats
        /// specially, else in single quotes.
        static func shellQuoted(_ text: String) -> String {
            let plain = !text.isEmpty && text.unicodeScalars.allSatisfy { scalar in
                CharacterSet.alphanumerics.contains(scalar) && scalar.isASCII || "@%+=:,./_-".unicodeScalars.contains(scalar)
            }
            return plain ? text : "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
        }
    }
}
