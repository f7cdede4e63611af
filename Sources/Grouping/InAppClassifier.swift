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

func basename(_ path: String) -> String {
    // Android libraries inside an APK are named `base.apk!libfoo.so`.
    let afterBang = path.split(separator: "!").last.map(String.init) ?? path
    return afterBang.split(separator: "/").last.map(String.init) ?? afterBang
}
