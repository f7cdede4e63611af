import Foundation
import TestSupport
import Testing

/// Release health from SDK batches sent to a real `stackline serve`: launches (`appBoot`) of
/// three versions from known devices and users, crashes and hangs in some of their sessions.
/// Every expected number is computed here from the generated records.
@Suite(.serialized) struct ReleaseHealthTests {
    /// One generated launch.
    struct Launch {
        var reportId: String
        var version: String
        var day: Int64
        var device: Int
        var session: String
    }

    /// The devices the launches come from: a fixed OS and model each; three in four have a user
    /// id, and user ids repeat across devices (users with two phones), so users ≠ devices.
    struct Device {
        var id: String
        var user: String?
        var os: String
        var model: String
        /// What the server counts a user by: the user id, else the device id.
        var userKey: String { user.map { "u:" + $0 } ?? "d:" + id }
    }

    static let devices: [Device] = (0..<40).map { i in
        Device(
            id: String(format: "DEV-%04X", i * 7919), user: i % 4 == 0 ? nil : "user-\(i % 26)",
            os: ["16.7.2", "17.4", "18.1"][i % 3], model: ["iPhone14,2", "iPhone15,2", "iPad13,4"][i % 5 % 3])
    }

    static let dayMs: Int64 = 86_400_000

    func meta(_ version: String, _ device: Device, session: String) -> [String: Any] {
        var meta: [String: Any] = [
            "app_name": "Prism", "app_version": version, "os_version": device.os, "device_model": device.model,
            "device_id": device.id, "session_id": session, "system": "iOS",
        ]
        if let user = device.user { meta["user_id"] = user }
        return meta
    }

    func record(_ id: String, type: String, day: Int64, meta: [String: Any], payload: String? = nil) -> [String: Any] {
        var record = sdkRecord(id, type: type, namespace: "prism", payload: payload, meta: meta)
        record["created_time"] = day * Self.dayMs + 3_600_000
        return record
    }

    @Test func releaseHealthEqualsWhatTheBatchesHeld() throws {
        let h = try Harness()
        #expect(try h.stackline(["namespaces", "set-key", "prism"]).status == 0)
        let ingest = try h.token("ingest")
        let read = try h.token("read")
        let server = try h.startServer(["--workers", "1"])

        var generator = SeededGenerator(seed: 32)
        let today = Int64(Date().timeIntervalSince1970 * 1000) / Self.dayMs
        let days = [today - 2, today - 1, today]
        let versions = ["1.0", "1.1", "2.0"]
        // 2.0 is adopted over the three days: none of it the first day, most of it the last.
        var launches: [Launch] = []
        for (d, day) in days.enumerated() {
            for n in 0..<(90 + 10 * d) {
                let weights = [[6, 4, 0], [3, 4, 3], [1, 2, 7]][d]
                var pick = Int.random(in: 0..<10, using: &generator)
                var v = 0
                while pick >= weights[v] { pick -= weights[v]; v += 1 }
                let device = Int.random(in: 0..<Self.devices.count, using: &generator)
                launches.append(Launch(
                    reportId: "boot-\(day)-\(n)", version: versions[v], day: day, device: device, session: "S-\(day)-\(n)"))
            }
        }
        // Crashes in 30 sessions, a second crash in 6 of them; hangs in 9 sessions.
        let crashed = Array(launches.shuffled(using: &generator).prefix(30))
        let crashRecords = crashed + crashed.prefix(6)
        let hung = Array(launches.shuffled(using: &generator).prefix(9))

        let crash = try CrashFixture.shared.report(symbolicate: "off")
        let hang = Data(#"{"type": "lag", "app": {"name": "Prism", "version": "3.2.0"}, "dyld_images": [{"name": "Prism", "uuid": "4c4c4411-5555-3144-a1b2-c3d4e5f60718", "base_addr": "0x100000000"}], "samples": [["0x100004a10", "0x100003f21"]]}"#.utf8)
        var records: [[String: Any]] = launches.map { l in
            record(l.reportId, type: "appBoot", day: l.day, meta: meta(l.version, Self.devices[l.device], session: l.session))
        }
        for (n, l) in crashRecords.enumerated() {
            records.append(record(
                "crash-\(n)", type: "appCrash", day: l.day, meta: meta(l.version, Self.devices[l.device], session: l.session),
                payload: try sdkPayload(variant(of: crash, number: n))))
        }
        for (n, l) in hung.enumerated() {
            records.append(record(
                "hang-\(n)", type: "appLag", day: l.day, meta: meta(l.version, Self.devices[l.device], session: l.session),
                payload: try sdkPayload(variant(of: hang, number: n))))
        }
        records.shuffle(using: &generator)

        // Batches of 100, as the SDK sends them; every record is accepted.
        var batches: [Data] = []
        for start in stride(from: 0, to: records.count, by: 100) {
            batches.append(try sdkBatch(Array(records[start..<min(start + 100, records.count)])))
        }
        for batch in batches {
            let answer = try server.curl("POST", "/api/v1/ingest", token: ingest, body: batch)
            #expect(answer.status == 200, "\(answer)")
            let statuses = (answer.json?["records"] as? [[String: Any]])?.compactMap { $0["status"] as? String }
            #expect(statuses?.allSatisfy { $0 == "accepted" } == true, "\(answer)")
        }
        // The SDK did not see an answer and sends the first batch again: nothing counts twice.
        let again = try server.curl("POST", "/api/v1/ingest", token: ingest, body: batches[0])
        #expect((again.json?["records"] as? [[String: Any]])?.allSatisfy { $0["status"] as? String == "duplicate" } == true, "\(again)")

        // A report uploaded by hand, of a version no launch named: counts, no rates.
        let manual = try h.write([variant(of: crash, number: 999)])
        #expect(try h.stackline(["submit", "--version", "0.9"] + manual).status == 0)

        // What the records held, counted here.
        func userKey(_ l: Launch) -> String { Self.devices[l.device].userKey }
        let lastDayLaunches = launches.filter { $0.day == today }.count
        struct Expected {
            var sessions = 0, users = 0, crashedSessions = 0, crashedUsers = 0, crashes = 0, hangs = 0
            var adoption = 0.0
            var daySessions: [Int64: Int] = [:]
        }
        var expected: [String: Expected] = [:]
        for v in versions {
            let mine = launches.filter { $0.version == v }
            let crashes = crashRecords.filter { $0.version == v }
            expected[v] = Expected(
                sessions: mine.count, users: Set(mine.map(userKey)).count, crashedSessions: Set(crashes.map(\.session)).count,
                crashedUsers: Set(crashes.map(userKey)).count, crashes: crashes.count, hangs: hung.filter { $0.version == v }.count,
                adoption: Double(mine.filter { $0.day == today }.count) / Double(lastDayLaunches),
                daySessions: Dictionary(grouping: mine, by: \.day).mapValues(\.count))
        }

        let answer = try server.curl("GET", "/api/v1/releases?app=Prism", token: read)
        #expect(answer.status == 200, "\(answer)")
        let releases = try #require(try JSONSerialization.jsonObject(with: answer.body) as? [[String: Any]], "\(answer)")
        #expect(Set(releases.compactMap { $0["version"] as? String }) == Set(versions))
        let dayFormat = DateFormatter()
        dayFormat.locale = Locale(identifier: "en_US_POSIX")
        dayFormat.timeZone = TimeZone(identifier: "UTC")
        dayFormat.dateFormat = "yyyy-MM-dd"
        func dayText(_ day: Int64) -> String { dayFormat.string(from: Date(timeIntervalSince1970: Double(day * 86_400))) }
        for release in releases {
            let version = try #require(release["version"] as? String)
            let e = try #require(expected[version])
            #expect(release["app"] as? String == "Prism")
            #expect(release["sessions"] as? Int == e.sessions, "\(version)")
            #expect(release["crashedSessions"] as? Int == e.crashedSessions, "\(version)")
            #expect(release["crashedUsers"] as? Int == e.crashedUsers, "\(version)")
            #expect(release["crashes"] as? Int == e.crashes, "\(version)")
            #expect(release["hangs"] as? Int == e.hangs, "\(version)")
            // Users are estimated: with under 100 users per version the sketch is exact but for
            // a register collision (HyperLogLogTests.smallCountsAreExactOrNearly).
            let users = try #require(release["users"] as? Int)
            #expect(abs(users - e.users) <= 1, "\(version): \(users) users, \(e.users) expected")
            let crashFreeSessions = try #require(release["crashFreeSessions"] as? Double)
            #expect(abs(crashFreeSessions - (1 - Double(e.crashedSessions) / Double(e.sessions))) < 1e-9)
            let crashFreeUsers = try #require(release["crashFreeUsers"] as? Double)
            #expect(abs(crashFreeUsers - (1 - Double(e.crashedUsers) / Double(users))) < 1e-9)
            #expect(abs(crashFreeUsers - (1 - Double(e.crashedUsers) / Double(e.users))) < 0.02)
            let adoption = try #require(release["adoption"] as? Double)
            #expect(abs(adoption - e.adoption) < 1e-9, "\(version)")
            #expect(release["adoptionDay"] as? String == dayText(today))
            let hangRate = try #require(release["hangsPer1000Sessions"] as? Double)
            #expect(abs(hangRate - Double(e.hangs) * 1000 / Double(e.sessions)) < 1e-9)
            let trend = try #require(release["trend"] as? [[String: Any]])
            let trendSessions = Dictionary(uniqueKeysWithValues: trend.compactMap { day in
                (day["day"] as? String).map { ($0, day["sessions"] as? Int ?? -1) }
            })
            #expect(trendSessions.filter { $0.value > 0 } == Dictionary(uniqueKeysWithValues: e.daySessions.map { (dayText($0.key), $0.value) }))
            #expect(trend.reduce(0) { $0 + ($1["crashes"] as? Int ?? 0) } == e.crashes)
            #expect(release["firstSeen"] is String && release["lastSeen"] is String)
        }

        // Bounded storage: one counter row per version, day, OS and model seen, whatever the launches.
        let keys = Set(launches.map { "\($0.version)|\($0.day)|\(Self.devices[$0.device].os)|\(Self.devices[$0.device].model)" })
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM session_counters") == keys.count)
        #expect(try sqliteInt(h.dbPath, "SELECT SUM(sessions) FROM session_counters") == launches.count)
        // Every SDK report records its session, user and device (plain SQL over the meta sent).
        let sessions = try sqlite(h.dbPath, "SELECT s.session_id, s.user_id, s.device_id, m.sdk_report_id FROM report_sessions s JOIN sdk_records m ON m.report_id = s.report_id")
        #expect(sessions.count == crashRecords.count + hung.count)
        for row in sessions {
            let id = try #require(row["sdk_report_id"] as? String)
            let n = try #require(Int(id.split(separator: "-").last ?? ""))
            let l = id.hasPrefix("crash-") ? crashRecords[n] : hung[n]
            #expect(row["session_id"] as? String == l.session)
            #expect(row["device_id"] as? String == Self.devices[l.device].id)
            #expect(row["user_id"] as? String == Self.devices[l.device].user)
        }

        // The hand-uploaded report's release: counts, and null where a rate would be made up.
        let all = try #require(try JSONSerialization.jsonObject(with: try server.curl("GET", "/api/v1/releases", token: read).body) as? [[String: Any]])
        let handMade = try #require(all.first { $0["version"] as? String == "0.9" }, "\(all)")
        #expect(handMade["crashes"] as? Int == 1)
        #expect(handMade["sessions"] as? Int == 0)
        for key in ["crashFreeSessions", "crashFreeUsers", "adoption", "hangsPer1000Sessions"] {
            #expect(handMade[key] is NSNull, "\(key): \(handMade)")
        }

        // The CLI prints the same document, and a table.
        let cli = try h.stackline(["releases", "--app", "Prism", "--json"])
        #expect(cli.status == 0, "\(cli.stderr)")
        let cliReleases = try JSONSerialization.jsonObject(with: Data(cli.stdout.utf8)) as? [[String: Any]]
        #expect(cliReleases.map { NSArray(array: $0) } == NSArray(array: releases))
        let table = try h.stackline(["releases"])
        #expect(table.status == 0)
        #expect(table.stdout.contains("CRASH-FREE SESSIONS") && table.stdout.contains("0.9"), "\(table.stdout)")

        // The releases page in headless Chromium shows the API's numbers.
        let pages = try WebViewEndToEndTests().load(
            server, token: read, ["releases=/releases?app=Prism"], in: h.dir.file("browser"),
            artifacts: WebViewEndToEndTests.artifacts + "-releases")
        let page = try #require(pages["releases"])
        #expect(page.facts["inlineHandlers"] as? Int == 0)
        #expect(!page.console.contains { $0.contains("Content Security Policy") }, "\(page.console)")
        for release in releases {
            let key = "Prism:\(release["version"] as? String ?? "")"
            #expect(page.text("release-sessions:\(key)") == "\(release["sessions"] as? Int ?? -1)", "\(key)")
            #expect(page.text("release-users:\(key)") == "\(release["users"] as? Int ?? -1)", "\(key)")
            #expect(page.text("release-crashes:\(key)") == "\(release["crashes"] as? Int ?? -1)", "\(key)")
            let crashFree = try #require(release["crashFreeSessions"] as? Double)
            #expect(page.text("release-crash-free-sessions:\(key)") == String(format: "%.2f%%", crashFree * 100), "\(key)")
        }

        // Scopes and bounds.
        #expect(try server.curl("GET", "/api/v1/releases", token: ingest).status == 403)
        #expect(try server.curl("GET", "/api/v1/releases").status == 401)
        #expect(try server.curl("GET", "/api/v1/releases?app=" + String(repeating: "a", count: 257), token: read).status == 400)
    }

    /// A malformed launch fails alone, with a reason naming the field; its neighbours count.
    @Test func aMalformedLaunchIsRefusedAlone() throws {
        let h = try Harness()
        #expect(try h.stackline(["namespaces", "set-key", "prism"]).status == 0)
        let ingest = try h.token("ingest")
        let server = try h.startServer(["--workers", "1"])
        let device = Self.devices[1]
        let day = Int64(Date().timeIntervalSince1970 * 1000) / Self.dayMs
        let good = meta("1.0", device, session: "S-1")
        var noVersion = good
        noVersion["app_version"] = nil
        let records: [[String: Any]] = [
            record("boot-1", type: "appBoot", day: day, meta: good),
            record("boot-2", type: "appBoot", day: day, meta: noVersion),
            record("boot-3", type: "appBoot", day: day, meta: good.merging(["device_model": String(repeating: "x", count: 300)]) { $1 }),
            record("boot-4", type: "appBoot", day: day, meta: good.merging(["session_id": "a\u{7}b"]) { $1 }),
            record("boot-5", type: "appBoot", day: day, meta: good.merging(["user_id": 42]) { $1 }),
            record("boot-6", type: "appBoot", day: day, meta: good).merging(["created_time": -1]) { $1 },
            record("boot-7", type: "appBoot", day: day, meta: good.merging(["session_id": "S-7"]) { $1 }),
        ]
        let answer = try server.curl("POST", "/api/v1/ingest", token: ingest, body: try sdkBatch(records))
        #expect(answer.status == 200, "\(answer)")
        let out = try #require(answer.json?["records"] as? [[String: Any]])
        #expect(out.map { $0["status"] as? String } == ["accepted", "refused", "refused", "refused", "refused", "refused", "accepted"])
        let reasons = out.map { $0["reason"] as? String ?? "" }
        #expect(reasons[1].contains("meta.app_version is missing"), "\(reasons[1])")
        #expect(reasons[2].contains("meta.device_model is longer than 256 bytes"), "\(reasons[2])")
        #expect(reasons[3].contains("meta.session_id holds control characters"), "\(reasons[3])")
        #expect(reasons[4].contains("meta.user_id must be a string"), "\(reasons[4])")
        #expect(reasons[5].contains("created_time"), "\(reasons[5])")
        #expect(try sqliteInt(h.dbPath, "SELECT SUM(sessions) FROM session_counters") == 2)
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM session_counters") == 1)
    }
}
