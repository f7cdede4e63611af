import ArgumentParser
import Foundation
import APIModel
import JSONFormat
import Presentation
import Storage

/// `stackline releases`: crash-free sessions and users, adoption and hangs per app version.
struct ReleasesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "releases",
        abstract: "Release health per app version: sessions, crash-free sessions and users, adoption, hangs.",
        discussion: """
            Sessions are the SDK's appBoot records (POST /api/v1/ingest), counted per app, version, UTC day, \
            OS version and device model; users are estimated (HyperLogLog, within 2%); crashed sessions and \
            crashed users are exact, from the crash reports' SDK meta. A version known only from reports \
            uploaded by hand shows its counts and no rates (-). Adoption is the version's share of the \
            sessions of the app's last day with sessions. Newest release first.
            """)

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Only this app.")
    var app: String?

    @Option(help: "Only sessions and reports of this SDK namespace.")
    var namespace: String?

    @Flag(help: "Machine-readable output (with each release's daily trend).")
    var json = false

    func run() throws {
        let db = try database.open(for: "releases")
        let releases = try db.releaseHealth(app: app, namespace: namespace).map(ReleaseHealthJSON.init)
        if json {
            print(try encodeJSON(releases))
            return
        }
        if releases.isEmpty {
            print("no releases")
            return
        }
        func percent(_ fraction: Double?) -> String { fraction.map { String(format: "%.2f%%", $0 * 100) } ?? "-" }
        var table = Table(
            "APP", "VERSION", "SESSIONS", "CRASH-FREE SESSIONS", "USERS", "CRASH-FREE USERS", "ADOPTION", "HANGS/1K", "CRASHES",
            "LAST SEEN")
        for r in releases {
            table.add(
                r.app, r.version.isEmpty ? "-" : r.version, String(r.sessions), percent(r.crashFreeSessions), String(r.users),
                percent(r.crashFreeUsers), percent(r.adoption), r.hangsPer1000Sessions.map { String(format: "%.1f", $0) } ?? "-",
                String(r.crashes), r.lastSeen?.rfc3339 ?? "-")
        }
        print(table.render())
    }
}
