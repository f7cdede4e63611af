import ReportModel

/// Decides which images belong to the app (its executable, frameworks and libraries) and
/// marks every symbolicated frame with `inApp`.
public struct InAppClassifier: Sendable {
    let include: GlobList
    let exclude: GlobList

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

    /// Sets `inApp` on every frame of threads and lag data; frames in no image stay nil.
    public func mark(_ report: inout SymbolicatedReport) {
        var byName: [String: Bool] = [:]
        for image in report.images where byName[image.name] == nil {
            byName[image.name] = isInApp(image, appName: report.app?.name)
        }
        func mark(_ frames: inout [SymbolicatedFrame]) {
            for i in frames.indices {
                frames[i].inApp = frames[i].image.flatMap { byName[$0] }
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
/// A backward byte scan rather than `split`: split built two arrays of substrings for every
/// frame, which made this 14% of a worker's CPU on 30-frame crashes (perf).
func basename(_ path: String) -> String {
    let afterBang = lastComponent(of: path[...], separatedBy: UInt8(ascii: "!")) ?? path[...]
    return String(lastComponent(of: afterBang, separatedBy: UInt8(ascii: "/")) ?? afterBang)
}

/// The last non-empty run of `text` between `separator` bytes; nil when there is none.
private func lastComponent(of text: Substring, separatedBy separator: UInt8) -> Substring? {
    let bytes = text.utf8
    var end = bytes.endIndex
    while end > bytes.startIndex, bytes[bytes.index(before: end)] == separator { end = bytes.index(before: end) }
    guard end > bytes.startIndex else { return nil }
    var start = end
    while start > bytes.startIndex, bytes[bytes.index(before: start)] != separator { start = bytes.index(before: start) }
    // Split at the byte, as the file system does (`split` compared Characters, so a combining
    // mark right after a `/` hid it); both ends are scalar boundaries, next to an ASCII byte.
    return text[start..<end]
}
