import ReportModel

/// Decides which images belong to the app (its executable, frameworks and libraries) and
/// marks every symbolicated frame with `inApp`.
public struct InAppClassifier: Sendable {
    let include: GlobList
    let exclude: GlobList
    /// Verdicts per image (name, path) and app name: three candidates tried against every
    /// pattern for every image of every report showed in a worker's profile (scripts/bench-queue.sh).
    private let verdicts = BoundedMemo<ImageIdentity, Bool>(limit: 10_000)

    public init(rules: GroupingRules) {
        include = GlobList(patterns: rules.inApp.include)
        exclude = GlobList(patterns: rules.inApp.exclude)
    }

    /// Include patterns win; otherwise an image is the app's unless an exclude pattern
    /// (a system location or a known system library) matches its path or name.
    public func isInApp(_ image: BinaryImage, appName: String? = nil) -> Bool {
        let candidates = [image.path, image.name, basename(image.name)].compactMap { $0 }
        if let appName, !appName.isEmpty, candidates.contains(where: { basename($0) == appName }) { return true }
        if candidates.contains(where: include.matches) { return true }
        return !candidates.contains(where: exclude.matches)
    }

    private struct ImageIdentity: Hashable, Sendable {
        var name: String
        var path: String?
        var appName: String?
    }

    /// Sets `inApp` on every frame of threads and lag data; frames in no image stay nil. An
    /// image name's verdict is its first image's, as when every image was classified up front;
    /// now only the names frames use are, and consecutive frames of one image ask once.
    public func mark(_ report: inout SymbolicatedReport) {
        let appName = report.app?.name
        let images = report.images
        // Few images: a scan is cheaper than hashing every name.
        let firstIndex: [String: Int]? =
            images.count <= 16
            ? nil : Dictionary(images.indices.map { (images[$0].name, $0) }, uniquingKeysWith: { first, _ in first })
        var verdictsByName: [String: Bool?] = [:]
        var lastName: String?
        var lastVerdict: Bool?
        func verdict(_ name: String) -> Bool? {
            if name == lastName { return lastVerdict }
            let found: Bool?
            if let known = verdictsByName[name] {
                found = known
            } else {
                let index = firstIndex.map { $0[name] } ?? images.firstIndex { $0.name == name }
                found = index.map { i in
                    let image = images[i]
                    return verdicts.value(for: ImageIdentity(name: image.name, path: image.path, appName: appName)) { _ in
                        isInApp(image, appName: appName)
                    }
                }
                verdictsByName[name] = found
            }
            lastName = name
            lastVerdict = found
            return found
        }
        func mark(_ frames: inout [SymbolicatedFrame]) {
            for i in frames.indices {
                frames[i].inApp = frames[i].image.flatMap(verdict)
            }
        }
        for t in report.threads.indices { mark(&report.threads[t].frames) }
        if report.lag != nil {
            for s in report.lag!.samples.indices { mark(&report.lag!.samples[s].frames) }
            for n in report.lag!.profile.indices { mark(&report.lag!.profile[n].frames) }
        }
    }
}

/// The file name of an image path: after the last `!` (Android libraries inside an APK are
/// named `base.apk!libfoo.so`), then after the last `/`; empty components (a trailing `/`) are
/// skipped, and a path with no component at all is kept whole.
///
/// A backward scan of the contiguous UTF-8 rather than `split` (which built two arrays of
/// substrings for every frame, a large part of a worker's CPU in scripts/bench-queue.sh) or
/// `Substring`'s UTF-8 view (whose index checks still showed). The cuts are next to ASCII bytes, so both
/// ends are scalar boundaries, as the file system sees them (`split` compared Characters, so a
/// combining mark right after a `/` hid it).
func basename(_ path: String) -> String {
    var path = path
    let name = path.withUTF8 { bytes -> String? in
        let whole = 0..<bytes.count
        let afterBang = lastComponent(of: bytes, in: whole, separatedBy: UInt8(ascii: "!")) ?? whole
        let name = lastComponent(of: bytes, in: afterBang, separatedBy: UInt8(ascii: "/")) ?? afterBang
        return name == whole ? nil : String(decoding: UnsafeBufferPointer(rebasing: bytes[name]), as: UTF8.self)
    }
    // The whole string more often than not (image names are mostly names already), kept as it is.
    return name ?? path
}

/// The last non-empty run of `bytes[range]` between `separator` bytes; nil when there is none.
private func lastComponent(of bytes: UnsafeBufferPointer<UInt8>, in range: Range<Int>, separatedBy separator: UInt8) -> Range<Int>? {
    var end = range.upperBound
    while end > range.lowerBound, bytes[end - 1] == separator { end -= 1 }
    guard end > range.lowerBound else { return nil }
    var start = end
    while start > range.lowerBound, bytes[start - 1] != separator { start -= 1 }
    return start..<end
}
