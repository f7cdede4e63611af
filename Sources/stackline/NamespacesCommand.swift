import ArgumentParser
import Foundation
import ReportModel
import Storage
import APIModel
import JSONFormat
import SDKProtocol

/// `stackline namespaces …`: the reporting SDK's namespaces, their AES keys and remote configurations.
struct NamespacesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "namespaces",
        abstract: "Create and configure SDK namespaces: payload keys and remote configuration.",
        discussion: """
            A namespace is the SDK's `namespace`: records uploaded to POST /api/v1/ingest name \
            one, and GET /api/v1/config serves its configuration. `configure` and `set-key` \
            create a namespace that does not exist yet. The wire format: docs/sdk-protocol.md.
            """,
        subcommands: [List.self, Show.self, Configure.self, SetKey.self])

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List namespaces: key, configuration, reports.")
        @OptionGroup var database: DatabaseOptions
        @Flag(help: "Machine-readable output.") var json = false

        func run() throws {
            let namespaces = try database.open(for: "namespaces list").namespaces()
            if json {
                print(try encodeJSON(namespaces.map(NamespaceJSON.init)))
                return
            }
            if namespaces.isEmpty {
                printLine("no namespaces (`stackline namespaces configure NS --file config.json` creates one)")
                return
            }
            var table = Table("NAMESPACE", "KEY", "CONFIGURATION", "REPORTS", "UPDATED")
            for namespace in namespaces {
                let entry = NamespaceJSON(namespace)
                table.add(
                    entry.name, entry.keyBits.map { "AES-\($0)" } ?? "none", entry.configured ? "set" : "defaults",
                    "\(entry.reports)", entry.updatedAt.rfc3339)
            }
            print(table.render())
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the remote configuration a namespace serves (never its key).")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The namespace.") var namespace: String

        func run() throws {
            let name = try NamespaceArgument.parse(namespace, command: "show")
            guard let stored = try database.open(for: "namespaces show").namespace(name.value) else {
                throw fail("stackline namespaces show: no namespace '\(name)'")
            }
            print(try SDKConfiguration(storedJSON: stored.configuration).stored())
        }
    }

    struct Configure: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set a namespace's remote configuration from a JSON file.",
            discussion: """
                The file holds the design's configuration model: url, isUpload, isGather, \
                isUpdateClear, maxBodyMByte (1–3), periodicTimerSecond (1–30), maxItem (1–100), \
                maxFlowMByte (1–100), expirationDay (1–30) and monitorList (objects with type, \
                onlyWifi, isRealtime, isUploadPayload). Keys left out keep the defaults; unknown \
                keys, wrong types and values out of range are refused and nothing is stored.
                """)
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The namespace (created if it does not exist).") var namespace: String
        @Option(help: "The configuration JSON file, or - for stdin.") var file: String

        func run() throws {
            let name = try NamespaceArgument.parse(namespace, command: "configure")
            let data = try NamespaceArgument.read(file, command: "configure")
            let config: SDKConfiguration
            do {
                config = try SDKConfiguration(validating: data)
            } catch {
                throw fail("stackline namespaces configure: \(file): \(error)")
            }
            try database.openOrCreate().setNamespaceConfiguration(name.value, json: config.stored())
            printLine("configured namespace \(name)")
        }
    }

    struct SetKey: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-key",
            abstract: "Generate (or set) the AES-CBC key a namespace's SDK payloads are encrypted with.",
            discussion: """
                Prints the key once, as hex: build it into the SDK. It is stored so the server \
                can decrypt, and no other command prints it. Replacing a key breaks SDKs built \
                with the old one, so an existing key is only replaced with --replace.
                """)
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The namespace (created if it does not exist).") var namespace: String
        @Option(help: "Use this key (hex: 32, 48 or 64 digits) instead of generating one.") var key: String?
        @Option(help: "Size of a generated key: 128 (the design's AES-128), 192 or 256.") var bits = 128
        @Flag(help: "Replace the namespace's existing key.") var replace = false

        func validate() throws {
            if ![128, 192, 256].contains(bits) { throw ValidationError("--bits must be 128, 192 or 256") }
        }

        func run() throws {
            let name = try NamespaceArgument.parse(namespace, command: "set-key")
            let newKey: NamespaceKey
            do {
                newKey = try key.map { try NamespaceKey(hex: $0) } ?? NamespaceKey.generate(bits: bits)
            } catch {
                throw fail("stackline namespaces set-key: \(error)")
            }
            let db = try database.openOrCreate()
            if !replace, try db.namespace(name.value)?.aesKey != nil {
                throw fail("stackline namespaces set-key: namespace '\(name)' already has a key; pass --replace to replace it (SDKs built with the old key stop decrypting)")
            }
            try db.setNamespaceKey(name.value, key: newKey.bytes)
            print(newKey.hex)
            printError("AES-\(newKey.bits) key of namespace \(name) (shown once; payloads: IV in the first 16 bytes, PKCS#7 padding)")
        }
    }
}

/// What `namespaces list --json` prints per namespace (never the key itself).
struct NamespaceJSON: Encodable {
    var name: String
    var keyBits: Int?
    var configured: Bool
    var reports: Int
    var createdAt: Date
    var updatedAt: Date

    init(_ stored: StoredNamespace) {
        name = stored.name
        keyBits = stored.aesKey.map { $0.count * 8 }
        configured = stored.configuration != nil
        reports = stored.reportCount
        createdAt = stored.createdAt
        updatedAt = stored.updatedAt
    }
}

/// Argument handling the namespace subcommands share.
enum NamespaceArgument {
    static func parse(_ text: String, command: String) throws -> NamespaceName {
        do {
            return try NamespaceName(text)
        } catch {
            throw fail("stackline namespaces \(command): \(error)")
        }
    }

    /// Largest configuration file read: a configuration is a few hundred bytes.
    static let maxFileBytes = 1 << 20

    static func read(_ path: String, command: String) throws -> Data {
        let handle: FileHandle?
        if path == "-" {
            handle = FileHandle.standardInput
        } else {
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                throw fail("stackline namespaces \(command): \(path): not a readable regular file")
            }
            handle = FileHandle(forReadingAtPath: path)
        }
        guard let handle, let data = try? handle.read(upToCount: maxFileBytes + 1) ?? Data() else {
            throw fail("stackline namespaces \(command): \(path): cannot be read")
        }
        guard data.count <= maxFileBytes else {
            throw fail("stackline namespaces \(command): \(path): larger than \(maxFileBytes) bytes")
        }
        return data
    }
}
