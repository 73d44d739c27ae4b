import BulwarkTestHelpers
import Foundation
import Testing

@testable import BulwarkPolicy

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A jar on a test clock.
private func makeJar(_ clock: ManualClock = ManualClock(), limits: CookieJar.Limits = .init()) -> CookieJar {
    CookieJar(limits: limits, now: { clock.now })
}

@Suite("RFC 6265 cookie jar")
struct CookieJarTests {
    // MARK: - Dates

    struct DateCase: Sendable, CustomTestStringConvertible {
        let text: String
        let expected: String?  // ISO 8601, or nil when the date must be refused
        var testDescription: String { self.text }
    }

    @Test(
        "cookie dates (RFC 6265 5.1.1)",
        arguments: [
            DateCase(text: "Wed, 21 Oct 2015 07:28:00 GMT", expected: "2015-10-21T07:28:00Z"),
            DateCase(text: "Wednesday, 21-Oct-15 07:28:00 GMT", expected: "2015-10-21T07:28:00Z"),
            DateCase(text: "Wed Oct 21 07:28:00 2015", expected: "2015-10-21T07:28:00Z"),
            DateCase(text: "21 oct 1999 7:8:9", expected: "1999-10-21T07:08:09Z"),
            DateCase(text: "Thu, 01 Jan 70 00:00:00 GMT", expected: "1970-01-01T00:00:00Z"),
            DateCase(text: "Mon, 01 Jan 69 00:00:00 GMT", expected: "2069-01-01T00:00:00Z"),
            DateCase(text: "Tue, 29 Feb 2028 12:00:00 GMT", expected: "2028-02-29T12:00:00Z"),
            DateCase(text: "Sat, 31 Dec 9999 23:59:59 GMT", expected: "9999-12-31T23:59:59Z"),
            DateCase(text: "Thu, 29 Feb 2029 12:00:00 GMT", expected: nil),  // not a leap year
            DateCase(text: "Wed, 31 Apr 2015 07:28:00 GMT", expected: nil),
            DateCase(text: "Wed, 21 Oct 1600 07:28:00 GMT", expected: nil),  // before 1601
            DateCase(text: "Wed, 21 Oct 2015 24:00:00 GMT", expected: nil),
            DateCase(text: "Wed, 21 Oct 2015 07:60:00 GMT", expected: nil),
            DateCase(text: "Wed, 32 Oct 2015 07:28:00 GMT", expected: nil),
            DateCase(text: "Wed, 21 Foo 2015 07:28:00 GMT", expected: nil),
            DateCase(text: "Wed, 21 Oct 2015", expected: nil),  // no time
            DateCase(text: "", expected: nil),
            DateCase(text: "tomorrow", expected: nil),
        ]
    )
    func dates(_ testCase: DateCase) throws {
        let parsed = CookieDate.parse(testCase.text[...])
        guard let expected = testCase.expected else {
            #expect(parsed == nil)
            return
        }
        let date = try #require(parsed)
        #expect(ISO8601DateFormatter().string(from: date) == expected)
    }

    // MARK: - Storage model

    @Test("a host-only cookie goes back to its host only; the default path is the request's directory")
    func hostOnlyAndDefaultPath() {
        let jar = makeJar()
        #expect(
            jar.store(setCookieFields: ["sid=abc"], from: url("https://api.example.com/v1/login")) == [
                CookieJar.Outcome.stored(name: "sid")
            ]
        )
        let cookie = jar.allCookies[0]
        #expect(cookie.isHostOnly)
        #expect(cookie.domain == "api.example.com")
        #expect(cookie.path == "/v1")
        #expect(cookie.expiresAt == nil)
        #expect(jar.cookieHeaderValue(for: url("https://api.example.com/v1/me")) == "sid=abc")
        #expect(jar.cookieHeaderValue(for: url("https://api.example.com/v1")) == "sid=abc")
        #expect(jar.cookieHeaderValue(for: url("https://api.example.com/v10")) == nil)
        #expect(jar.cookieHeaderValue(for: url("https://api.example.com/")) == nil)
        #expect(jar.cookieHeaderValue(for: url("https://www.api.example.com/v1/me")) == nil)
        #expect(jar.cookieHeaderValue(for: url("https://example.com/v1/me")) == nil)
        #expect(
            jar.cookieHeaderValue(for: url("https://API.Example.COM./v1/x")) == "sid=abc",
            "hosts compare canonically"
        )
    }

    @Test("a Domain cookie goes to the domain and its subdomains")
    func domainCookie() {
        let jar = makeJar()
        jar.store(setCookieFields: ["sid=abc; Domain=.Example.com; Path=/"], from: url("https://api.example.com/login"))
        let cookie = jar.allCookies[0]
        #expect(!cookie.isHostOnly)
        #expect(cookie.domain == "example.com")
        for target in ["https://example.com/", "https://api.example.com/x", "https://a.b.example.com/"] {
            #expect(jar.cookieHeaderValue(for: url(target)) == "sid=abc", "\(target)")
        }
        for target in ["https://notexample.com/", "https://example.com.evil.test/", "https://com/"] {
            #expect(jar.cookieHeaderValue(for: url(target)) == nil, "\(target)")
        }
    }

    struct RefusedCase: Sendable, CustomTestStringConvertible {
        let field: String
        let from: String
        let reason: CookieJar.IgnoreReason
        var testDescription: String { "\(self.field) from \(self.from)" }
    }

    @Test(
        "fields the jar ignores, and why",
        arguments: [
            RefusedCase(field: "sid=abc; Domain=evil.com", from: "https://api.example.com/", reason: .domainMismatch),
            RefusedCase(
                field: "sid=abc; Domain=api.example.com.evil",
                from: "https://api.example.com/",
                reason: .domainMismatch
            ),
            RefusedCase(
                field: "sid=abc; Domain=www.api.example.com",
                from: "https://api.example.com/",
                reason: .domainMismatch
            ),
            RefusedCase(field: "sid=abc; Domain=com", from: "https://api.example.com/", reason: .topLevelDomain),
            RefusedCase(field: "sid=abc; Domain=0.0.1", from: "https://127.0.0.1/", reason: .domainMismatch),
            RefusedCase(field: "sid=abc; Domain=127.0.0.2", from: "https://127.0.0.1/", reason: .domainMismatch),
            RefusedCase(field: "sid=abc; Secure", from: "http://api.example.com/", reason: .secureOverInsecureOrigin),
            RefusedCase(field: "__Secure-sid=abc", from: "https://api.example.com/", reason: .prefixViolation),
            RefusedCase(field: "__Host-sid=abc; Secure", from: "https://api.example.com/a/b", reason: .prefixViolation),
            RefusedCase(
                field: "__Host-sid=abc; Secure; Path=/; Domain=example.com",
                from: "https://api.example.com/",
                reason: .prefixViolation
            ),
            RefusedCase(field: "noequals", from: "https://api.example.com/", reason: .malformed),
            RefusedCase(field: "=value", from: "https://api.example.com/", reason: .malformed),
            RefusedCase(field: "  ; Path=/", from: "https://api.example.com/", reason: .malformed),
            RefusedCase(field: "sid=a\u{0}b", from: "https://api.example.com/", reason: .controlCharacter),
            RefusedCase(field: "sid=a\r\nSet-Cookie: x=y", from: "https://api.example.com/", reason: .controlCharacter),
            RefusedCase(
                field: "sid=" + String(repeating: "x", count: 4094),
                from: "https://api.example.com/",
                reason: .tooLarge
            ),
        ]
    )
    func refused(_ testCase: RefusedCase) {
        let jar = makeJar()
        let outcome = jar.store(setCookieFields: [testCase.field], from: url(testCase.from))
        #expect(outcome.count == 1)
        if case .ignored(_, let reason) = outcome[0] {
            #expect(reason == testCase.reason)
        } else {
            Issue.record("stored: \(outcome)")
        }
        #expect(jar.count == 0)
    }

    @Test("accepted prefixes, IP hosts and single-label hosts")
    func acceptedEdgeCases() {
        let jar = makeJar()
        #expect(
            jar.store(setCookieFields: ["__Host-a=1; Secure; Path=/"], from: url("https://h.example/")) == [
                CookieJar.Outcome.stored(name: "__Host-a")
            ]
        )
        #expect(
            jar.store(setCookieFields: ["__Secure-b=2; Secure; Domain=h.example"], from: url("https://h.example/")) == [
                CookieJar.Outcome.stored(name: "__Secure-b")
            ]
        )
        #expect(
            jar.store(setCookieFields: ["c=3; Domain=127.0.0.1"], from: url("https://127.0.0.1/")) == [
                CookieJar.Outcome.stored(name: "c")
            ]
        )
        #expect(
            jar.store(setCookieFields: ["d=4; Domain=localhost"], from: url("https://localhost/")) == [
                CookieJar.Outcome.stored(name: "d")
            ]
        )
        #expect(jar.allCookies.first { $0.name == "c" }?.isHostOnly == true, "an IP address is host-only")
        #expect(jar.allCookies.first { $0.name == "d" }?.isHostOnly == true, "a single label is host-only")
        #expect(jar.cookieHeaderValue(for: url("https://127.0.0.1/")) == "c=3")
        #expect(jar.cookieHeaderValue(for: url("https://1.127.0.0.1/")) == nil)
    }

    @Test("Max-Age wins over Expires; Max-Age=0 and a past Expires delete; expired cookies are not sent")
    func expiry() {
        let clock = ManualClock()
        let jar = makeJar(clock)
        let site = url("https://example.com/")
        jar.store(setCookieFields: ["a=1; Max-Age=60; Expires=Wed, 21 Oct 2015 07:28:00 GMT"], from: site)
        jar.store(setCookieFields: ["b=2; Expires=Wed, 21 Oct 2015 07:28:00 GMT; Max-Age=120"], from: site)
        jar.store(setCookieFields: ["c=3; Expires=Fri, 01 Jan 2100 00:00:00 GMT"], from: site)
        jar.store(setCookieFields: ["d=4; Max-Age=junk"], from: site)
        #expect(jar.allCookies.first { $0.name == "a" }?.expiresAt == clock.now + 60)
        #expect(jar.allCookies.first { $0.name == "b" }?.expiresAt == clock.now + 120)
        #expect(
            jar.allCookies.first { $0.name == "c" }?.expiresAt == clock.now + CookieJar.maximumLifetime,
            "400-day cap"
        )
        #expect(jar.allCookies.first { $0.name == "d" }?.expiresAt == nil, "a malformed Max-Age is ignored")
        #expect(Set(jar.cookies(for: site).map(\.name)) == ["a", "b", "c", "d"])
        clock.advance(by: 61)
        #expect(Set(jar.cookies(for: site).map(\.name)) == ["b", "c", "d"])
        #expect(jar.store(setCookieFields: ["b=gone; Max-Age=0"], from: site) == [CookieJar.Outcome.deleted(name: "b")])
        #expect(
            jar.store(setCookieFields: ["c=gone; Expires=Thu, 01 Jan 1970 00:00:00 GMT"], from: site) == [
                CookieJar.Outcome.deleted(name: "c")
            ]
        )
        #expect(
            jar.store(setCookieFields: ["d=gone; Max-Age=-5"], from: site) == [CookieJar.Outcome.deleted(name: "d")]
        )
        #expect(jar.cookieHeaderValue(for: site) == nil)
        #expect(jar.count == 0)
    }

    @Test("same name, domain and path replaces the value and keeps the creation time; order is by path, then age")
    func replacementAndOrder() {
        let clock = ManualClock()
        let jar = makeJar(clock)
        let site = url("https://example.com/a/b/c")
        jar.store(setCookieFields: ["x=1; Path=/"], from: site)
        clock.advance(by: 1)
        jar.store(setCookieFields: ["y=2; Path=/"], from: site)
        clock.advance(by: 1)
        jar.store(setCookieFields: ["z=3; Path=/a/b"], from: site)
        let created = jar.allCookies.first { $0.name == "x" }!.createdAt
        let old = jar.allCookies.first { $0.name == "x" }!
        clock.advance(by: 1)
        jar.store(setCookieFields: ["x=4; Path=/"], from: site)
        #expect(old.isWiped, "the replaced value is zeroized")
        #expect(jar.count == 3)
        #expect(jar.allCookies.first { $0.name == "x" }!.createdAt == created)
        #expect(jar.cookieHeaderValue(for: site) == "z=3; x=4; y=2")
        jar.store(setCookieFields: ["x=5; Path=/a"], from: site)
        #expect(jar.count == 4, "another path is another cookie")
    }

    @Test("Secure cookies go over https only, and plain http cannot replace them")
    func secureCookies() {
        let jar = makeJar()
        jar.store(setCookieFields: ["sid=s; Secure; Path=/"], from: url("https://example.com/"))
        #expect(jar.cookieHeaderValue(for: url("https://example.com/")) == "sid=s")
        #expect(jar.cookieHeaderValue(for: url("http://example.com/")) == nil)
        let outcome = jar.store(setCookieFields: ["sid=plain; Path=/"], from: url("http://example.com/"))
        #expect(outcome == [CookieJar.Outcome.ignored(name: "sid", reason: .wouldReplaceSecureCookie)])
        #expect(jar.cookieHeaderValue(for: url("https://example.com/")) == "sid=s")
        #expect(
            jar.store(setCookieFields: ["other=p"], from: url("http://example.com/")) == [
                CookieJar.Outcome.stored(name: "other")
            ]
        )
    }

    @Test("attributes are case-insensitive; a bad Path falls back to the default; values keep quotes and commas")
    func parsingDetails() {
        let jar = makeJar()
        let site = url("https://example.com/dir/page")
        jar.store(setCookieFields: ["  a = 1 ; PATH=/ ; sEcUrE ; HTTPONLY ; samesite=strict"], from: site)
        jar.store(setCookieFields: ["b=\"quoted, with comma\"; Path=relative"], from: site)
        jar.store(setCookieFields: ["c=; Path="], from: site)
        let a = jar.allCookies.first { $0.name == "a" }!
        #expect(a.path == "/" && a.isSecure && a.isHTTPOnly && a.sameSite == .strict)
        let b = jar.allCookies.first { $0.name == "b" }!
        #expect(b.path == "/dir")
        #expect(b.withUnsafeValueBytes { String(decoding: $0, as: UTF8.self) } == "\"quoted, with comma\"")
        #expect(jar.allCookies.first { $0.name == "c" }?.path == "/dir", "an empty value is allowed")
        #expect(jar.cookieHeaderValue(for: url("https://example.com/dir/x")) == "b=\"quoted, with comma\"; c=; a=1")
    }

    @Test("limits: per domain and in all, expired ones first, then the least recently used")
    func limits() {
        let clock = ManualClock()
        let jar = makeJar(clock, limits: .init(perDomain: 3, total: 5))
        let a = url("https://a.example/")
        for index in 1...3 {
            jar.store(setCookieFields: ["a\(index)=v; Path=/\(index)"], from: a)
            clock.advance(by: 1)
        }
        // Sending touches a cookie: a1 is now the least recently used, though the oldest is a1 as well; touch a1
        // and a3 so that a2 must go.
        _ = jar.cookieHeaderValue(for: url("https://a.example/1"))
        _ = jar.cookieHeaderValue(for: url("https://a.example/3"))
        clock.advance(by: 1)
        jar.store(setCookieFields: ["a4=v"], from: a)
        #expect(Set(jar.allCookies.map(\.name)) == ["a1", "a3", "a4"])
        jar.store(setCookieFields: ["short=v; Max-Age=1"], from: url("https://b.example/"))
        jar.store(setCookieFields: ["b1=v"], from: url("https://b.example/"))
        clock.advance(by: 5)
        jar.store(setCookieFields: ["c1=v"], from: url("https://c.example/"))
        #expect(jar.count == 5)
        #expect(!jar.allCookies.contains { $0.name == "short" }, "an expired cookie goes first")
    }

    @Test("removeAll wipes every value; nothing is sent afterwards")
    func removeAllWipes() {
        let jar = makeJar()
        jar.store(setCookieFields: ["a=1", "b=2; Domain=example.com"], from: url("https://www.example.com/"))
        let cookies = jar.allCookies
        #expect(jar.removeAll() == 2)
        #expect(cookies.allSatisfy { $0.isWiped })
        #expect(jar.count == 0)
        #expect(jar.cookieHeaderValue(for: url("https://www.example.com/")) == nil)
    }

    // MARK: - Sessions (issue 16, defect 4)

    @Test("a sign-out between the epoch check and the store lets no cookie in (the check and the store are one step)")
    func signOutBetweenCheckAndStore() {
        // The jar reads its clock after it captured the caller's epoch and before it stores: a clock that signs out
        // the first time it is read puts a sign-out exactly into the window a two-lock implementation leaves open.
        let signOut = SignOutOnFirstRead()
        let jar = CookieJar(now: {
            signOut.fire()
            return Date(timeIntervalSince1970: 1_700_000_000)
        })
        signOut.jar = jar
        let epoch = jar.epoch
        jar.store(setCookieFields: ["sid=old-session; Path=/"], from: url("https://example.com/"), epoch: epoch)
        #expect(signOut.fired)
        #expect(jar.count == 0, "a cookie of the old session was stored after sign-out")
        #expect(jar.cookieHeaderValue(for: url("https://example.com/")) == nil)
    }

    @Test("epochs: removeAll starts a new one; a stale epoch stores and deletes nothing and says so per field")
    func epochs() {
        let jar = makeJar()
        let site = url("https://example.com/")
        #expect(jar.epoch == 0)
        jar.store(setCookieFields: ["keep=1; Path=/"], from: site, epoch: jar.epoch)
        let old = jar.epoch
        #expect(jar.removeAll() == 1)
        #expect(jar.epoch == old + 1)
        jar.store(setCookieFields: ["current=1; Path=/"], from: site, epoch: jar.epoch)
        let stale = jar.store(setCookieFields: ["sid=old", "noequals", "current=; Max-Age=0"], from: site, epoch: old)
        #expect(
            stale == [
                .ignored(name: "sid", reason: .sessionEnded), .ignored(name: nil, reason: .malformed),
                .ignored(name: "current", reason: .sessionEnded),
            ]
        )
        #expect(jar.allCookies.map(\.name) == ["current"], "a stale response neither stores nor deletes")
        #expect(jar.store(setCookieFields: ["sid=new"], from: site, epoch: jar.epoch) == [.stored(name: "sid")])
        // Without an epoch, a store is not tied to a session.
        #expect(jar.store(setCookieFields: ["plain=1"], from: site) == [.stored(name: "plain")])
        #expect(CookieJar.IgnoreReason.sessionEnded.description == "session_ended")
    }

    @Test("concurrent stores and sign-outs: after removeAll returns, no store of an earlier epoch lands")
    func concurrentSignOuts() async {
        let jar = makeJar()
        let site = url("https://example.com/")
        for round in 0..<50 {
            let epoch = jar.epoch
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<4 {
                    group.addTask { jar.store(setCookieFields: ["c\(index)=\(round)"], from: site, epoch: epoch) }
                }
                group.addTask { jar.removeAll() }
            }
            // A store that ran before the sign-out was removed by it; one that ran after found its epoch passed.
            #expect(jar.count == 0, "round \(round)")
        }
    }

    @Test("the __Secure- and __Host- prefixes are matched ignoring case (RFC 6265bis)")
    func prefixesIgnoreCase() {
        let jar = makeJar()
        let site = url("https://api.example.com/a/b")
        let fields = [
            "__SECURE-sid=1", "__secure-sid=2", "__host-sid=3; Secure",
            "__HoSt-sid=4; Secure; Path=/; Domain=example.com",
        ]
        for field in fields {
            let outcome = jar.store(setCookieFields: [field], from: site)
            #expect(outcome.count == 1)
            if case .ignored(_, .prefixViolation) = outcome.first {
            } else {
                Issue.record("\(field): \(outcome)")
            }
        }
        #expect(jar.count == 0)
        let accepted = jar.store(setCookieFields: ["__HOST-ok=1; Secure; Path=/"], from: site)
        #expect(accepted == [CookieJar.Outcome.stored(name: "__HOST-ok")])
    }

    @Test("the jar and its cookies never print a value")
    func redaction() {
        let jar = makeJar()
        jar.store(
            setCookieFields: ["session=TOPSECRETVALUE; Domain=example.com; Path=/; Secure"],
            from: url("https://example.com/")
        )
        let cookie = jar.allCookies[0]
        let texts = [
            String(describing: jar), String(reflecting: jar), "\(cookie)", String(reflecting: cookie), dumped(jar),
            dumped(cookie), dumped(jar.allCookies),
            String(describing: Mirror(reflecting: cookie).children.map(\.value)),
        ]
        for text in texts {
            #expect(!text.contains("TOPSECRETVALUE"), "\(text)")
        }
        #expect(String(describing: cookie).contains("session=<redacted>"))
        #expect(String(describing: jar) == "CookieJar(1 cookies: session for .example.com)")
    }

    #if canImport(FoundationNetworking)
    /// Why the jar does not use FoundationNetworking's `HTTPCookie` on Linux. If this test starts failing, the
    /// platform changed: re-check whether its parser can replace the jar's.
    @Test("FoundationNetworking's HTTPCookie deviates from RFC 6265 where the jar does not")
    func platformParserDeviations() {
        let site = url("https://api.example.com/v1/login")
        func parse(_ field: String) -> [HTTPCookie] {
            HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": field], for: site)
        }
        // Max-Age is ignored: the cookie gets no expiry, so Max-Age=0 cannot delete it.
        #expect(parse("sid=abc; Max-Age=0").first?.expiresDate == nil)
        // The default path is "/" rather than the request's directory "/v1".
        #expect(parse("sid=abc").first?.path == "/")
        // A Domain that does not match the request's host, and a bare top-level domain, are accepted.
        #expect(parse("sid=abc; Domain=evil.com").first?.domain == ".evil.com")
        #expect(parse("sid=abc; Domain=com").first?.domain == ".com")

        let jar = makeJar()
        jar.store(
            setCookieFields: ["sid=abc; Max-Age=0", "p=1", "e=1; Domain=evil.com", "t=1; Domain=com"],
            from: site
        )
        #expect(jar.allCookies.map(\.name) == ["p"])
        #expect(jar.allCookies.first?.path == "/v1")
    }
    #endif
}

/// Signs a jar out the first time ``fire()`` is called (from the jar's clock).
private final class SignOutOnFirstRead: @unchecked Sendable {
    private let lock = NSLock()
    private var done = false
    weak var jar: CookieJar?

    var fired: Bool { self.lock.withLock { self.done } }

    func fire() {
        let first = self.lock.withLock { () -> Bool in
            defer { self.done = true }
            return !self.done
        }
        if first { self.jar?.removeAll() }
    }
}
