import Foundation
import TestSupport
import Testing

/// `stackline symbols add` on links, FIFOs and hostile zips, through the real binary. Each
/// case must end with the store holding only regular files and directories (`find`'s
/// verdict), nothing written outside the store (a fresh TMPDIR left empty, a sentinel
/// directory that links point at left unchanged), a refusal naming the problem, no death by
/// a signal, and an exit within a 10 s hang guard.
@Suite struct HostileStoreInputTests {
    /// A scratch area: the store, a private TMPDIR for the process, and a sentinel directory
    /// that hostile links point at.
    struct Scene {
        let root: TempDirectory
        var store: String { root.file("store") }
        var tmp: String { root.file("tmp") }
        var sentinel: String { root.file("sentinel") }
        let sentinelBefore: [String]

        init(_ name: String) throws {
            root = try TempDirectory(name)
            for dir in [root.file("store"), root.file("tmp"), root.file("sentinel")] {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            }
            try "do not touch\n".write(toFile: root.file("sentinel") + "/keep.txt", atomically: false, encoding: .utf8)
            sentinelBefore = directorySnapshot(root.file("sentinel"))
        }

        func file(_ name: String) -> String { root.file(name) }

        /// `stackline symbols add` with this scene's store and TMPDIR.
        func add(_ paths: [String], environment: [String: String] = [:]) throws -> ProcessOutput {
            try runProcess(
                TestPaths.stackline, ["symbols", "add", "--symbols", store] + paths,
                environment: ["TMPDIR": tmp].merging(environment) { $1 }, timeout: 10)
        }

        /// What every case must leave behind, whatever it was.
        func expectContained(_ out: ProcessOutput, sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(!out.signaled, "died of signal \(out.status): \(out.summary)", sourceLocation: sourceLocation)
            let odd = try runChecked("find", [store, "!", "-type", "f", "!", "-type", "d"]).stdout
            #expect(odd.isEmpty, "the store holds more than regular files and directories:\n\(odd)", sourceLocation: sourceLocation)
            let left = (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? ["<tmp missing>"]
            #expect(left.isEmpty, "left in TMPDIR: \(left)", sourceLocation: sourceLocation)
            #expect(directorySnapshot(sentinel) == sentinelBefore, "the sentinel directory changed", sourceLocation: sourceLocation)
        }

        /// A refusal: contained, exit status 1, `message` on stderr, and only `ids` stored.
        func expectRefusal(
            _ out: ProcessOutput, _ message: String, leaving ids: Set<String> = [], sourceLocation: SourceLocation = #_sourceLocation
        ) throws {
            try expectContained(out, sourceLocation: sourceLocation)
            #expect(out.status == 1, "\(out.summary)", sourceLocation: sourceLocation)
            #expect(out.stderr.contains(message), "expected \"\(message)\" in: \(out.stderr)", sourceLocation: sourceLocation)
            #expect(storedIDs == ids, "stored: \(storedIDs)", sourceLocation: sourceLocation)
        }

        /// Build-ids the store holds, from its sidecars' file names (no stackline code involved).
        var storedIDs: Set<String> { storedBuildIDs(store) }
    }

    func fixture() throws -> ElfFixture { try sharedElfFixtures.get().named("c-gcc-pie") }
    /// Another build: a different build-id.
    func otherFixture() throws -> ElfFixture { try sharedElfFixtures.get().named("cpp-gcc") }

    func contents(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    func link(_ target: String, at path: String) throws {
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
    }

    func fifo(_ path: String) throws { try runChecked("mkfifo", [path]) }

    /// Writes a zip with python3's zipfile: `entries` are (name, source file or nil for a
    /// symbolic link to `linkTarget`).
    func makeZip(_ path: String, _ entries: [(name: String, source: String?)], linkTarget: String = "") throws {
        let script = """
            import sys, zipfile
            out, target = sys.argv[1], sys.argv[2]
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
                for spec in sys.argv[3:]:
                    name, _, source = spec.partition("=")
                    # ZipInfo keeps a name as given; ZipFile.write would normalize '..' and '/' away.
                    info = zipfile.ZipInfo(name)
                    info.create_system = 3
                    if source:
                        info.external_attr = 0o100644 << 16
                        z.writestr(info, open(source, "rb").read(), zipfile.ZIP_DEFLATED)
                    else:
                        info.external_attr = 0o120777 << 16
                        z.writestr(info, target)
            """
        try runChecked("python3", ["-c", script, path, linkTarget] + entries.map { "\($0.name)=\($0.source ?? "")" })
    }

    // MARK: Links and special files

    @Test func symlinkNamedOnTheCommandLineIsFollowedAndItsBytesCopied() throws {
        let scene = try Scene("link-file")
        defer { scene.root.remove() }
        let fixture = try fixture()
        let target = scene.file("real.debug")
        try FileManager.default.copyItem(atPath: fixture.unstripped, toPath: target)
        try link(target, at: scene.file("alias.debug"))
        let out = try scene.add([scene.file("alias.debug")])
        #expect(out.succeeded, "\(out.summary)")
        try scene.expectContained(out)
        #expect(scene.storedIDs == [fixture.buildID!])
        // The store holds its own copy: removing the link's target leaves it whole.
        try FileManager.default.removeItem(atPath: target)
        let id = fixture.buildID!
        let stored = scene.store + "/.build-id/\(id.prefix(2))/\(id.dropFirst(2)).debug"
        #expect(contents(stored) == contents(fixture.unstripped))
    }

    @Test func symlinkedDSYMIsWalkedButALinkInsideABundleIsRefused() throws {
        let scene = try Scene("link-dsym")
        defer { scene.root.remove() }
        try link(MachOFixtures.dSYM, at: scene.file("Alias.dSYM"))
        // A bundle whose DWARF "file" is a link to a file outside it, and one to the sentinel.
        let dwarf = scene.file("Hostile.dSYM/Contents/Resources/DWARF")
        try FileManager.default.createDirectory(atPath: dwarf, withIntermediateDirectories: true)
        try link(MachOFixtures.dylibDWARF, at: dwarf + "/libgeometry.dylib")
        try link(scene.sentinel, at: dwarf + "/Sentinel")

        let out = try scene.add([scene.file("Alias.dSYM"), scene.file("Hostile.dSYM")])
        // The linked bundle itself was followed (named on the command line); the linked DWARF was not.
        let sample = Set(try MachOFixtures.uuids(MachOFixtures.dSYMDWARF).values)
        for name in ["libgeometry.dylib", "Sentinel"] {
            try scene.expectRefusal(
                out, "Hostile.dSYM/Contents/Resources/DWARF/\(name): symbolic link inside a directory, bundle or archive, not followed", leaving: sample)
        }
    }

    @Test func linksAndFIFOsInsideADirectoryWalkAreRefusedAndTheRestStored() throws {
        let scene = try Scene("link-walk")
        defer { scene.root.remove() }
        let fixture = try fixture()
        let other = try otherFixture()
        let dir = scene.file("walk")
        try FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: fixture.unstripped, toPath: dir + "/good.debug")
        try link(other.unstripped, at: dir + "/linked.debug")
        try link(scene.sentinel, at: dir + "/sub/escape")
        try link(dir + "/missing", at: dir + "/dangling")
        try fifo(dir + "/sub/pipe")

        let out = try scene.add([dir])
        for name in ["linked.debug", "sub/escape", "dangling"] {
            try scene.expectRefusal(out, "walk/\(name): symbolic link inside a directory, bundle or archive, not followed", leaving: [fixture.buildID!])
        }
        try scene.expectRefusal(out, "walk/sub/pipe: not a regular file (a FIFO)", leaving: [fixture.buildID!])
    }

    @Test(arguments: [false, true])
    func fifoIsRefusedWithoutWaiting(throughLink: Bool) throws {
        let scene = try Scene("fifo")
        defer { scene.root.remove() }
        try fifo(scene.file("pipe"))
        var path = scene.file("pipe")
        if throughLink {
            try link(path, at: scene.file("pipe.zip"))
            path = scene.file("pipe.zip")
        }
        try scene.expectRefusal(try scene.add([path]), "\(path): not a regular file (a FIFO)")
    }

    // MARK: Zip archives

    @Test func zipWithASymlinkEntryIsRefusedWhole() throws {
        let scene = try Scene("zip-link")
        defer { scene.root.remove() }
        let zip = scene.file("links.zip")
        try makeZip(zip, [("good.debug", try fixture().unstripped), ("Sample.dSYM/Contents/Resources/DWARF/Sample", nil)],
                    linkTarget: scene.sentinel + "/keep.txt")
        // The oracle agrees the entry is a link: unzip -Z lists its mode as lrwxrwxrwx.
        #expect(try runChecked("unzip", ["-Z", zip]).stdout.contains("lrwxrwxrwx"))
        // A refused archive stores nothing, not even its good entry.
        try scene.expectRefusal(try scene.add([zip]), "entry 'Sample.dSYM/Contents/Resources/DWARF/Sample' is a symbolic link")
    }

    @Test(arguments: ["../../escape.debug", "a/../../escape.debug", "/tmp/escape.debug"])
    func zipSlipEntryIsRefusedWhole(entry: String) throws {
        let scene = try Scene("zip-slip")
        defer { scene.root.remove() }
        let zip = scene.file("slip.zip")
        try makeZip(zip, [("good.debug", try fixture().unstripped), (entry, try fixture().unstripped)])
        // The oracle sees the hostile name as stored.
        #expect(try runChecked("unzip", ["-l", zip]).stdout.contains(entry))
        let why = entry.hasPrefix("/") ? "has an absolute path" : "climbs out of the archive with '..'"
        try scene.expectRefusal(try scene.add([zip]), "entry '\(entry)' \(why)")
        #expect(!FileManager.default.fileExists(atPath: scene.root.path + "/escape.debug"))
        #expect(!FileManager.default.fileExists(atPath: (scene.root.path as NSString).deletingLastPathComponent + "/escape.debug"))
    }

    /// 50 MB of zeros deflated, its declared uncompressed size patched to 1,000 bytes in the
    /// local and the central header: the unpacking counts what it writes, not what is declared.
    @Test func zipThatLiesAboutItsSizeStopsAtTheCap() throws {
        let scene = try Scene("zip-liar")
        defer { scene.root.remove() }
        let zip = scene.file("liar.zip")
        let script = """
            import struct, sys, zipfile
            out = sys.argv[1]
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("zeros.debug", bytes(50 * 1000 * 1000))
            data = bytearray(open(out, "rb").read())
            local = data.index(b"PK\\x03\\x04")
            struct.pack_into("<I", data, local + 22, 1000)
            central = data.index(b"PK\\x01\\x02")
            struct.pack_into("<I", data, central + 24, 1000)
            open(out, "wb").write(data)
            """
        try runChecked("python3", ["-c", script, zip])
        // The oracle reads the lie: unzip -l lists 1000 bytes.
        let listed = try runChecked("unzip", ["-l", zip]).stdout
        #expect(listed.contains(" 1000 ") && listed.contains("zeros.debug"), "\(listed)")

        try scene.expectRefusal(
            try scene.add([zip], environment: ["STACKLINE_UNZIP_MAX_BYTES": "1000000"]),
            "it unpacked past 1000000 bytes (STACKLINE_UNZIP_MAX_BYTES=1000000) at entry 'zeros.debug', which declares 1000 bytes")
    }

    /// A deflate stream that announces a 65,535-byte stored block and ends after 3: ZIPFoundation
    /// 0.9.20's own reader spins forever on it at the end of the archive (weichsel/ZIPFoundation#389).
    @Test func zipWhoseDeflateStreamNeverEndsIsRefused() throws {
        let scene = try Scene("zip-unended")
        defer { scene.root.remove() }
        let zip = scene.file("unended.zip")
        let script = """
            import struct, sys, zlib
            data = b"abc"
            comp = bytes([0x01, 0xFF, 0xFF, 0x00, 0x00]) + data
            name = b"unended.debug"
            crc = zlib.crc32(data)
            local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(comp), len(data), len(name), 0) + name
            central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x031E, 20, 0, 8, 0, 0, crc, len(comp), len(data),
                                  len(name), 0, 0, 0, 0, 0o100644 << 16, 0) + name
            end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), len(local) + len(comp), 0)
            open(sys.argv[1], "wb").write(local + comp + central + end)
            """
        try runChecked("python3", ["-c", script, zip])
        // The oracle finds the stream broken too.
        let tested = try runProcess(try findTool("unzip"), ["-t", zip])
        #expect(tested.status != 0 && tested.stdout.contains("unended.debug"), "\(tested.summary)")

        try scene.expectRefusal(
            try scene.add([zip]), "entry 'unended.debug' is corrupt: its deflate stream does not end within its 8 compressed bytes")
    }

    @Test func nestedZipIsNotUnpackedAndTheRestIsStored() throws {
        let scene = try Scene("zip-nested")
        defer { scene.root.remove() }
        let fixture = try fixture()
        let other = try otherFixture()
        let inner = scene.file("inner.zip")
        try makeZip(inner, [("other.debug", other.unstripped)])
        let outer = scene.file("outer.zip")
        try makeZip(outer, [("good.debug", fixture.unstripped), ("deeper/inner.zip", inner)])

        // Only the outer archive's own file is stored.
        try scene.expectRefusal(
            try scene.add([outer]), "nested archive inner.zip inside outer.zip is not unpacked; unzip it first", leaving: [fixture.buildID!])
    }

    // MARK: A stored file swapped afterwards

    @Test func storedFileSwappedForAnotherBuildIsRefusedThenRepairedByAddingAgain() throws {
        let scene = try Scene("swap")
        defer { scene.root.remove() }
        let fixture = try fixture()
        let other = try otherFixture()
        #expect(try scene.add([fixture.unstripped]).succeeded)
        let id = fixture.buildID!
        let stored = scene.store + "/.build-id/\(id.prefix(2))/\(id.dropFirst(2)).debug"
        try #require(FileManager.default.fileExists(atPath: stored))
        // Another ELF's bytes under the first one's name; readelf confirms the ids differ.
        try FileManager.default.removeItem(atPath: stored)
        try FileManager.default.copyItem(atPath: other.unstripped, toPath: stored)
        let notes = try runChecked("readelf", ["-n", stored]).stdout
        #expect(notes.contains(other.buildID!) && !notes.contains(id))

        let address = try runChecked("nm", ["--defined-only", fixture.unstripped]).stdout
            .split(separator: "\n").first { $0.hasSuffix(" T main") }.map { String($0.prefix { $0 != " " }) }
        let lookup = try runProcess(
            TestPaths.stackline, ["lookup", "--symbols", scene.store, "--build-id", id, try #require(address)], timeout: 10)
        #expect(!lookup.signaled && lookup.status != 0, "\(lookup.summary)")
        #expect(lookup.stderr.contains("debug file stored for build-id \(id) has build-id \(other.buildID!)"), "\(lookup.stderr)")
        #expect(!lookup.stdout.contains("main"), "the swapped file was used: \(lookup.stdout)")

        // Adding the right file again replaces the impostor instead of keeping it.
        let again = try scene.add([fixture.unstripped])
        #expect(again.succeeded && again.stdout.hasPrefix("stored"), "\(again.summary)")
        #expect(contents(stored) == contents(fixture.unstripped))
        let fixed = try runProcess(TestPaths.stackline, ["lookup", "--symbols", scene.store, "--build-id", id, address!], timeout: 10)
        #expect(fixed.succeeded && fixed.stdout.contains("main"), "\(fixed.summary)")
    }
}
