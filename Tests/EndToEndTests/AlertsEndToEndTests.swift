import Foundation
import TestSupport
import Testing

/// A webhook receiver as a real process: Python's http.server on a free loopback port. Each
/// request is appended to a JSON-lines file; requests to `/flaky` are answered 500 the first
/// `failures` times per event id, then 200.
final class WebhookReceiver {
    let process = Process()
    let log: String
    let port: Int

    static let script = """
        import http.server, json, os, sys, threading
        port_file, log_file, failures = sys.argv[1], sys.argv[2], int(sys.argv[3])
        seen = {}
        lock = threading.Lock()
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get('Content-Length', '0'))).decode('utf-8')
                event = self.headers.get('X-Stackline-Event', '')
                status = 200
                with lock:
                    if self.path.startswith('/flaky'):
                        n = seen.get(event, 0)
                        seen[event] = n + 1
                        if n < failures:
                            status = 500
                    with open(log_file, 'a') as f:
                        f.write(json.dumps({'path': self.path, 'status': status, 'event': event,
                                            'contentType': self.headers.get('Content-Type', ''),
                                            'auth': self.headers.get('X-Receiver-Key', ''), 'body': body}) + '\\n')
                self.send_response(status)
                self.send_header('Content-Length', '2')
                self.end_headers()
                self.wfile.write(b'ok' if status == 200 else b'no')
            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        with open(port_file + '.tmp', 'w') as f:
            f.write(str(server.server_address[1]))
        os.rename(port_file + '.tmp', port_file)
        server.serve_forever()
        """

    init(dir: String, failures: Int) throws {
        let scriptPath = dir + "/receiver.py"
        try Self.script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        log = dir + "/webhooks.jsonl"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        port = try startPythonServer(process, "/usr/bin/python3", [scriptPath, dir + "/receiver.port", log, "\(failures)"], portFile: dir + "/receiver.port")
    }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

    /// Every request so far.
    var requests: [[String: Any]] { jsonLines(log) }
}

/// An SMTP sink: aiosmtpd (Debian's python3-aiosmtpd) on a free loopback port. Each message is
/// parsed by Python's own `email` package and appended to a JSON-lines file.
final class SMTPSink {
    let process = Process()
    let log: String
    let port: Int

    /// With a certificate and key, the sink offers STARTTLS and requires it, and accepts
    /// `AUTH` (after TLS only) for the login and password it is given.
    static let script = """
        import asyncio, email, email.policy, json, os, ssl, sys
        from aiosmtpd.smtp import SMTP, AuthResult
        port_file, log_file = sys.argv[1], sys.argv[2]
        cert, key, login, password = (sys.argv[3:7] + [None] * 4)[:4]
        logins = []
        def authenticator(server, session, envelope, mechanism, auth_data):
            logins.append(auth_data.login.decode())
            return AuthResult(success=auth_data.login.decode() == login and auth_data.password.decode() == password)
        class Handler:
            async def handle_DATA(self, server, session, envelope):
                message = email.message_from_bytes(envelope.original_content, policy=email.policy.default)
                with open(log_file, 'a') as f:
                    f.write(json.dumps({'mailFrom': envelope.mail_from, 'rcptTos': envelope.rcpt_tos,
                                        'from': str(message['From']), 'to': str(message['To']),
                                        'subject': str(message['Subject']), 'rule': str(message['X-Stackline-Rule']),
                                        'event': str(message['X-Stackline-Event']), 'date': str(message['Date']),
                                        'tls': session.ssl is not None, 'authenticated': bool(session.authenticated),
                                        'logins': logins, 'body': message.get_content()}) + '\\n')
                return '250 OK'
        def factory():
            if cert:
                context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
                context.load_cert_chain(cert, key)
                return SMTP(Handler(), tls_context=context, require_starttls=True, auth_require_tls=True,
                            authenticator=authenticator)
            return SMTP(Handler())
        loop = asyncio.new_event_loop()
        server = loop.run_until_complete(loop.create_server(factory, '127.0.0.1', 0))
        with open(port_file + '.tmp', 'w') as f:
            f.write(str(server.sockets[0].getsockname()[1]))
        os.rename(port_file + '.tmp', port_file)
        loop.run_forever()
        """

    /// `tls`: certificate, key, login and password (STARTTLS and AUTH required).
    init(dir: String, name: String = "smtp", tls: [String] = []) throws {
        let scriptPath = dir + "/\(name)-sink.py"
        try Self.script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        log = dir + "/\(name).jsonl"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        port = try startPythonServer(
            process, "/usr/bin/python3", [scriptPath, dir + "/\(name).port", log] + tls, portFile: dir + "/\(name).port")
    }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

    var messages: [[String: Any]] { jsonLines(log) }
}

private func startPythonServer(_ process: Process, _ python: String, _ arguments: [String], portFile: String) throws -> Int {
    process.executableURL = URL(fileURLWithPath: python)
    process.arguments = arguments
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let deadline = Date().addingTimeInterval(30)
    while Date() < deadline {
        if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text) { return port }
        guard process.isRunning else { throw TestSupportError("\(arguments[0]) exited at start (is python3-aiosmtpd installed? scripts/install-deps.sh)") }
        Thread.sleep(forTimeInterval: 0.05)
    }
    kill(process.processIdentifier, SIGKILL)
    throw TestSupportError("\(arguments[0]) did not start")
}

private func jsonLines(_ path: String) -> [[String: Any]] {
    let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
}

/// Waits (polling, with a generous deadline) until `condition` holds; the deadline only guards against a hang.
private func waitUntil(_ what: String, timeout: Double = 180, _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while try !condition() {
        guard Date() < deadline else { throw TestSupportError("timed out waiting for \(what)") }
        Thread.sleep(forTimeInterval: 0.2)
    }
}

/// `stackline serve --alerts`: real crashes and hangs through the real server and workers, real
/// webhooks to a Python receiver and real mail to an aiosmtpd sink, all on loopback.
@Suite(.serialized) struct AlertsEndToEndTests {
    /// The Swift runtime's own messages for the three crashes of the Ledger program.
    static let messages = [
        "index": "Fatal error: Index out of range",
        "unwrap": "Fatal error: Unexpectedly found nil while unwrapping an Optional value",
        "abort": "Aborted",
    ]

    /// `copies` distinct reports of one crash: the same stderr with 1…n trailing newlines
    /// (distinct digests, the same crash).
    func crashes(_ mode: String, copies: Int, offset: Int = 0) throws -> [Data] {
        let stderr = try SwiftCrashProgram.shared.stderr(mode, format: "text")
        return (1...copies).map { stderr + Data(String(repeating: "\n", count: $0 + offset).utf8) }
    }

    func submit(_ h: Harness, _ reports: [Data], version: String, batch: String) throws {
        let paths = try h.write(reports, subdir: batch)
        let out = try h.stackline(["submit", "--version", version] + paths)
        #expect(out.status == 0, "submit: \(out.stderr)")
    }

    func rules(receiver: WebhookReceiver, smtp: SMTPSink) -> String {
        """
        {
          "baseURL": "http://stackline.test:8080",
          "pollSeconds": 0.3,
          "delivery": {"maxAttempts": 10, "initialBackoffSeconds": 0.3, "maxBackoffSeconds": 2},
          "targets": {
            "hook": {"type": "webhook", "url": "http://127.0.0.1:\(receiver.port)/hook?key=receiver-secret-42",
                     "headers": {"X-Receiver-Key": "header-secret-43"}},
            "flaky": {"type": "webhook", "preset": "slack", "url": "http://127.0.0.1:\(receiver.port)/flaky"},
            "mail": {"type": "email", "host": "127.0.0.1", "port": \(smtp.port), "from": "stackline@example.test",
                     "to": ["oncall@example.test", "lead@example.test"]}
          },
          "rules": [
            {"name": "new-crash", "kind": "new_group", "severity": "critical", "targets": ["hook", "flaky", "mail"]},
            {"name": "back-again", "kind": "back_after_gap", "severity": "error", "targets": ["hook"]},
            {"name": "burst", "kind": "spike", "severity": "warning", "targets": ["hook"], "minCount": 8, "multiplier": 3},
            {"name": "slow", "kind": "hang_budget", "severity": "info", "targets": ["hook"], "maxCount": 2}
          ]
        }
        """
    }

    /// Bodies the receiver accepted on /hook, as objects.
    func hookEvents(_ receiver: WebhookReceiver) -> [[String: Any]] {
        receiver.requests.filter { $0["path"] as? String == "/hook?key=receiver-secret-42" && $0["status"] as? Int == 200 }
            .compactMap { try? JSONSerialization.jsonObject(with: Data(($0["body"] as? String ?? "").utf8)) as? [String: Any] }
    }

    func events(_ receiver: WebhookReceiver, kind: String) -> [[String: Any]] {
        hookEvents(receiver).filter { $0["kind"] as? String == kind }
    }

    /// Every delivery recorded in the database is delivered (plain SQL, the sqlite3 shell).
    func allDelivered(_ h: Harness) throws -> Bool {
        try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM alert_deliveries WHERE state != 'delivered'") == 0
    }

    @Test func newGroupsRegressionsSpikesAndHangBudgetsAreSentOnceAcrossRestarts() throws {
        let h = try Harness()
        let receiver = try WebhookReceiver(dir: h.dir.path, failures: 3)
        let smtp = try SMTPSink(dir: h.dir.path)
        let rulesPath = h.dir.file("alerts.json")
        try rules(receiver: receiver, smtp: smtp).write(toFile: rulesPath, atomically: true, encoding: .utf8)
        let lag = try LagProgram.shared.get()
        #expect(try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, lag.binary]).status == 0)
        let arguments = ["--workers", "1", "--alerts", rulesPath]
        var server = try h.startServer(arguments, log: "serve-1")

        // Version 1.0: two crashes, three copies each: one "new group" per crash.
        try submit(h, try crashes("index", copies: 3) + crashes("unwrap", copies: 3), version: "1.0", batch: "v10")
        try waitUntil("two new-group webhooks") { events(receiver, kind: "new_group").count >= 2 }
        // Version 1.1: a third crash only; the first two are absent from 1.1.
        try submit(h, try crashes("abort", copies: 2), version: "1.1", batch: "v11")
        try waitUntil("three new-group webhooks and every delivery done") {
            try events(receiver, kind: "new_group").count >= 3 && smtp.messages.count >= 3 && allDelivered(h)
        }

        // The counters on /metrics: 3 new groups × 3 targets sent, 3 × 3 failed attempts at the flaky one, none final.
        let metrics = try server.curl("GET", "/metrics", token: try h.token("read")).text.split(separator: "\n")
        func metric(_ name: String, _ labels: [String]) -> String? {
            metrics.first { $0.hasPrefix(name + "{") && labels.allSatisfy($0.contains) }.map { String($0.split(separator: " ").last ?? "") }
        }
        #expect(metrics.contains("stackline_alert_events_total 3"), "\(metrics.filter { $0.contains("alert") })")
        for target in ["hook", "flaky", "mail"] {
            #expect(metric("stackline_alerts_sent_total", ["target=\"\(target)\""]) == "3", "\(target)")
        }
        #expect(metric("stackline_alerts_failed_total", ["target=\"flaky\"", "final=\"false\""]) == "9")

        // Killed outright, then started again on the same database: nothing is sent twice.
        server.signal(SIGKILL)
        _ = try server.waitForExit()
        server = try h.startServer(arguments, log: "serve-2")

        // Version 1.2: the index crash is back after 1.1 went without it: a regression.
        try submit(h, try crashes("index", copies: 2, offset: 10), version: "1.2", batch: "v12")
        try waitUntil("a regression webhook") { events(receiver, kind: "back_after_gap").count >= 1 }
        // A burst of the unwrap crash in its old version: 3 + 10 reports this hour against a quiet week.
        try submit(h, try crashes("unwrap", copies: 10, offset: 20), version: "1.0", batch: "burst")
        try waitUntil("a spike webhook") { events(receiver, kind: "spike").count >= 1 }
        // Three reports of one hang in version 2.0, over a budget of 2.
        let loads: [UInt64] = [0x5555_0000_0000, 0x5600_1234_5000, 0x5700_0000_0000]
        try submit(h, loads.map { lag.sdkLagReport(load: $0, version: "2.0") }, version: "2.0", batch: "lag")
        try waitUntil("a hang-budget webhook") { events(receiver, kind: "hang_budget").count >= 1 }

        // A graceful stop and one more start: still nothing new.
        server.signal(SIGTERM)
        #expect(try server.waitForExit() == 0, "\(server.log.suffix(2000))")
        server = try h.startServer(arguments, log: "serve-3")
        try waitUntil("every delivery done") { try allDelivered(h) }
        // Several evaluation passes (0.3 s each) with nothing to add.
        Thread.sleep(forTimeInterval: 2)
        server.signal(SIGTERM)
        #expect(try server.waitForExit() == 0)

        // New groups: exactly one per crash, each named by the runtime's message, in the version it came in.
        let newGroups = events(receiver, kind: "new_group")
        #expect(newGroups.count == 3, "\(newGroups)")
        let titles = newGroups.map { $0["title"] as? String ?? "" }
        for (mode, version) in [("index", "1.0"), ("unwrap", "1.0"), ("abort", "1.1")] {
            let message = Self.messages[mode] ?? "?"
            let matching = newGroups.filter { ($0["title"] as? String)?.contains(message) == true }
            #expect(matching.count == 1, "\(mode): \(titles)")
            #expect(matching.first?["version"] as? String == version)
            #expect(matching.first?["app"] as? String == SwiftCrashProgram.name)
            #expect(matching.first?["severity"] as? String == "critical")
            #expect(matching.first?["rule"] as? String == "new-crash")
            #expect(matching.first?["groupKind"] as? String == "crash")
            let fingerprint = matching.first?["fingerprint"] as? String ?? "?"
            #expect(matching.first?["link"] as? String == "http://stackline.test:8080/groups/\(fingerprint)")
        }
        #expect(Set(newGroups.compactMap { $0["fingerprint"] as? String }).count == 3)
        let indexFingerprint = newGroups.first { ($0["title"] as? String)?.contains(Self.messages["index"]!) == true }?["fingerprint"] as? String
        let unwrapFingerprint = newGroups.first { ($0["title"] as? String)?.contains(Self.messages["unwrap"]!) == true }?["fingerprint"] as? String

        // The regression: the index crash, in 1.2, last seen in 1.0, absent from 1.1.
        let regressions = events(receiver, kind: "back_after_gap")
        #expect(regressions.count == 1, "\(regressions)")
        #expect(regressions.first?["fingerprint"] as? String == indexFingerprint)
        #expect(regressions.first?["version"] as? String == "1.2")
        #expect(regressions.first?["previousVersion"] as? String == "1.0")
        #expect(regressions.first?["versionsWithout"] as? [String] == ["1.1"])
        // Raised by the first of the two reports in 1.2, or by both if they were stored together.
        #expect(((regressions.first?["counts"] as? [String: Any])?["version"] as? Int).map { (1...2).contains($0) } == true)

        // The spike: the unwrap crash; its window held at least the rule's 8, over a median of 0.
        let spikes = events(receiver, kind: "spike")
        #expect(spikes.count == 1, "\(spikes)")
        #expect(spikes.first?["fingerprint"] as? String == unwrapFingerprint)
        let spikeCounts = spikes.first?["counts"] as? [String: Any]
        #expect((spikeCounts?["window"] as? Int).map { (8...13).contains($0) } == true, "\(spikeCounts ?? [:])")
        #expect(spikeCounts?["baselineMedian"] as? Double == 0)

        // The hang budget: the lag group in 2.0, over 2.
        let budgets = events(receiver, kind: "hang_budget")
        #expect(budgets.count == 1, "\(budgets)")
        #expect(budgets.first?["groupKind"] as? String == "lag")
        #expect(budgets.first?["version"] as? String == "2.0")
        #expect((budgets.first?["title"] as? String)?.hasPrefix("Hang in func4") == true)
        #expect((budgets.first?["counts"] as? [String: Any])?["budget"] as? Int == 2)
        // Raised by the third report, the first over the budget: there is no fourth.
        #expect((budgets.first?["counts"] as? [String: Any])?["version"] as? Int == 3)

        // Every event once: ids unique, and the webhook carries the configured header.
        let hookRequests = receiver.requests.filter { ($0["path"] as? String)?.hasPrefix("/hook") == true }
        #expect(hookRequests.count == 6, "\(hookRequests.count) hook requests")
        #expect(Set(hookRequests.compactMap { $0["event"] as? String }).count == 6)
        #expect(hookRequests.allSatisfy { $0["auth"] as? String == "header-secret-43" && $0["contentType"] as? String == "application/json" })
        #expect(Set(hookEvents(receiver).compactMap { ($0["id"] as? Int).map(String.init) }) == Set(hookRequests.compactMap { $0["event"] as? String }))

        // The failing receiver: three 500s, then one 200, per new group, in that order.
        let flaky = receiver.requests.filter { $0["path"] as? String == "/flaky" }
        let byEvent = Dictionary(grouping: flaky) { $0["event"] as? String ?? "" }
        #expect(byEvent.count == 3, "\(flaky.count) flaky requests")
        for (event, requests) in byEvent {
            #expect(requests.map { $0["status"] as? Int ?? 0 } == [500, 500, 500, 200], "event \(event)")
        }
        // The Slack preset's shape.
        let slack = flaky.last.flatMap { try? JSONSerialization.jsonObject(with: Data(($0["body"] as? String ?? "").utf8)) as? [String: Any] }
        #expect((slack?["text"] as? String)?.hasPrefix("[CRITICAL] New crash group in Ledger") == true, "\(slack ?? [:])")
        // In the database: 3 attempts failed, the 4th delivered, the last error kept.
        let flakyRows = try sqlite(h.dbPath, "SELECT attempts, state, last_error FROM alert_deliveries WHERE target = 'flaky'")
        #expect(flakyRows.count == 3)
        #expect(flakyRows.allSatisfy { $0["attempts"] as? Int == 4 && $0["state"] as? String == "delivered" })
        #expect(flakyRows.allSatisfy { ($0["last_error"] as? String)?.hasPrefix("HTTP 500") == true }, "\(flakyRows)")

        // Mail: one per new group, to both addresses, with the event's facts.
        let mails = smtp.messages
        #expect(mails.count == 3, "\(mails)")
        for mail in mails {
            #expect(mail["mailFrom"] as? String == "stackline@example.test")
            #expect(mail["rcptTos"] as? [String] == ["oncall@example.test", "lead@example.test"])
            #expect((mail["subject"] as? String)?.hasPrefix("[Stackline] [CRITICAL] New crash group in Ledger") == true, "\(mail)")
            #expect(mail["rule"] as? String == "new-crash")
            #expect((mail["body"] as? String)?.contains("Rule: new-crash (new_group, critical)") == true)
        }
        for message in Self.messages.values {
            #expect(mails.filter { ($0["body"] as? String)?.contains("Title: ") == true && ($0["subject"] as? String)?.contains(message) == true }.count == 1,
                    "\(message)")
        }

        // No secret of the rules file in any log.
        let logs = try FileManager.default.contentsOfDirectory(atPath: h.dir.path).filter { $0.hasPrefix("serve-") }
            .map { (try? String(contentsOfFile: h.dir.file($0), encoding: .utf8)) ?? "" }.joined()
        #expect(logs.contains("alert delivery failed"))
        #expect(!logs.contains("receiver-secret-42") && !logs.contains("header-secret-43"))
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM alert_deliveries WHERE last_error LIKE '%secret%'") == 0)

        // `alerts list` shows the six events with their deliveries.
        let list = try h.stackline(["alerts", "list", "--json"])
        let listed = try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(listed.count == 6, "\(list.stdout)")
    }

    @Test func badRulesFileStopsServeNamingFileAndField() throws {
        let h = try Harness()
        let path = h.dir.file("bad.json")
        try #"{"targets": {"h": {"type": "webhook", "url": "http://127.0.0.1:9/"}}, "rules": [{"name": "x", "kind": "spike", "severity": "info", "targets": ["h"], "multiplier": "three"}]}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        let out = try h.stackline(["serve", "--listen", "127.0.0.1:0", "--workers", "0", "--alerts", path])
        #expect(out.status != 0)
        #expect(out.stderr.contains("alert rules \(path): rules[0].multiplier: expected a number"), "\(out.stderr)")
    }

    @Test func alertsTestSendsASampleToEachTarget() throws {
        let h = try Harness()
        let receiver = try WebhookReceiver(dir: h.dir.path, failures: 0)
        let smtp = try SMTPSink(dir: h.dir.path)
        // A relay that requires STARTTLS and AUTH, with a certificate for 127.0.0.1 made here by openssl.
        let cert = h.dir.file("cert.pem")
        let key = h.dir.file("key.pem")
        let made = try runProcess(
            "openssl",
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1"])
        #expect(made.succeeded, "\(made.summary)")
        let tlsSMTP = try SMTPSink(dir: h.dir.path, name: "tls-smtp", tls: [cert, key, "alerts", "relay-secret-46"])
        let path = h.dir.file("alerts.json")
        try """
            {"targets": {
               "relay": {"type": "email", "host": "127.0.0.1", "port": \(tlsSMTP.port), "starttls": true, "caFile": "\(cert)",
                         "username": "alerts", "password": "relay-secret-46", "from": "a@example.test", "to": "c@example.test"},
               "untrusted": {"type": "email", "host": "127.0.0.1", "port": \(tlsSMTP.port), "starttls": true,
                         "username": "alerts", "password": "relay-secret-46", "from": "a@example.test", "to": "c@example.test"},
               "hook": {"type": "webhook", "preset": "wecom", "url": "http://127.0.0.1:\(receiver.port)/hook"},
               "ding": {"type": "webhook", "preset": "dingtalk", "url": "http://127.0.0.1:\(receiver.port)/robot/send?access_token=tok",
                        "secret": "SECding-secret-47"},
               "mail": {"type": "email", "host": "127.0.0.1", "port": \(smtp.port), "from": "a@example.test", "to": "b@example.test"},
               "down": {"type": "webhook", "url": "http://127.0.0.1:1/closed?token=closed-secret-44"},
               "tls-mail": {"type": "email", "host": "127.0.0.1", "port": \(smtp.port), "starttls": true, "username": "u",
                            "password": "smtp-secret-45", "from": "a@example.test", "to": "b@example.test"}},
             "rules": [{"name": "crashes", "kind": "new_group", "severity": "warning", "targets": ["hook", "mail", "down", "tls-mail", "relay", "untrusted", "ding"]}]}
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let out = try h.stackline(["alerts", "test", "crashes", "--alerts", path])
        #expect(out.status == 1, "one target is down: \(out.stdout) \(out.stderr)")
        #expect(out.stdout.contains("hook: delivered"))
        #expect(out.stdout.contains("mail: delivered"))
        #expect(out.stdout.contains("down: failed"))
        #expect(!out.stdout.contains("closed-secret-44") && !out.stderr.contains("closed-secret-44"))
        // The sink offers no STARTTLS: the mail is not sent, the password never leaves.
        #expect(out.stdout.contains("tls-mail: failed (email via 127.0.0.1:\(smtp.port) to 1 recipient(s)): the SMTP server does not offer STARTTLS"),
                "\(out.stdout)")
        #expect(!out.stdout.contains("smtp-secret-45"))
        // Through STARTTLS (verified against the given CA and the address) and AUTH PLAIN.
        #expect(out.stdout.contains("relay: delivered"), "\(out.stdout)")
        let relayed = try #require(tlsSMTP.messages.first)
        #expect(relayed["tls"] as? Bool == true)
        #expect(relayed["authenticated"] as? Bool == true)
        #expect(relayed["logins"] as? [String] == ["alerts"])
        #expect(relayed["rcptTos"] as? [String] == ["c@example.test"])
        #expect(!out.stdout.contains("relay-secret-46"))
        // The same relay without its CA: the certificate is refused before AUTH, nothing is sent.
        #expect(out.stdout.contains("untrusted: failed (email via 127.0.0.1:\(tlsSMTP.port) to 1 recipient(s)): TLS failed"), "\(out.stdout)")
        #expect(tlsSMTP.messages.count == 1)
        // DingTalk's signature, checked by Python's hmac on what the receiver got.
        #expect(out.stdout.contains("ding: delivered"))
        let ding = try #require(receiver.requests.first { ($0["path"] as? String)?.hasPrefix("/robot/send") == true })
        let query = try #require(URLComponents(string: ding["path"] as? String ?? "")?.queryItems)
        let timestamp = try #require(query.first { $0.name == "timestamp" }?.value)
        let sign = try #require(query.first { $0.name == "sign" }?.value)
        #expect(query.first?.name == "access_token" && query.first?.value == "tok")
        let expected = try runProcess("/usr/bin/python3", ["-c", """
            import base64, hashlib, hmac
            print(base64.b64encode(hmac.new(b'SECding-secret-47', b'\(timestamp)\\nSECding-secret-47', digestmod=hashlib.sha256).digest()).decode())
            """]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(sign == expected)
        #expect(!out.stdout.contains("ding-secret-47"))
        let body = try #require(receiver.requests.first { $0["path"] as? String == "/hook" }?["body"] as? String)
        let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        #expect(object?["msgtype"] as? String == "text")
        #expect(((object?["text"] as? [String: Any])?["content"] as? String)?.contains("Test of rule crashes") == true)
        #expect(smtp.messages.count == 1)
        #expect((smtp.messages.first?["subject"] as? String)?.contains("[WARNING] Test of rule crashes") == true)
        let missing = try h.stackline(["alerts", "test", "nope", "--alerts", path])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("no rule named nope"))
    }
}
