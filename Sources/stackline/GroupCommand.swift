import ArgumentParser
import Foundation
import Storage
import APIModel
import JSONFormat
import Presentation
import ReportModel
import ReportRendering

/// `stackline group FINGERPRINT [ACTION]`: one group in full, or a change to it
/// (docs/triage.md).
struct GroupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "group",
        abstract: "Show one group, or change its state: resolve, ignore, reopen, assign, comment, merge, unmerge.",
        discussion: """
            stackline group FP                                  show it (with its state, users and history)
            stackline group FP resolve [--in-next | --in V]     reports of the newest version seen (or later) reopen it
            stackline group FP ignore [--until 7d|DATE] [--reports N] [--users N]
            stackline group FP reopen
            stackline group FP assign NAME | unassign
            stackline group FP comment TEXT
            stackline group FP merge INTO                       file FP's reports under INTO, now and later
            stackline group FP unmerge                          give a merged group its reports back
            stackline group FP history
            """)

    /// What to do to the group.
    enum Action: String, ExpressibleByArgument, CaseIterable {
        case resolve, ignore, reopen, assign, unassign, comment, merge, unmerge, history
    }

    @OptionGroup var database: DatabaseOptions

    @Argument(help: "The fingerprint, or a unique prefix of it, as `groups` prints it.")
    var fingerprint: String

    @Argument(help: "resolve, ignore, reopen, assign, unassign, comment, merge, unmerge or history; none shows the group.")
    var action: Action?

    @Argument(help: "assign's NAME, comment's TEXT, or merge's INTO fingerprint.")
    var value: String?

    @Flag(name: .customLong("in-next"), help: "resolve: only a version after the newest one the app was seen in reopens it.")
    var inNext = false

    @Option(name: .customLong("in"), help: "resolve: reports of this version or later reopen it.")
    var inVersion: String?

    @Option(help: "ignore: until this time (7d, 24h, or a date 2026-12-31).")
    var until: SinceDate?

    @Option(help: "ignore: until this many more reports.")
    var reports: Int?

    @Option(help: "ignore: until this many more distinct users.")
    var users: Int?

    @Option(help: "A note recorded with the change.")
    var note: String?

    @Flag(help: "Machine-readable output.")
    var json = false

    func validate() throws {
        let resolveOptions = inNext || inVersion != nil
        let ignoreOptions = until != nil || reports != nil || users != nil
        if resolveOptions && action != .resolve { throw ValidationError("--in-next and --in go with resolve") }
        if inNext && inVersion != nil { throw ValidationError("give --in-next or --in, not both") }
        if ignoreOptions && action != .ignore { throw ValidationError("--until, --reports and --users go with ignore") }
        let needsValue: Set<Action> = [.assign, .comment, .merge]
        if let action, needsValue.contains(action), value == nil {
            throw ValidationError("\(action.rawValue) needs a value: stackline group FP \(action.rawValue) \(action == .merge ? "INTO" : action == .assign ? "NAME" : "TEXT")")
        }
        if let action, !needsValue.contains(action), value != nil {
            throw ValidationError("\(action.rawValue) takes no value")
        }
        if action == nil, value != nil { throw ValidationError("unexpected argument \(value ?? "")") }
    }

    /// Who a change from the command line is recorded as.
    private var actor: String {
        // The account's name from the password database, not $USER: whoever can set the
        // environment could then write history as anyone.
        let user = ProcessInfo.processInfo.userName
        return "cli:" + String((user.isEmpty ? "unknown" : user).prefix(TriageText.maxActorBytes / 4 - 4))
    }

    func run() throws {
        let db = try database.open(for: "group")
        if action == .unmerge {
            // A merged group is no group of its own any more: only its whole fingerprint names it.
            do {
                guard let into = try db.mergeTarget(of: fingerprint) else {
                    throw fail("stackline group: \(fingerprint) is not merged into another group (give its whole fingerprint)")
                }
                try db.unmergeGroup(fingerprint, actor: actor, note: note)
                try printChange(GroupMergeAnswer(merged: fingerprint, into: into), "unmerged \(fingerprint) from \(into)")
            } catch let error as TriageError {
                throw fail("stackline group: \(error.description)")
            }
            return
        }
        let group = try find(db, fingerprint)
        if let action {
            try perform(action, on: group, db)
            return
        }
        guard let detail = try db.group(fingerprint: group) else { throw fail("stackline group: no group with fingerprint \(fingerprint)") }
        try show(detail, db)
    }

    /// The whole fingerprint `prefix` names; a change needs no more of the group than that.
    private func find(_ db: any ServiceStore, _ prefix: String) throws -> String {
        do {
            guard let found = try db.groupFingerprint(prefix: prefix) else {
                throw fail("stackline group: no group with fingerprint \(prefix)")
            }
            return found
        } catch let error as GroupQueryError {
            throw fail("stackline group: \(error.description)")
        }
    }

    private func perform(_ action: Action, on group: String, _ db: any ServiceStore) throws {
        let now = db.now()
        do {
            switch action {
            case .resolve:
                let change: GroupStateChange = inNext ? .resolve(.nextVersion, version: nil)
                    : inVersion.map { .resolve(.version, version: $0) } ?? .resolve(.now, version: nil)
                let t = try db.changeGroupState(fingerprint: group, change, actor: actor, note: note)
                try printChange(GroupTriageJSON(t), "\(group): \(GroupStateText.sentence(t, now: now))")
            case .ignore:
                let t = try db.changeGroupState(
                    fingerprint: group, .ignore(until: until?.millisecondsAhead(now: now), reports: reports, users: users), actor: actor,
                    note: note)
                try printChange(GroupTriageJSON(t), "\(group): \(GroupStateText.sentence(t, now: now))")
            case .reopen:
                let t = try db.changeGroupState(fingerprint: group, .reopen, actor: actor, note: note)
                try printChange(GroupTriageJSON(t), "\(group): \(GroupStateText.sentence(t, now: now))")
            case .assign, .unassign:
                let t = try db.assignGroup(fingerprint: group, to: action == .assign ? value : nil, actor: actor, note: note)
                try printChange(GroupTriageJSON(t), "\(group): \(GroupStateText.sentence(t, now: now))")
            case .comment:
                let entry = try db.commentOnGroup(fingerprint: group, text: value ?? "", actor: actor)
                try printChange(GroupHistoryJSON(entry), "\(group): comment \(entry.id) added")
            case .merge:
                let into = try find(db, value ?? "")
                try db.mergeGroup(group, into: into, actor: actor, note: note)
                try printChange(GroupMergeAnswer(merged: group, into: into), "merged \(group) into \(into)")
            case .history:
                let entries = try db.groupHistory(fingerprint: group)
                if json {
                    print(try encodeJSON(entries.map(GroupHistoryJSON.init)))
                } else {
                    printHistory(entries)
                }
            case .unmerge:
                return
            }
        } catch let error as TriageError {
            throw fail("stackline group: \(error.description)")
        }
    }

    private func printChange<T: Encodable>(_ answer: T, _ text: String) throws {
        if json { print(try encodeJSON(answer)) } else { printLine(text) }
    }

    private func printHistory(_ entries: [GroupHistoryEntry]) {
        if entries.isEmpty { print("no history") }
        for e in entries {
            let detail = e.detail.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            printLine("  \(Date(milliseconds: e.at).rfc3339)  \(e.actor)  \(e.action)\(detail.isEmpty ? "" : "  " + detail)\(e.reportId.map { "  report \($0)" } ?? "")")
            if let note = e.note {
                for line in note.split(separator: "\n", omittingEmptySubsequences: false) { printLine("      \(line)") }
            }
        }
    }

    private func show(_ detail: GroupDetail, _ db: any ServiceStore) throws {
        let g = detail.summary
        let history = try db.groupHistory(fingerprint: g.fingerprint, limit: 20)
        let representative = try g.representativeReportId.flatMap { try db.result(reportId: $0) }
            .map { try JSONDecoder().decode(SymbolicatedReport.self, from: $0.symbolicatedJSON) }
        if json {
            print(try encodeJSON(GroupDetailJSON(detail, representative: representative, history: history)))
            return
        }
        // Titles, app names, versions and frames come from reports: every line is escaped.
        printLine(g.title)
        printLine("Fingerprint: \(g.fingerprint)  (\(g.kind), grouping rules v\(g.rulesVersion))")
        if let app = g.app { printLine("App: \(app)") }
        printLine("State: \(GroupStateText.sentence(g.triage, now: db.now()))")
        printLine("Reports: \(g.count)  users \(g.users)  sessions \(g.sessions)  first seen \(g.firstSeen.rfc3339)  last seen \(g.lastSeen.rfc3339)")
        print("By version:              REPORTS  USERS  SESSIONS")
        for v in detail.byVersion {
            printLine("  \(pad(v.version.isEmpty ? "(none)" : v.version, 22))\(pad(String(v.reports), 9))\(pad(String(v.users), 7))\(v.sessions)")
        }
        if !detail.mergedGroups.isEmpty {
            print("Merged into it: \(detail.mergedGroups.joined(separator: ", "))")
        }
        print("Grouped by:")
        for frame in g.frames { printLine("  \(frame)") }
        print("Latest report ids: \(detail.latestReportIds.map(String.init).joined(separator: ", "))")
        if !history.isEmpty {
            print("History (newest first):")
            printHistory(history)
        }
        if let representative, let id = g.representativeReportId {
            print("")
            print("Representative report \(id):")
            print(TextReportRenderer.render(representative))
        }
    }
}
