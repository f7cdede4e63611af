import Foundation
import ReportModel
import Testing
import WorkerProtocol

/// The job and reply frames (`JobFrameCodec.swift`). Expected bytes are written out here from
/// the layout, never taken from the encoder; JSONEncoder is the oracle for `RemoteResult`'s JSON.
@Suite struct JobFrameCodecTests {
    // The layout's primitives, spelled independently of the codec: big-endian, strings counted.
    static func u32(_ n: Int) -> [UInt8] { [UInt8(n >> 24 & 0xff), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] }
    static func i64(_ n: Int64) -> [UInt8] {
        let u = UInt64(bitPattern: n)
        return (0..<8).map { UInt8(u >> UInt64(56 - 8 * $0) & 0xff) }
    }
    static func str(_ s: String) -> [UInt8] { u32(s.utf8.count) + Array(s.utf8) }
    static func frame(tag: UInt8, header: [UInt8], attachment: [UInt8]) -> Data {
        Data([tag] + u32(header.count) + header + attachment)
    }

    // MARK: Layout

    @Test func requestBytesFollowTheLayout() throws {
        let request = JobRequest(jobId: 0x0102_0304_0506_0708, reportId: -2, attempt: 3, format: "ips", raw: Data("hi".utf8))
        let expected = Data([
            0x11,  // job request, layout 1
            0, 0, 0, 35,  // header length
            0, 0, 0, 2,  // attachment length
            1, 2, 3, 4, 5, 6, 7, 8,  // jobId
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,  // reportId -2
            0, 0, 0, 0, 0, 0, 0, 3,  // attempt
            0, 0, 0, 3, 0x69, 0x70, 0x73,  // "ips"
            0x68, 0x69,  // the raw report, as is
        ])
        #expect(try request.encodedFrame() == expected)
        #expect(try JobRequest(frame: expected) == request)
    }

    /// A parse child's reply naming the report's device: presence bits 4, 8 and 16 after app and
    /// version, each value a counted string. A value no parser keeps (a control character, blank,
    /// untrimmed) refuses the frame, so what reads is what was written.
    @Test func parseReplyCarriesTheReportsDevice() throws {
        let device = try #require(DeviceInfo(model: "iPhone15,2", osVersion: "17.2", id: "K"))
        let reply = ParseReply.parts([ParsedPartSummary(
            data: nil, format: "ips",
            outcome: .success(ParsedReportSummary(format: "ips", kind: .crash, app: "A", version: nil, buildIds: [], device: device)))])
        let header: [UInt8] = Self.u32(0) + [0] + Self.u32(1) + [3] + Self.u32(0) + Self.str("ips") + [0, 1 | 4 | 8 | 16]
            + Self.str("A") + Self.str("iPhone15,2") + Self.str("17.2") + Self.str("K") + Self.u32(0)
        let expected = Self.frame(tag: 0x41, header: header, attachment: [])
        #expect(try reply.encodedFrame() == expected)
        #expect(try ParseReply(frame: expected) == reply)

        let hostileHeader: [UInt8] = Self.u32(0) + [0] + Self.u32(1) + [3] + Self.u32(0) + Self.str("ips") + [0, 4 | 16]
            + Self.str("iPhone\u{1b}[2J") + Self.str("K") + Self.u32(0)
        #expect(throws: JobFrameError.self) { try ParseReply(frame: Self.frame(tag: 0x41, header: hostileHeader, attachment: [])) }
        let untrimmed: [UInt8] = Self.u32(0) + [0] + Self.u32(1) + [3] + Self.u32(0) + Self.str("ips") + [0, 16]
            + Self.str(" K") + Self.u32(0)
        #expect(throws: JobFrameError.self) { try ParseReply(frame: Self.frame(tag: 0x41, header: untrimmed, attachment: [])) }
    }

    @Test func resultReplyBytesFollowTheLayout() throws {
        let reply = JobReply(
            kind: .result, jobId: 7,
            result: CompressedResult(
                compressed: Data([0xde, 0xad]), size: 300, status: .partial,
                counts: ReportCounts(frames: 30, symbolicated: 20, missing: 10),
                missing: [
                    MissingDebugFile(buildID: BuildID(bytes: [0xab, 0x12]), imageName: "Demo"),
                    MissingDebugFile(buildID: BuildID(bytes: [0xcd, 0x34]), imageName: nil),
                ]),
            group: GroupKey(fingerprint: "f0", kind: .lag, title: "T", rulesVersion: 2, frames: ["a", "bc"]))
        let header: [UInt8] =
            [0, 0, 0, 2]  // attachment length
            + [0]  // kind: result
            + [0, 0, 0, 0, 0, 0, 0, 7]  // jobId
            + [0b110]  // presence: group, result
            + [0, 0, 0, 2, 0x66, 0x30]  // fingerprint "f0"
            + [1]  // lag
            + [0, 0, 0, 1, 0x54]  // title "T"
            + [0, 0, 0, 0, 0, 0, 0, 2]  // rules version
            + [0, 0, 0, 2, 0, 0, 0, 1, 0x61, 0, 0, 0, 2, 0x62, 0x63]  // frames ["a", "bc"]
            + [0, 0, 0, 0, 0, 0, 0x01, 0x2c]  // size 300
            + [1]  // partial
            + [0, 0, 0, 0, 0, 0, 0, 30, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 10]  // counts
            + [0, 0, 0, 2]  // two missing builds
            + [0, 0, 0, 4, 0x61, 0x62, 0x31, 0x32, 1, 0, 0, 0, 4, 0x44, 0x65, 0x6d, 0x6f]  // "ab12", named "Demo"
            + [0, 0, 0, 4, 0x63, 0x64, 0x33, 0x34, 0]  // "cd34", no name
        let expected = Self.frame(tag: 0x21, header: header, attachment: [0xde, 0xad])
        #expect(try reply.encodedFrame() == expected)
        #expect(try JobReply(frame: expected) == reply)

        // A reply is input (a remote worker sends it): a missing build's id that is not one is
        // refused where the frame is read, naming the field, and never reaches the database.
        var bad = header
        let at = try #require(bad.indices.first { bad[$0...].starts(with: [0x61, 0x62, 0x31, 0x32]) })
        bad[at] = UInt8(ascii: "z")
        #expect(throws: JobFrameError.invalidField(field: "result.missing.buildId", reason: "id 'zb12' is not hexadecimal")) {
            try JobReply(frame: Self.frame(tag: 0x21, header: bad, attachment: [0xde, 0xad]))
        }
    }

    @Test func failureReplyBytesFollowTheLayout() throws {
        let reply = JobReply(kind: .permanentError, jobId: -1, message: "é")
        let expected = Data([0x21, 0, 0, 0, 20, 0, 0, 0, 0, 3] + Self.i64(-1) + [1, 0, 0, 0, 2, 0xc3, 0xa9])
        #expect(try reply.encodedFrame() == expected)
        #expect(JobReply.failureFrame(.permanentError, jobId: -1, message: "é") == expected)
        #expect(try JobReply(frame: expected) == reply)
        // Nothing present at all.
        let bare = Data([0x21, 0, 0, 0, 14, 0, 0, 0, 0, 4] + Self.i64(9) + [0])
        #expect(try JobReply(kind: .workerLost, jobId: 9).encodedFrame() == bare)
        #expect(try JobReply(frame: bare) == JobReply(kind: .workerLost, jobId: 9))
    }

    // MARK: Round trips

    static let requests: [JobRequest] = [
        JobRequest(jobId: 1, reportId: 1, attempt: 1, format: "apple-ips", raw: Data()),
        JobRequest(jobId: .max, reportId: .min, attempt: .max, format: "", raw: Data(0...255)),
        JobRequest(jobId: -1, reportId: 0, attempt: 0, format: "Ünïcödé 名前 🧨", raw: Data(repeating: 0x7b, count: 70_000)),
    ]

    static let replies: [JobReply] = {
        var replies: [JobReply] = []
        let names = ["Demo", "a/b\\c\"d", "Ünïcödé 名前 🧨", "\u{0}\u{1f}\u{7f}", ""]
        for (i, name) in names.enumerated() {
            let result = CompressedResult(
                compressed: Data((0..<(i * 1000)).map { UInt8(truncatingIfNeeded: $0 * 7) }), size: i * 3000,
                status: [ReportStatus.complete, .partial, .unsymbolicated][i % 3],
                counts: ReportCounts(frames: i, symbolicated: .max, missing: 0),
                missing: (0..<i).map { (n: Int) -> MissingDebugFile in
                    let statuses: [SymbolStatus] = [.notFound, .unreadable, .wrongArchitecture, .symbolTableOnly]
                    let detail: String? = n % 3 == 0 ? nil : name
                    return MissingDebugFile(
                        buildID: BuildID(bytes: [UInt8(i), UInt8(n), 0xff]), imageName: n % 2 == 0 ? name : nil,
                        status: statuses[n % 4], detail: detail)
                })
            let group = GroupKey(
                fingerprint: String(repeating: "0f", count: 16), kind: i % 2 == 0 ? .crash : .lag, title: "SIGSEGV in \(name)",
                rulesVersion: i - 2, frames: (0..<i).map { "\(name)!f\($0)" })
            replies.append(JobReply(kind: .result, jobId: Int64(i), result: result, group: group))
            replies.append(JobReply(kind: .result, jobId: .min, result: result))
            replies.append(JobReply(kind: .result, jobId: .max, result: result, group: group, message: name))
        }
        for kind in JobReply.Kind.allCases {
            replies.append(JobReply(kind: kind, jobId: -1, message: "line 1: \"x\" \\ / \n\t\u{0}"))
            replies.append(JobReply(kind: kind, jobId: 0))
            replies.append(JobReply(kind: kind, jobId: 3, message: ""))
        }
        return replies
    }()

    @Test(arguments: requests)
    func requestRoundTrips(_ request: JobRequest) throws {
        let frame = try request.encodedFrame()
        #expect(try JobRequest(frame: frame) == request)
        // Inside a claim's body a frame is a slice that does not start at 0.
        let body = try Framing.bundle([Data("{}".utf8), frame])
        #expect(try JobRequest(frame: try Framing.unbundle(body)[1]) == request)
    }

    @Test func repliesRoundTrip() throws {
        for reply in Self.replies {
            let frame = try reply.encodedFrame()
            #expect(try JobReply(frame: frame) == reply)
            let body = try Framing.bundle([Data("{}".utf8), frame, frame])
            #expect(try Framing.unbundle(body).dropFirst().map { try JobReply(frame: $0) } == [reply, reply])
        }
    }

    /// A worker's real result: the report it compressed comes back equal to the one it made.
    @Test func aSymbolicatedReportSurvivesTheFrame() throws {
        let report = SymbolicatedReport(
            format: "swift-backtrace-json", kind: .crash, status: .partial, missingBuildIds: [BuildID(bytes: [0xab, 0x12])],
            images: [BinaryImage(name: "Demo", id: BuildID(bytes: [0xab, 0x12]), loadAddress: 0x1000)],
            threads: [SymbolicatedThread(index: 0, crashed: true, frames: (0..<30).map { i in
                SymbolicatedFrame(index: i, address: Address(UInt64(0x1000 + i)), kind: .returnAddress, image: "Demo",
                                  status: i % 2 == 0 ? .symbolicated : .missingDebugFile, function: "f\(i)")
            })])
        let reply = JobReply(kind: .result, jobId: 5, result: try CompressedResult(report))
        let back = try JobReply(frame: try reply.encodedFrame())
        let result = try #require(back.result)
        #expect(result.isIntact)
        #expect(try result.report() == report)
        #expect(result.counts == ReportCounts(frames: 30, symbolicated: 15, missing: 15))
        #expect(result.missing == [MissingDebugFile(buildID: BuildID(bytes: [0xab, 0x12]), imageName: "Demo")])
    }

    // MARK: Malformed input

    /// Every cut of a valid frame is refused, with the error that names where it was cut.
    @Test func everyTruncationIsRefused() throws {
        let frames: [(Data, Int)] =
            try Self.requests.prefix(2).map { (try $0.encodedFrame(), $0.raw.count) }
            + Self.replies.prefix(6).map { (try $0.encodedFrame(), $0.result?.compressed.count ?? 0) }
        for (frame, attachment) in frames {
            let headerLength = frame.count - 5 - attachment
            for cut in 0..<frame.count {
                let prefix = frame.prefix(cut)
                let expected: JobFrameError =
                    cut < 5
                    ? .tooShort(cut)
                    : cut < 5 + headerLength
                        ? .headerPastEnd(declared: headerLength, available: cut - 5)
                        : .attachmentLength(declared: attachment, actual: cut - 5 - headerLength)
                if frame.first == 0x11 {
                    #expect(throws: expected) { try JobRequest(frame: prefix) }
                } else {
                    #expect(throws: expected) { try JobReply(frame: prefix) }
                }
            }
        }
    }

    @Test func lengthsPastTheEndAreRefused() throws {
        // The header length points past the frame.
        let request = [UInt8](try Self.requests[0].encodedFrame())
        #expect(throws: JobFrameError.headerPastEnd(declared: 0xffff_ffff, available: request.count - 5)) {
            try JobRequest(frame: Data([0x11, 0xff, 0xff, 0xff, 0xff] + request.dropFirst(5)))
        }
        // A string's length runs past the header's end.
        let header = Self.u32(0) + Self.i64(1) + Self.i64(1) + Self.i64(1) + Self.u32(1000) + Array("ips".utf8)
        #expect(throws: JobFrameError.headerTruncated(field: "format")) {
            try JobRequest(frame: Self.frame(tag: 0x11, header: header, attachment: []))
        }
        // The attachment length is larger, or smaller, than what follows.
        let raw: [UInt8] = [1, 2, 3]
        let base = Self.i64(1) + Self.i64(1) + Self.i64(1) + Self.str("ips")
        #expect(throws: JobFrameError.attachmentLength(declared: 4, actual: 3)) {
            try JobRequest(frame: Self.frame(tag: 0x11, header: Self.u32(4) + base, attachment: raw))
        }
        #expect(throws: JobFrameError.attachmentLength(declared: 2, actual: 3)) {
            try JobRequest(frame: Self.frame(tag: 0x11, header: Self.u32(2) + base, attachment: raw))
        }
        #expect(try JobRequest(frame: Self.frame(tag: 0x11, header: Self.u32(3) + base, attachment: raw)).raw == Data(raw))
        // A count of group frames that cannot fit in what is left (never an allocation of that size).
        let reply = Self.u32(0) + [0] + Self.i64(1) + [2] + Self.str("f") + [0] + Self.str("t") + Self.i64(1) + Self.u32(0xffff_ffff)
        #expect(throws: JobFrameError.headerTruncated(field: "group.frames")) {
            try JobReply(frame: Self.frame(tag: 0x21, header: reply, attachment: []))
        }
        // Missing builds likewise.
        let result = Self.u32(0) + [0] + Self.i64(1) + [4] + Self.i64(10) + [0] + Self.i64(1) + Self.i64(1) + Self.i64(0) + Self.u32(1 << 30)
        #expect(throws: JobFrameError.headerTruncated(field: "result.missing")) {
            try JobReply(frame: Self.frame(tag: 0x21, header: result, attachment: []))
        }
    }

    @Test func badTagsAreRefused() throws {
        let request = try Self.requests[0].encodedFrame()
        let reply = try JobReply(kind: .workerLost, jobId: 1).encodedFrame()
        func retagged(_ frame: Data, _ tag: UInt8) -> Data { Data([tag]) + frame.dropFirst() }
        #expect(throws: JobFrameError.unknownTag(0x00)) { try JobRequest(frame: retagged(request, 0x00)) }
        #expect(throws: JobFrameError.unknownTag(0x51)) { try JobReply(frame: retagged(reply, 0x51)) }
        // Parse frames share the envelope: one is a frame of another kind, not an unknown tag.
        #expect(throws: JobFrameError.wrongKind(expected: "job reply", found: "parse request")) { try JobReply(frame: retagged(reply, 0x31)) }
        #expect(throws: JobFrameError.unsupportedVersion(kind: "job request", version: 2)) { try JobRequest(frame: retagged(request, 0x12)) }
        #expect(throws: JobFrameError.unsupportedVersion(kind: "job reply", version: 0)) { try JobReply(frame: retagged(reply, 0x20)) }
        #expect(throws: JobFrameError.wrongKind(expected: "job request", found: "job reply")) { try JobRequest(frame: reply) }
        #expect(throws: JobFrameError.wrongKind(expected: "job reply", found: "job request")) { try JobReply(frame: request) }
        // A frame of an older release: JSON.
        #expect(throws: JobFrameError.jsonFrame) { try JobRequest(frame: Data(#"{"jobId":1,"raw":""}"#.utf8)) }
        #expect(throws: JobFrameError.jsonFrame) { try JobReply(frame: Data("{}".utf8)) }
        #expect(throws: JobFrameError.tooShort(0)) { try JobReply(frame: Data()) }
    }

    @Test func badHeadersAreRefused() throws {
        func reply(_ header: [UInt8], attachment: [UInt8] = []) throws -> JobReply {
            try JobReply(frame: Self.frame(tag: 0x21, header: header, attachment: attachment))
        }
        let start = Self.u32(0) + [0] + Self.i64(1)
        let result = Self.i64(10) + [0] + Self.i64(1) + Self.i64(1) + Self.i64(0)
        #expect(throws: JobFrameError.invalidField(field: "kind", reason: "9 is not a reply kind")) {
            try reply(Self.u32(0) + [9] + Self.i64(1) + [0])
        }
        #expect(throws: JobFrameError.invalidField(field: "presence", reason: "unknown bits in 0x8")) { try reply(start + [8]) }
        #expect(throws: JobFrameError.invalidField(field: "group.kind", reason: "2 is not a report kind")) {
            try reply(start + [2] + Self.str("f") + [2])
        }
        #expect(throws: JobFrameError.invalidField(field: "result.status", reason: "3 is not a report status")) {
            try reply(start + [4] + Self.i64(10) + [3])
        }
        #expect(throws: JobFrameError.invalidField(field: "result.size", reason: "-1 is negative")) { try reply(start + [4] + Self.i64(-1)) }
        #expect(throws: JobFrameError.invalidField(field: "result.counts.missing", reason: "-5 is negative")) {
            try reply(start + [4] + Self.i64(10) + [0] + Self.i64(1) + Self.i64(1) + Self.i64(-5))
        }
        // Flags: bit 0 name, bit 1 detail, bits 2-3 the status; any other bit is refused.
        #expect(throws: JobFrameError.invalidField(field: "result.missing.flags", reason: "0x10 holds unknown bits or status")) {
            try reply(start + [4] + result + Self.u32(1) + Self.str("ab12") + [0x10])
        }
        #expect(throws: JobFrameError.invalidField(field: "result.missing.flags", reason: "0x80 holds unknown bits or status")) {
            try reply(start + [4] + result + Self.u32(1) + Self.str("ab12") + [0x80])
        }
        let symbolsOnly = try reply(start + [4] + result + Self.u32(1) + Self.str("ab12") + [0x0c])
        #expect(symbolsOnly.result?.missing == [MissingDebugFile(buildID: try BuildID("ab12"), imageName: nil, status: .symbolTableOnly)])
        // A worker from before the status sent 0 or 1: its files read as not found.
        let old = try reply(start + [4] + result + Self.u32(2) + Self.str("ab12") + [1] + Self.str("Demo") + Self.str("cd34") + [0])
        #expect(old.result?.missing == [
            MissingDebugFile(buildID: try BuildID("ab12"), imageName: "Demo", status: .notFound),
            MissingDebugFile(buildID: try BuildID("cd34"), imageName: nil, status: .notFound),
        ])
        let unreadable = try reply(start + [4] + result + Self.u32(1) + Self.str("ab12") + [0b0110] + Self.str("cut short"))
        #expect(unreadable.result?.missing == [MissingDebugFile(buildID: try BuildID("ab12"), imageName: nil, status: .unreadable, detail: "cut short")])
        #expect(throws: JobFrameError.invalidField(field: "message", reason: "not UTF-8")) { try reply(start + [1] + Self.u32(2) + [0xc3, 0x28]) }
        #expect(throws: JobFrameError.headerTrailingBytes(1)) { try reply(start + [0, 0]) }
        #expect(throws: JobFrameError.headerTruncated(field: "presence")) { try reply(start) }
        #expect(throws: JobFrameError.headerTruncated(field: "attachment length")) { try reply([0, 0]) }
        // Bytes attached to a reply that says it has no result.
        #expect(throws: JobFrameError.invalidField(field: "attachment length", reason: "2 bytes attached to a reply without a result")) {
            try reply(Self.u32(2) + [2] + Self.i64(1) + [0], attachment: [1, 2])
        }
        // The request's header too.
        let request = Self.u32(0) + Self.i64(1) + Self.i64(1) + Self.i64(1) + Self.u32(1) + [0xff]
        #expect(throws: JobFrameError.invalidField(field: "format", reason: "not UTF-8")) {
            try JobRequest(frame: Self.frame(tag: 0x11, header: request, attachment: []))
        }
        #expect(throws: JobFrameError.headerTrailingBytes(3)) {
            try JobRequest(frame: Self.frame(tag: 0x11, header: Self.u32(0) + Self.i64(1) + Self.i64(1) + Self.i64(1) + Self.str("") + [1, 2, 3], attachment: []))
        }
    }

    @Test func everyRefusalSaysWhy() {
        let errors: [JobFrameError] = [
            .tooShort(3), .jsonFrame, .unknownTag(0x42), .unsupportedVersion(kind: "job reply", version: 3),
            .wrongKind(expected: "job reply", found: "job request"), .headerPastEnd(declared: 9, available: 2),
            .headerTruncated(field: "format"), .invalidField(field: "kind", reason: "9 is not a reply kind"),
            .headerTrailingBytes(2), .attachmentLength(declared: 4, actual: 3),
        ]
        for error in errors { #expect(!error.description.isEmpty) }
        #expect(JobFrameError.jsonFrame.description.contains("release"))
        #expect(JobFrameError.headerTruncated(field: "format").description.contains("`format`"))
        #expect(JobFrameError.unknownTag(0x42).description == "unknown frame tag 0x42")
    }

    // MARK: Limits

    @Test func aFrameOverTheLimitIsNotEncoded() {
        // Data(count:) is zero pages: the limit is checked before a byte is copied.
        let request = JobRequest(jobId: 1, reportId: 1, attempt: 1, format: "ips", raw: Data(count: Framing.maxFrame))
        #expect(throws: FrameError.tooLarge(Framing.maxFrame + 5 + 35)) { try request.encodedFrame() }
    }

    @Test func aFailureFrameAlwaysFits() throws {
        let long = String(repeating: "é", count: 5000)
        let frame = JobReply.failureFrame(.permanentError, jobId: 4, message: long)
        #expect(frame.count <= Int(Framing.minimumMaxFrame))
        let back = try JobReply(frame: frame)
        #expect(back.kind == .permanentError && back.jobId == 4)
        // Cut at a character: 450 whole "é" of 2 bytes each.
        #expect(back.message == String(repeating: "é", count: 450))
    }

    @Test func aResultOverTheFrameLimitIsNotIntact() {
        let result = CompressedResult(
            compressed: Data(), size: Framing.maxFrame + 1, status: .complete, counts: ReportCounts(frames: 0, symbolicated: 0, missing: 0),
            missing: [])
        #expect(!result.isIntact)
    }

    // MARK: The remote result message

    @Test func remoteResultJSONIsJSONEncoders() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for reply in Self.replies.prefix(6) {
            let message = RemoteResult(lease: LeaseRef(jobId: reply.jobId, leaseToken: -7), reportId: 42, reply: try reply.encodedFrame())
            let mine = message.encodedJSON()
            #expect(mine == (try encoder.encode(message)), "\(String(decoding: mine, as: UTF8.self))")
            let back = try JSONDecoder().decode(RemoteResult.self, from: mine)
            #expect(back.lease == message.lease && back.reportId == 42)
            #expect(try JobReply(frame: back.reply) == reply)
        }
    }
}
