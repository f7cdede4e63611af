import Foundation
import Storage
import APIModel
import Presentation
import ReportModel
import Testing
import WebView

/// The one escaping function, and the pages that must apply it to every name from a report.
@Suite struct HTMLEscapingTests {
    static let hostile = [
        "<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>", "'><svg onload=alert(1)>", "a&b", "x\u{0}y\u{1b}[31m",
    ]

    @Test func escapesEveryMarkupCharacter() {
        #expect(HTML.escape("<script>alert(\"x\")</script>") == "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;")
        #expect(HTML.escape("\"><img src=x onerror=alert(1)>") == "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;")
        #expect(HTML.escape("it's a&b") == "it&#39;s a&amp;b")
        #expect(HTML.escape("plain text, ünïcødé 名前") == "plain text, ünïcødé 名前")
    }

    @Test func dropsControlCharactersButKeepsLayoutWhitespace() {
        #expect(HTML.escape("a\u{0}b\u{1b}c\u{7f}") == "a\u{FFFD}b\u{FFFD}c\u{FFFD}")
        #expect(HTML.escape("a\tb\nc") == "a\tb\nc")
    }

    @Test func escapedTextHasNoMarkupCharactersLeft() {
        for s in Self.hostile {
            let escaped = HTML.escape(s)
            #expect(!escaped.contains("<") && !escaped.contains(">") && !escaped.contains("\"") && !escaped.contains("'"))
        }
    }

    /// A report whose every name is hostile: no page built from it contains the raw text.
    @Test func reportAndGroupPagesNeverEmitANameUnescaped() throws {
        for name in Self.hostile where name.contains("<") {
            let frame = SymbolicatedFrame(
                index: 0, address: Address(0x1000), kind: .pc, image: name, status: .symbolicated, symbol: name, function: name,
                file: name + ".c", line: 3, inApp: true)
            // Each image's symbol status: its name, reason, stores and a symbol source's answer are hostile too.
            let id = BuildID(bytes: [0xab, 0x12])
            let report = SymbolicatedReport(
                id: 7, format: "swift-backtrace-json", kind: .crash, status: .complete, missingBuildIds: [],
                app: AppInfo(name: name, version: name), os: name, exception: ExceptionInfo(type: name, message: name),
                imageSymbols: SymbolStatus.allCases.enumerated().map { i, status in
                    ImageSymbols(image: i, name: name, buildId: id, status: status, detail: name, searched: [name])
                },
                threads: [SymbolicatedThread(index: 0, name: name, crashed: true, frames: [frame])], warnings: [name])
            let page = ReportPage.render(ReportPageModel(
                id: 7, report: report, groupFingerprint: "ab12", groupTitle: name, keyFrames: [name],
                missing: [MissingDebugFile(buildID: id, imageName: name)], serverURL: "http://127.0.0.1:1",
                sources: [id: [SymbolSourceAnswer(source: name, outcome: .notFound, detail: name, answeredAt: Date(timeIntervalSince1970: 0))]]))
            #expect(!page.contains(name), "raw name in the report page")
            #expect(page.contains(HTML.escape(name)))
            #expect(page.contains("data-k=\"image:2:source:0\""), "the not-found image shows the source's answer")
            let symbols = SymbolsPage.render(
                [MissingSymbolSummary(
                    file: MissingDebugFile(buildID: id, imageName: name, status: .unreadable, detail: name), reportCount: 2, groupCount: 1,
                    lastSeen: Date(timeIntervalSince1970: 0),
                    sources: [SymbolSourceAnswer(source: name, outcome: .failed, detail: name, answeredAt: Date(timeIntervalSince1970: 0))])],
                serverURL: "http://127.0.0.1:1")
            #expect(!symbols.contains(name), "raw name in the symbols page")
            #expect(symbols.contains("data-k=\"missing-source:ab12:0\""))

            let summaryJSON: [String: Any] = [
                "fingerprint": "ab12", "kind": "crash", "title": name, "count": 3, "firstSeen": 0, "lastSeen": 0,
                "versions": [name: 3], "rulesVersion": 1, "app": name, "representativeReportId": 7, "frames": [name],
                "users": 2, "sessions": 2,
                "triage": ["state": "resolved", "resolvedVersion": name, "ignoreReportsSeen": 0, "regressedVersion": name, "assignee": name],
            ]
            let summary = try JSONDecoder().decode(GroupSummary.self, from: JSONSerialization.data(withJSONObject: summaryJSON))
            let groups = GroupsPage.render(GroupsPageModel(
                groups: [GroupJSON(summary)], trends: [:], trendDays: 7,
                filter: GroupsFilterForm(app: name, version: name, namespace: name, since: name), page: 2, hasNextPage: true))
            #expect(!groups.contains(name), "raw name in the groups page")
            let group = GroupPage.render(GroupPageModel(
                group: GroupJSON(summary), frames: [name], latestReportIds: [7], representativeReportId: 7, representative: report,
                history: VersionHistory(firstVersion: name, regression: .init(version: name, previous: name, versionsWithout: [name])), appVersions: [name]))
            #expect(!group.contains(name), "raw name in the group page")

            // The triage side of the page: history, notes, merges, facets, the forms' CSRF token.
            let detail = GroupDetailJSON(
                group: GroupJSON(summary), frames: [name], representativeReportId: 7, latestReportIds: [7], representative: nil,
                triage: GroupTriageJSON(summary.triage), byVersion: [VersionImpact(version: name, reports: 3, users: 2, sessions: 2)],
                mergedGroups: [name],
                history: [GroupHistoryJSON(
                    id: 1, at: Date(timeIntervalSince1970: 0), actor: name, action: name, detail: [name: name], note: name, reportId: 7)])
            let triaged = GroupPage.render(GroupPageModel(
                detail: detail, history: VersionHistory(firstVersion: nil, regression: nil), appVersions: [name],
                actions: GroupActions(csrf: name), facets: [FacetsJSON(key: name, total: 3, values: [FacetValueJSON(value: name, count: 3)], other: 0)]))
            #expect(!triaged.contains(name), "raw name in the group page's triage parts")
            #expect(triaged.contains(HTML.escape(name)))

            let releases = ReleasesPage.render(
                [ReleaseHealthJSON(app: name, version: name, sessions: 3, crashedSessions: 1, users: 2, crashedUsers: 1, adoption: 0.5,
                                   adoptionDay: name, crashes: 1, hangs: 0, firstSeen: nil, lastSeen: nil, trend: [])],
                app: name)
            #expect(!releases.contains(name), "raw name in the releases page")

            let search = SearchPage.render(SearchPageModel(
                expression: name, error: nil,
                results: ReportSearchJSON(reports: [ReportSummaryJSON(
                    id: 7, app: name, version: name, kind: .crash, received: Date(timeIntervalSince1970: 0), namespace: name,
                    fingerprint: "ab12", title: name, osVersion: name, deviceModel: name)], nextCursor: "8"),
                facets: [FacetsJSON(key: name, total: 1, values: [FacetValueJSON(value: name, count: 1)], other: 0)]))
            #expect(!search.contains(name), "raw name in the search page")
            let refused = SearchPage.render(SearchPageModel(expression: name, error: name, results: nil, facets: []))
            #expect(!refused.contains(name), "raw name in the search page's refusal")
        }
    }

    @Test func pagesHaveNoInlineScriptOrStyle() throws {
        let page = Layout.login(error: "x")
        #expect(!page.contains("style="))
        #expect(!page.contains(" on"))
        // The only script is the static file.
        #expect(page.components(separatedBy: "<script").count == 2)
        #expect(page.contains("<script src=\"/static/web.js\" defer></script>"))
    }

    @Test func queryLinksArePercentEncoded() {
        #expect(HTML.query([("app", "a b&c=\"<"), ("kind", "")]) == "?app=a%20b%26c%3D%22%3C")
        #expect(HTML.pathSegment("../x y") == "..%2Fx%20y")
    }
}

/// The regression flag: a group seen, then absent from a version, then seen again, with
/// versions in `VersionOrder` (not in the order they first reported).
@Suite struct VersionHistoryTests {
    @Test func flagsAGroupThatCameBack() {
        let h = VersionHistory.analyse(groupVersions: ["1.0": 3, "1.2": 1], appVersions: ["1.0": 5, "1.1": 2, "1.2": 4], firstVersion: "1.0")
        #expect(h.regression == VersionRegression(version: "1.2", previous: "1.0", versionsWithout: ["1.1"]))
    }

    @Test func aGroupInEveryVersionOrOnlyNewOnesIsNoRegression() {
        #expect(VersionHistory.analyse(groupVersions: ["1.0": 1, "1.1": 1], appVersions: ["1.0": 1, "1.1": 1], firstVersion: "1.0").regression == nil)
        #expect(VersionHistory.analyse(groupVersions: ["1.1": 1], appVersions: ["1.0": 1, "1.1": 1], firstVersion: "1.1").regression == nil)
        #expect(VersionHistory.analyse(groupVersions: ["1.0": 1], appVersions: ["1.0": 1, "1.1": 1, "1.2": 1], firstVersion: "1.0").regression == nil)
    }

    /// A hotfix 1.1.1 shipped after 1.2 sits between 1.1 and 1.2, whatever order reports came in.
    @Test func versionsAreOrderedByNumberNotByArrival() {
        let h = VersionHistory.analyse(groupVersions: ["1.1": 2, "1.2": 1], appVersions: ["1.1": 2, "1.2": 3, "1.1.1": 6], firstVersion: "1.1")
        #expect(h.regression == VersionRegression(version: "1.2", previous: "1.1", versionsWithout: ["1.1.1"]))
        #expect(VersionHistory.analyse(groupVersions: ["1.1": 2, "1.1.1": 1], appVersions: ["1.1": 2, "1.2": 3, "1.1.1": 6], firstVersion: "1.1").regression == nil)
    }
}
