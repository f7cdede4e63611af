import ReportModel
import ReportQuery
import Testing

/// The search grammar (docs/search.md): what parses to which terms, and every refusal with its
/// column and message.
@Suite struct ReportQueryTests {
    func parse(_ text: String) throws -> [Term] { try ReportQuery.parse(text).terms }

    /// The error `text` is refused with.
    func refusal(_ text: String) -> ReportQueryError? {
        do {
            _ = try ReportQuery.parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func theIssuesExampleParsesToFourTerms() throws {
        let terms = try parse("os_version=17.2 device_model~iPhone15 version>=3.4 meta.channel=appstore")
        #expect(terms == [
            Term(field: .osVersion, op: .equal, value: .text("17.2"), column: 1),
            Term(field: .deviceModel, op: .contains, value: .text("iPhone15"), column: 17),
            Term(field: .version, op: .greaterOrEqual, value: .text("3.4"), column: 39),
            Term(field: .meta("channel"), op: .equal, value: .text("appstore"), column: 52),
        ])
    }

    @Test func emptyAndBlankExpressionsMatchEverything() throws {
        #expect(try parse("") == [])
        #expect(try parse("   ") == [])
        #expect(try parse("  kind=crash  ").count == 1)
    }

    @Test func everyOperatorAndAlias() throws {
        let ops: [(String, Operator)] = [
            ("=", .equal), ("!=", .notEqual), ("~", .contains), ("!~", .notContains), (">", .greater), (">=", .greaterOrEqual),
            ("<", .less), ("<=", .lessOrEqual),
        ]
        for (text, op) in ops {
            #expect(try parse("version\(text)1.2") == [Term(field: .version, op: op, value: .text("1.2"))], "\(text)")
        }
        #expect(try parse("os=17 model=iPad received>1h").map(\.field) == [.osVersion, .deviceModel, .time])
        #expect(try parse("app=A namespace=n user=u group=AbC0").map(\.field) == [.app, .namespace, .user, .group])
        #expect(try parse("group=AbC0").first?.value == .fingerprintPrefix("abc0"))
        #expect(try parse("kind!=lag").first?.value == .kind(.lag))
        // A bare value runs to the next space, operators and all.
        #expect(try parse("meta.url=https://x.example/a?b=c").first?.value == .text("https://x.example/a?b=c"))
    }

    @Test func quotedValuesKeepSpacesAndTakeTwoEscapes() throws {
        #expect(try parse(#"device_model="iPhone 15 \"Pro\" \\ max""#).first?.value == .text(#"iPhone 15 "Pro" \ max"#))
        #expect(try parse(#"app="a b" kind=crash"#).map(\.column) == [1, 11])
        #expect(try parse(#"app="ünï""#).first?.value == .text("ünï"))
        #expect(refusal(#"app="a\nb""#) == ReportQueryError(column: 8, .invalidEscape("n")))
        #expect(refusal(#"app="abc"#) == ReportQueryError(column: 5, .unterminatedQuote))
        #expect(refusal(#"app="abc\"#) == ReportQueryError(column: 5, .unterminatedQuote))
        #expect(refusal(#"app=ab"c""#) == ReportQueryError(column: 7, .quoteInBareValue))
        #expect(refusal(#"app="a"kind=crash"#) == ReportQueryError(column: 8, .expectedSpace))
    }

    @Test func timeValues() throws {
        #expect(try parse("time>7d").first?.value == .time(.ago(milliseconds: 7 * 86_400_000)))
        #expect(try parse("time>=30m").first?.value == .time(.ago(milliseconds: 30 * 60_000)))
        #expect(try parse("time<2026-11-28").first?.value == .time(.at(milliseconds: 1_795_824_000_000)))
        #expect(try parse("time<2026-11-28T01:00:00Z").first?.value == .time(.at(milliseconds: 1_795_827_600_000)))
        #expect(try parse("time<2026-11-28T01:00:00.250+01:00").first?.value == .time(.at(milliseconds: 1_795_824_000_250)))
        #expect(QueryTime.ago(milliseconds: 1000).milliseconds(now: 5000) == 4000)
        #expect(QueryTime.ago(milliseconds: Int64.max).milliseconds(now: -5) == Int64.min)
        #expect(try parse("time<9999-12-31").first?.value == .time(.at(milliseconds: 253_402_214_400_000)))
        for bad in ["yesterday", "7", "d", "-7d", "99999999999999999d", "2026-13-01", "2026-11-28T01:00:00"] {
            guard case .invalidValue(field: "time", value: bad, _)? = refusal("time>\(bad)")?.problem else {
                Issue.record("time>\(bad): \(String(describing: refusal("time>\(bad)")))")
                continue
            }
        }
    }

    @Test func perFieldOperatorRules() throws {
        #expect(refusal("kind~crash") == ReportQueryError(column: 5, .operatorNotAllowed(.contains, field: "kind", allowed: [.equal, .notEqual])))
        #expect(refusal("time=7d")?.problem == .operatorNotAllowed(.equal, field: "time", allowed: [.greater, .greaterOrEqual, .less, .lessOrEqual]))
        #expect(refusal("app>b")?.problem == .operatorNotAllowed(.greater, field: "app", allowed: [.equal, .notEqual, .contains, .notContains]))
        #expect(refusal("meta.x<=1")?.problem == .operatorNotAllowed(.lessOrEqual, field: "meta.x", allowed: [.equal, .notEqual, .contains, .notContains]))
        #expect(refusal("group~ab")?.column == 6)
        #expect(refusal("user>u")?.column == 5)
        #expect(try parse("os_version>=17.2").first?.op == .greaterOrEqual)
    }

    @Test func valuesAreCheckedAgainstTheirField() throws {
        #expect(refusal("kind=hang") == ReportQueryError(column: 6, .invalidValue(field: "kind", value: "hang", expected: "crash or lag")))
        #expect(refusal("group=xyz")?.problem == .invalidValue(field: "group", value: "xyz", expected: "a fingerprint or a prefix of it (hex digits)"))
        #expect(refusal("group=" + String(repeating: "a", count: 65))?.column == 7)
        #expect(try parse("group=" + String(repeating: "a", count: 64)).count == 1)
        #expect(refusal(#"app="""#)?.problem == .invalidValue(field: "app", value: "", expected: "a value that is not empty"))
    }

    @Test func fieldErrorsNameTheColumnAndTheFields() throws {
        let error = try #require(refusal("kind=crash osversion=17.2"))
        #expect(error == ReportQueryError(column: 12, .unknownField("osversion")))
        #expect(error.description == "where: column 12: unknown field 'osversion' (fields: app, version, os_version, device_model, kind, group, state, namespace, user, time, meta.KEY)")
        #expect(refusal("=x") == ReportQueryError(column: 1, .expectedField))
        #expect(refusal("kind=crash \"app\"=x")?.problem == .expectedField)
        #expect(refusal("app") == ReportQueryError(column: 4, .expectedOperator(field: "app")))
        #expect(refusal("app x")?.description == "where: column 4: expected an operator after 'app' (= != ~ !~ > >= < <=)")
        #expect(refusal("app=") == ReportQueryError(column: 5, .expectedValue(field: "app")))
        #expect(refusal("app= kind=crash") == ReportQueryError(column: 5, .expectedValue(field: "app")))
        #expect(refusal("appé=x")?.column == 4)
    }

    @Test func metaKeys() throws {
        #expect(try parse("meta.a.b-c_D9=1").first?.field == .meta("a.b-c_D9"))
        #expect(try parse("meta." + String(repeating: "k", count: 64) + "=1").count == 1)
        #expect(refusal("meta." + String(repeating: "k", count: 65) + "=1") == ReportQueryError(column: 6, .invalidMetaKey(String(repeating: "k", count: 65))))
        #expect(refusal("meta.=1") == ReportQueryError(column: 6, .invalidMetaKey("")))
        #expect(refusal("meta.$x=1")?.problem == .invalidMetaKey(""))
        #expect(refusal(#"meta."a"=1"#)?.problem == .invalidMetaKey(""))
    }

    @Test func bounds() throws {
        let twenty = (0..<20).map { "app=a\($0)" }.joined(separator: " ")
        #expect(try parse(twenty).count == 20)
        #expect(refusal(twenty + " kind=lag") == ReportQueryError(column: twenty.count + 2, .tooManyTerms))
        let value = String(repeating: "v", count: 256)
        #expect(try parse("app=" + value).count == 1)
        #expect(refusal("app=" + value + "v") == ReportQueryError(column: 5, .valueTooLong))
        // 256 bytes, not characters: 129 two-byte characters are too many.
        #expect(refusal(#"app=""# + String(repeating: "é", count: 129) + #"""#)?.problem == .valueTooLong)
        let long = "app=" + String(repeating: "x", count: 1_997)
        #expect(refusal(long)?.problem == .expressionTooLong(bytes: 2_001))
        #expect(refusal(long)?.column == 1)
        #expect(try parse(String(repeating: " ", count: 1_990) + "kind=crash").count == 1)
    }

    @Test func controlCharactersAreRefusedWherever() throws {
        for c in ["\u{0}", "\t", "\n", "\u{1b}", "\u{7f}", "\u{85}", "\u{9b}"] {
            #expect(refusal("app=\"a\(c)b\"") == ReportQueryError(column: 7, .controlCharacter), "\(c.unicodeScalars.first!.value)")
            #expect(refusal("kind=crash\(c)app=a")?.problem == .controlCharacter)
        }
        #expect(refusal("app=\"\u{1b}[31m\"")?.description == "where: column 6: control characters are not allowed")
    }
}

/// Facet keys: the attributes a report has one value of, aliases included.
@Suite struct FacetKeyTests {
    @Test func keys() throws {
        #expect(try FacetKey("os").field == .osVersion)
        #expect(try FacetKey("device_model").field == .deviceModel)
        #expect(try FacetKey("meta.channel").field == .meta("channel"))
        #expect(try FacetKey("kind").description == "kind")
        for bad in ["time", "user", "group", "meta.", "meta.a b", "", "osversion"] {
            #expect(throws: FacetKeyError.self, "\(bad)") { try FacetKey(bad) }
        }
        #expect(FacetKeyError(key: "x\u{1b}").description.hasPrefix("facet key is not one of os_version"))
        #expect(FacetKeyError(key: "osversion").description.hasPrefix("facet key 'osversion' is not one of"))
    }
}
