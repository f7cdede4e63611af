import Foundation
import Storage
import ReportModel

/// Turns results the rules have not seen into events. Every answer comes from the database
/// (`AlertFacts`, one snapshot), never from memory, so an evaluation after a restart decides
/// exactly as one before it would have; the events' UNIQUE key does the rest.
public struct RuleEvaluator: Sendable {
    public let configuration: AlertConfiguration

    public init(configuration: AlertConfiguration) { self.configuration = configuration }

    /// Events for `candidates`, the results stored after `cursor`.
    public func events(facts: AlertFacts, cursor: Int64, candidates: [AlertCandidate]) throws -> [NewAlertEvent] {
        var events: [NewAlertEvent] = []
        var groups: [String: AlertGroupFacts] = [:]
        func group(_ fingerprint: String) throws -> AlertGroupFacts? {
            if let known = groups[fingerprint] { return known }
            let found = try facts.group(fingerprint)
            groups[fingerprint] = found
            return found
        }
        for rule in configuration.rules {
            let mine = candidates.filter { rule.groupKind.matches($0.groupKind) && (rule.app == nil || rule.app == $0.app) }
            guard !mine.isEmpty else { continue }
            switch rule.kind {
            case .newGroup:
                for c in firsts(mine, by: { $0.fingerprint }) {
                    guard try !facts.groupHasResult(c.fingerprint, atOrBefore: cursor), let g = try group(c.fingerprint) else { continue }
                    let versions = try facts.versionCounts(of: c.fingerprint)
                    var event = base(rule, g, version: c.version)
                    event.counts.version = versions[c.version]
                    event.summary = "New \(g.kind.rawValue) group in \(appAndVersion(g.app, c.version)): \(g.title) (\(count(g.count)))"
                    events.append(record(rule, event, scope: ""))
                }
            case .regression:
                let reopened = try facts.regressions(causedBy: mine.map(\.reportId))
                for c in mine {
                    guard let entry = reopened[c.reportId], let g = try group(c.fingerprint) else { continue }
                    let version = entry.detail["version"] ?? c.version
                    var event = base(rule, g, version: version)
                    event.counts.version = try facts.versionCounts(of: c.fingerprint)[version]
                    event.previousVersion = entry.detail["resolvedVersion"]
                    let resolved = entry.detail["resolvedVersion"].map { " (resolved in \($0))" } ?? ""
                    event.summary = "Regression in \(appAndVersion(g.app, version)): \(g.title) was resolved\(resolved) and is back"
                    // One event per reopening: the history entry is what happened once.
                    events.append(record(rule, event, scope: "reopened-\(entry.id)"))
                }
            case .backAfterGap(let minGap):
                for c in firsts(mine, by: { "\($0.fingerprint)\u{0}\($0.version)" }) where !c.version.isEmpty {
                    let versions = try facts.versionCounts(of: c.fingerprint)
                    let here = versions[c.version] ?? 0
                    // The group's first reports in this version are all new: it was not here before.
                    guard here > 0, try facts.resultCount(of: c.fingerprint, version: c.version, after: cursor) == here,
                        let g = try group(c.fingerprint)
                    else { continue }
                    guard let found = VersionRegression.find(
                        in: c.version, groupVersions: versions, appVersions: try facts.appVersionCounts(app: g.app, kind: g.kind),
                        minGapReports: minGap)
                    else { continue }
                    let (previous, gap) = (found.previous, found.versionsWithout)
                    var event = base(rule, g, version: c.version)
                    event.counts.version = here
                    event.previousVersion = previous
                    event.versionsWithout = gap
                    event.summary =
                        "Back after a gap in \(appAndVersion(g.app, c.version)): \(g.title) is back (last seen in \(previous), not in \(gap.joined(separator: ", ")))"
                    events.append(record(rule, event, scope: c.version))
                }
            case .spike(let multiplier, let minCount, let buckets, let minutes):
                let bucketMs = Int64(minutes) * 60_000
                let byGroup = Dictionary(grouping: mine, by: \.fingerprint)
                for fingerprint in firsts(mine, by: { $0.fingerprint }).map(\.fingerprint) {
                    let starts = Set(byGroup[fingerprint, default: []].map { floorDiv($0.receivedAt, bucketMs) * bucketMs })
                    guard let low = starts.min(), let high = starts.max() else { continue }
                    let known = try facts.bucketCounts(
                        of: fingerprint, from: low - Int64(buckets) * bucketMs, to: high + bucketMs, bucketMs: bucketMs)
                    for start in starts.sorted() {
                        let n = known[start] ?? 0
                        let baseline = SpikeMath.baseline(before: start, buckets: buckets, bucketMs: bucketMs, known: known)
                        guard SpikeMath.isSpike(count: n, baseline: baseline, multiplier: multiplier, minCount: minCount),
                            let g = try group(fingerprint)
                        else { continue }
                        let median = SpikeMath.median(baseline)
                        var event = base(rule, g, version: byGroup[fingerprint]?.last?.version ?? "")
                        event.counts.window = n
                        event.counts.baselineMedian = median
                        event.counts.threshold = multiplier * median
                        event.windowStart = AlertEvent.isoTime(start)
                        event.windowEnd = AlertEvent.isoTime(start + bucketMs)
                        event.summary =
                            "Spike in \(g.app ?? "an unnamed app"): \(g.title), \(count(n)) from \(event.windowStart ?? "") in \(minutes) min (median \(formatted(median)) per \(minutes) min)"
                        events.append(record(rule, event, scope: String(start)))
                    }
                }
            case .velocity(let percent, let minUsers, let minutes):
                let windowMs = Int64(minutes) * 60_000
                var versionUsers: [ReleaseName: Int] = [:]
                for key in firsts(mine, by: { "\($0.fingerprint)\u{0}\($0.version)" }) where !key.version.isEmpty {
                    guard let app = key.app else { continue }
                    let name = ReleaseName(app: app, version: key.version)
                    if versionUsers[name] == nil { versionUsers[name] = try facts.release(app: app, version: key.version)?.users ?? 0 }
                    let launched = versionUsers[name] ?? 0
                    guard launched > 0 else { continue }
                    // Each arrival ends a window; the first that crosses the threshold raises the one event.
                    let ends = Set(mine.filter { $0.fingerprint == key.fingerprint && $0.version == key.version }.map(\.receivedAt)).sorted()
                    for end in ends {
                        let users = try facts.groupUsers(key.fingerprint, version: key.version, after: end - windowMs, upTo: end)
                        guard users >= minUsers, Double(users) * 100 >= percent * Double(launched), let g = try group(key.fingerprint) else {
                            continue
                        }
                        var event = base(rule, g, version: key.version)
                        event.counts.users = users
                        event.counts.versionUsers = launched
                        event.counts.threshold = percent
                        event.windowStart = AlertEvent.isoTime(end - windowMs)
                        event.windowEnd = AlertEvent.isoTime(end)
                        event.summary = "Velocity in \(appAndVersion(g.app, key.version)): \(g.title) hit \(users) users in \(minutes) min, "
                            + "\(formatted(Double(users) * 100 / Double(launched)))% of the version's \(launched)"
                        events.append(record(rule, event, scope: key.version))
                        break
                    }
                }
            case .releaseHealth(let sessionsTarget, let usersTarget, let minSessions):
                // `firsts` gives each app and version once: one read of that version's health each.
                for c in firsts(mine.filter { $0.groupKind == .crash }, by: { "\($0.app ?? "")\u{0}\($0.version)" }) {
                    guard let app = c.app else { continue }
                    guard let r = try facts.release(app: app, version: c.version), r.sessions >= minSessions else { continue }
                    let watched: [(String, Double?, Int, Int)] = [
                        ("sessions", sessionsTarget, r.crashedSessions, r.sessions), ("users", usersTarget, r.crashedUsers, r.users),
                    ]
                    for (name, target, crashed, total) in watched {
                        guard let target, total > 0 else { continue }
                        let crashFree = 1 - Double(min(crashed, total)) / Double(total)
                        guard crashFree < target, let g = try group(c.fingerprint) else { continue }
                        var event = base(rule, g, version: c.version)
                        event.counts.sessions = r.sessions
                        event.counts.crashFree = crashFree
                        event.counts.threshold = target
                        event.summary = "Release health of \(appAndVersion(app, c.version)): crash-free \(name) \(formatted(crashFree * 100))% "
                            + "(target \(formatted(target * 100))%, \(r.sessions) sessions); latest crash: \(g.title)"
                        events.append(record(rule, event, scope: "\(c.version)|\(name)"))
                    }
                }
            case .hangBudget(let maxCount):
                for c in firsts(mine, by: { "\($0.fingerprint)\u{0}\($0.version)" }) {
                    let n = try facts.versionCounts(of: c.fingerprint)[c.version] ?? 0
                    guard n > maxCount, let g = try group(c.fingerprint) else { continue }
                    var event = base(rule, g, version: c.version)
                    event.counts.version = n
                    event.counts.budget = maxCount
                    event.summary = "Hang budget exceeded in \(appAndVersion(g.app, c.version)): \(g.title), \(count(n)) (budget \(maxCount))"
                    events.append(record(rule, event, scope: c.version))
                }
            }
        }
        return events
    }

    private func base(_ rule: AlertRule, _ g: AlertGroupFacts, version: String) -> AlertEvent {
        AlertEvent(
            id: nil, rule: rule.name, severity: rule.severity.rawValue, kind: rule.kind.name, fingerprint: g.fingerprint,
            groupKind: g.kind.rawValue, title: g.title, app: g.app, version: version.isEmpty ? nil : version,
            counts: AlertCounts(total: g.count), firstSeen: AlertEvent.isoTime(g.firstSeen), lastSeen: AlertEvent.isoTime(g.lastSeen),
            link: configuration.baseURL.map { "\($0)/groups/\(g.fingerprint)" }, summary: "")
    }

    private func record(_ rule: AlertRule, _ event: AlertEvent, scope: String) -> NewAlertEvent {
        NewAlertEvent(
            rule: rule.name, kind: rule.kind.name, fingerprint: event.fingerprint, scope: scope, severity: rule.severity.rawValue,
            payload: String(decoding: event.json(), as: UTF8.self), targets: rule.targets)
    }

    /// The first candidate of each key, in order.
    private func firsts(_ candidates: [AlertCandidate], by key: (AlertCandidate) -> String) -> [AlertCandidate] {
        var seen = Set<String>()
        return candidates.filter { seen.insert(key($0)).inserted }
    }

    private func appAndVersion(_ app: String?, _ version: String) -> String {
        let name = app ?? "an unnamed app"
        return version.isEmpty ? name : "\(name) \(version)"
    }

    private func count(_ n: Int) -> String { n == 1 ? "1 report" : "\(n) reports" }

    private func formatted(_ x: Double) -> String { x == x.rounded() ? String(Int(x)) : String(format: "%.1f", x) }

    private func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
}

/// An app and one of its versions, as the velocity rule caches their users.
private struct ReleaseName: Hashable {
    var app: String
    var version: String
}
