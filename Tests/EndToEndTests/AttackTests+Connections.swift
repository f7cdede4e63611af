import Foundation
import TestSupport
import Testing

/// F3 (connections held open without sending a request) and F6 (TLS), against a real `serve`.
/// Raw clients are small python3 programs on loopback; what they saw (EOF, a 408, a handshake
/// alert) is the oracle, never the server's own log.
extension AttackTests {
    /// 300 clients trickle one byte of a never-ending request head every 2 s (and reconnect when
    /// cut, as a real attacker would), against `serve` held to 256 descriptors. Before the fix none
    /// was ever closed and, descriptors gone, every new client was locked out. Now heads have a
    /// deadline and connections a cap below the descriptor limit, so a fresh client (another
    /// source address, and the per-address cap off: the attackers might as well be a botnet) is
    /// answered, and the server is fine once they stop.
    @Test func slowlorisUnderADescriptorLimitLeavesRoomForAFreshClient() throws {
        let h = try Harness()
        let server = try ServerProcess(
            arguments: ["--symbols", h.symbolsPath, "--workers", "0", "--header-timeout", "3", "--max-connections-per-address", "0"],
            environment: h.environment, logPath: h.dir.file("serve.log"), launcher: ["prlimit", "--nofile=256", "--"])
        let script = h.dir.file("slowloris.py")
        try Data(Self.slowloris.utf8).write(to: URL(fileURLWithPath: script))
        let stop = h.dir.file("stop")
        let attack = Process()
        attack.executableURL = URL(fileURLWithPath: try findTool("python3"))
        attack.arguments = [script, "\(server.port)", "300", "2", stop, "120"]
        let report = h.dir.file("attack.json")
        attack.standardOutput = FileHandle(forWritingAtPath: { _ = FileManager.default.createFile(atPath: report, contents: nil); return report }())
        try attack.run()
        defer {
            FileManager.default.createFile(atPath: stop, contents: nil)
            if attack.isRunning { attack.waitUntilExit() }
        }
        // Long enough for every attacker to have connected and sent bytes a few times.
        Thread.sleep(forTimeInterval: 8)
        let fresh = try runProcess(
            "curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--interface", "127.0.0.2", "--max-time", "60", server.baseURL + "/healthz"],
            timeout: 90)
        #expect(fresh.stdout == "200", "a fresh client during the attack: \(fresh.summary)\n\(server.log.suffix(2000))")
        FileManager.default.createFile(atPath: stop, contents: nil)
        attack.waitUntilExit()
        let stats = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Int])
        // The attack was real: all 300 were open at once at some point, and the server cut them
        // (a 408 or an EOF, seen by the attackers themselves).
        #expect(stats["peak_open"] == 300, "\(stats)")
        #expect((stats["cut_by_server"] ?? 0) >= 100, "\(stats)")
        #expect(Self.healthy(server), "\(server.log.suffix(2000))")
    }

    /// An idle kept-alive connection is closed by the server after `--idle-timeout`; a head sent
    /// too slowly gets 408 and a close after `--header-timeout`; a body sent too slowly is cut after
    /// `--body-timeout`. Each test connection has every other deadline far away, so only the one
    /// under test can close it.
    @Test func idleHalfSentAndSlowBodyConnectionsAreClosed() throws {
        let h = try Harness()
        let idle = try h.startServer(["--workers", "0", "--idle-timeout", "2", "--header-timeout", "600", "--body-timeout", "600"])
        // Two requests on one connection (so it is kept alive), then nothing: the server ends it.
        let kept = try Self.rawClient(idle.port, [
            .send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), .expectStatus(200),
            .send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), .expectStatus(200), .expectEOF(60),
        ])
        #expect(kept.isEmpty, "\(kept)")

        let head = try h.startServer(["--workers", "0", "--idle-timeout", "600", "--header-timeout", "2", "--body-timeout", "600"])
        // First request: the deadline runs from accept. Second: from its first byte.
        let slowFirst = try Self.rawClient(head.port, [.send("GET /healthz HTTP/1.1\r\nHo"), .expectStatus(408), .expectEOF(60)])
        #expect(slowFirst.isEmpty, "\(slowFirst)")
        let slowSecond = try Self.rawClient(head.port, [
            .send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), .expectStatus(200),
            .send("GET /healthz HTTP/1.1\r\nHo"), .expectStatus(408), .expectEOF(60),
        ])
        #expect(slowSecond.isEmpty, "\(slowSecond)")

        let body = try h.startServer(["--workers", "0", "--idle-timeout", "0", "--header-timeout", "600", "--body-timeout", "2"])
        // /login reads its whole form body before answering; 10 of 1000 bytes never finish it.
        let slowBody = try Self.rawClient(body.port, [
            .send("POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\ntoken=abcd"),
            .expectEOF(60),
        ])
        #expect(slowBody.isEmpty, "\(slowBody)")
        // A body slow but above --body-min-rate: 500 bytes over about 4 s, well past the 2 s of
        // --body-timeout, but each 100 bytes earns 10 s more at 10 bytes/s. It gets its answer.
        let steady = try h.startServer([
            "--workers", "0", "--idle-timeout", "0", "--header-timeout", "600", "--body-timeout", "2", "--body-min-rate", "10",
        ])
        let padding = String(repeating: "x", count: 100)
        let slowButSteady = try Self.rawClient(steady.port, [
            .send("POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 500\r\n\r\n"),
            .send("a=" + padding.dropFirst(2)), .pause(1), .send(padding), .pause(1), .send(padding), .pause(1), .send(padding), .pause(1),
            .send(padding), .expectStatus(nil),
        ])
        #expect(slowButSteady.isEmpty, "\(slowButSteady)")
        for server in [idle, head, body, steady] { #expect(Self.healthy(server)) }
    }

    /// `--max-connections-per-address 3`: a fourth connection from 127.0.0.1 is closed unanswered
    /// while the three stay usable and 127.0.0.2 is still served; once one of the three closes,
    /// 127.0.0.1 gets a connection again.
    @Test func perAddressCapRefusesOneAddressOnly() throws {
        let h = try Harness()
        let server = try h.startServer(["--workers", "0", "--max-connections-per-address", "3"])
        let script = h.dir.file("cap.py")
        try Data(Self.perAddressCap.utf8).write(to: URL(fileURLWithPath: script))
        let out = try runProcess("python3", [script, "\(server.port)", "3"], timeout: 120)
        #expect(out.status == 0, "\(out.summary)")
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any], "\(out.summary)")
        #expect(stats["held"] as? [Int] == [200, 200, 200], "\(stats)")
        #expect(stats["fourth"] as? String == "closed", "\(stats)")
        #expect(stats["held_after"] as? [Int] == [200, 200, 200], "\(stats)")
        #expect(stats["other_address"] as? Int == 200, "\(stats)")
        #expect(stats["after_one_closed"] as? Int == 200, "\(stats)")
        #expect(Self.healthy(server))
    }

    /// F6: with `--tls-cert` the server speaks TLS 1.2 with ECDHE and AEAD suites and TLS 1.3,
    /// nothing older or weaker (openssl s_client is the client and the judge: the failures must be
    /// the server's alerts, with the client itself allowing the old protocol and suite); the session
    /// cookie is `Secure`.
    @Test func tlsOnlyModernProtocolsAndForwardSecretSuites() throws {
        let h = try Harness()
        let read = try h.token("read")
        let (cert, key) = try h.loopbackCertificate()
        let server = try h.startServer(["--workers", "0", "--tls-cert", cert, "--tls-key", key, "--header-timeout", "5"])
        func handshake(_ options: [String]) throws -> ProcessOutput {
            try runProcess(
                "openssl", ["s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "127.0.0.1", "-brief"] + options,
                input: "")
        }
        // SECLEVEL=0 lets this client offer TLS 1.1 and SHA-1 suites: a refusal is the server's.
        let tls11 = try handshake(["-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0"])
        #expect(tls11.status != 0, "\(tls11.summary)")
        #expect(tls11.stderr.contains("alert protocol version"), "\(tls11.summary)")
        let cbc = try handshake(["-tls1_2", "-cipher", "AES128-SHA:@SECLEVEL=0"])
        #expect(cbc.status != 0, "\(cbc.summary)")
        #expect(cbc.stderr.contains("alert handshake failure"), "\(cbc.summary)")
        let rsaKeyExchange = try handshake(["-tls1_2", "-cipher", "AES128-GCM-SHA256"])
        #expect(rsaKeyExchange.status != 0, "\(rsaKeyExchange.summary)")
        let ecdheCBC = try handshake(["-tls1_2", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"])
        #expect(ecdheCBC.status != 0, "\(ecdheCBC.summary)")

        let modern12 = try handshake(["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"])
        #expect(modern12.status == 0, "\(modern12.summary)")
        #expect(modern12.stderr.contains("Protocol version: TLSv1.2"), "\(modern12.summary)")
        #expect(modern12.stderr.contains("Ciphersuite: ECDHE-RSA-AES128-GCM-SHA256"), "\(modern12.summary)")
        let tls13 = try handshake(["-tls1_3"])
        #expect(tls13.status == 0, "\(tls13.summary)")
        #expect(tls13.stderr.contains("Protocol version: TLSv1.3"), "\(tls13.summary)")

        let login = try HTTPAnswer.curl(
            "POST", "https://127.0.0.1:\(server.port)/login", body: Data("token=\(read)".utf8), extra: ["--cacert", cert])
        #expect(login.status == 303, "\(login)")
        let cookie = try #require(login.headers["set-cookie"], "\(login.headers)")
        #expect(cookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.contains("secure"), "\(cookie)")
        #expect(try HTTPAnswer.curl("GET", "https://127.0.0.1:\(server.port)/healthz", extra: ["--cacert", cert]).status == 200)
        // The head deadline runs from accept, so a handshake left half-done (a TLS record header
        // and nothing more) is ended by the server too.
        let stalled = try Self.rawClient(server.port, [.send("\u{16}\u{03}\u{01}\u{02}\u{00}"), .expectEOF(60)])
        #expect(stalled.isEmpty, "\(stalled)")
    }
}

extension Harness {
    /// A self-signed RSA certificate for 127.0.0.1 and its key, made by openssl (PEM files).
    func loopbackCertificate() throws -> (certificate: String, key: String) {
        let cert = dir.file("cert.pem"), key = dir.file("key.pem")
        _ = try runChecked("openssl", [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ])
        return (cert, key)
    }
}

extension AttackTests {
    enum RawStep {
        case send(String)
        case pause(Double)
        /// Reads one answer's status line and headers (and a Content-Length body); nil: any status.
        case expectStatus(Int?)
        /// The server ends the connection within the guard (seconds), sending nothing more.
        case expectEOF(Int)
    }

    /// Runs `steps` on one connection to 127.0.0.1:`port` through python3; the failures, empty
    /// when every step went as expected.
    static func rawClient(_ port: Int, _ steps: [RawStep]) throws -> String {
        let plan = steps.map { step -> [String: Any] in
            switch step {
            case .send(let text): ["send": text]
            case .pause(let seconds): ["pause": seconds]
            case .expectStatus(let status): ["status": status ?? 0]
            case .expectEOF(let guardSeconds): ["eof": guardSeconds]
            }
        }
        let json = String(decoding: try JSONSerialization.data(withJSONObject: plan), as: UTF8.self)
        let out = try runProcess("python3", ["-c", rawClientScript, "\(port)", json], timeout: 300)
        return out.status == 0 ? "" : out.summary
    }

    static let rawClientScript = #"""
        import json, socket, sys, time
        port, plan = int(sys.argv[1]), json.loads(sys.argv[2])
        s = socket.create_connection(("127.0.0.1", port))
        buf = b""
        def fill(deadline):
            global buf
            s.settimeout(max(0.01, deadline - time.time()))
            chunk = s.recv(65536)
            buf += chunk
            return chunk
        for step in plan:
            if "send" in step:
                s.sendall(step["send"].encode())
            elif "pause" in step:
                time.sleep(step["pause"])
            elif "status" in step:
                deadline = time.time() + 60
                while b"\r\n\r\n" not in buf:
                    if not fill(deadline): sys.exit("EOF before an answer to the step %r" % step)
                head, _, buf = buf.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                status = int(lines[0].split()[1])
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length": length = int(value.strip())
                while len(buf) < length:
                    if not fill(deadline): sys.exit("EOF inside a body")
                buf = buf[length:]
                if step["status"] and status != step["status"]: sys.exit("status %d, expected %d: %r" % (status, step["status"], lines))
            elif "eof" in step:
                deadline = time.time() + step["eof"]
                try:
                    while True:
                        if time.time() > deadline: sys.exit("still open after %d s" % step["eof"])
                        if not fill(deadline): break
                        sys.exit("data where EOF was expected: %r" % buf)
                except socket.timeout:
                    sys.exit("still open after %d s" % step["eof"])
                except ConnectionResetError:
                    pass
        """#

    /// argv: port, clients, seconds between bytes, stop file, seconds at most. Prints what the
    /// attackers saw as JSON: peak of connections open at once, and how many were cut by the server.
    static let slowloris = #"""
        import errno, json, os, socket, sys, time
        port, count, interval, stop, limit = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], float(sys.argv[5])
        head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * 100000
        slots = [None] * count   # [socket, bytes sent, connected]
        peak = cut = connects = 0
        end = time.time() + limit
        def drop(i):
            slots[i][0].close()
            slots[i] = None
        while time.time() < end and not os.path.exists(stop):
            for i in range(count):
                if slots[i] is None:
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    s.setblocking(False)
                    s.bind(("127.0.0.1", 0))
                    s.connect_ex(("127.0.0.1", port))
                    slots[i] = [s, 0, False]
                    connects += 1
                    continue
                s, sent, connected = slots[i]
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    drop(i); continue
                try:
                    data = s.recv(4096)
                    # An answer (the 408) or EOF: the server ended this one.
                    if connected or data: cut += 1
                    drop(i); continue
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError as e:
                    if e.errno == errno.ENOTCONN: continue
                    if connected: cut += 1
                    drop(i); continue
                try:
                    if s.send(head[sent:sent + 1]) == 1:
                        slots[i][1] += 1
                        slots[i][2] = True
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    if connected: cut += 1
                    drop(i)
            peak = max(peak, sum(1 for x in slots if x is not None and x[2]))
            time.sleep(interval)
        for i in range(count):
            if slots[i] is not None: drop(i)
        print(json.dumps({"peak_open": peak, "cut_by_server": cut, "connects": connects}))
        """#

    /// argv: port, the cap. Holds `cap` kept-alive connections from 127.0.0.1, tries one more,
    /// then one from 127.0.0.2, then closes one of the held and tries 127.0.0.1 again.
    static let perAddressCap = #"""
        import json, socket, sys, time
        port, cap = int(sys.argv[1]), int(sys.argv[2])
        request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        def connect(source):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((source, 0))
            s.settimeout(30)
            s.connect(("127.0.0.1", port))
            return s
        def ask(s):
            try:
                s.sendall(request)
                buf = b""
                while b"\r\n\r\n" not in buf:
                    chunk = s.recv(4096)
                    if not chunk: return "closed"
                    buf += chunk
                head, _, rest = buf.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                length = next((int(l.split(":", 1)[1]) for l in lines if l.lower().startswith("content-length:")), 0)
                while len(rest) < length:
                    chunk = s.recv(4096)
                    if not chunk: return "closed"
                    rest += chunk
                return int(lines[0].split()[1])
            except (ConnectionResetError, BrokenPipeError):
                return "closed"
        held = [connect("127.0.0.1") for _ in range(cap)]
        out = {"held": [ask(s) for s in held]}
        fourth = connect("127.0.0.1")
        out["fourth"] = ask(fourth)
        fourth.close()
        out["held_after"] = [ask(s) for s in held]
        other = connect("127.0.0.2")
        out["other_address"] = ask(other)
        other.close()
        held.pop().close()
        # The server counts the close when it sees it: retry for a while (a guard, not a timing).
        answer = "closed"
        for _ in range(100):
            s = connect("127.0.0.1")
            answer = ask(s)
            s.close()
            if answer != "closed": break
            time.sleep(0.2)
        out["after_one_closed"] = answer
        print(json.dumps(out))
        """#
}
