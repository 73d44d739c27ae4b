import BulwarkPolicy
import Foundation
import Testing

/// One adversarial `Location` and what the policy must do with it.
struct LocationCase: Sendable, CustomTestStringConvertible {
    enum Expected: Sendable, Equatable {
        /// Followed to exactly this URL.
        case follow(String)
        /// Refused with this reason label.
        case refuse(String)
    }

    let name: String
    let location: String
    let expected: Expected

    init(_ name: String, _ location: String, _ expected: Expected) {
        self.name = name
        self.location = location
        self.expected = expected
    }

    var testDescription: String { self.name }
}

/// The policy every case runs under: the request went to `https://api.example.com/v1/login` (302, GET, with an
/// `Authorization` header); `*.example.com` and `partner.example.org` are allowed, and port 8443.
enum LocationTable {
    static let from = "https://api.example.com/v1/login"

    static var policy: RedirectPolicy {
        var policy = try! RedirectPolicy(allowing: ["*.example.com", "partner.example.org"])
        policy.allowedPorts = [8443]
        return policy
    }

    static func decide(_ location: String, status: Int = 302) -> RedirectDecision {
        let request = RedirectRequest(
            method: "GET",
            url: URL(string: Self.from)!,
            headers: [HeaderField(name: "Authorization", value: "Bearer secret-token")]
        )
        let chain = RedirectChain(startingAt: request.url)
        return Self.policy.decide(RedirectHop(request: request, status: status, locations: [location], chain: chain))
    }

    static let overlong = "/" + String(repeating: "a", count: 8192)
    static let longest = "/" + String(repeating: "a", count: 8191)

    static let cases: [LocationCase] = [
        // Ordinary references, resolved against the request URL.
        LocationCase(
            "absolute, same origin",
            "https://api.example.com/v1/home",
            .follow("https://api.example.com/v1/home")
        ),
        LocationCase("absolute path", "/v1/home", .follow("https://api.example.com/v1/home")),
        LocationCase("relative path", "home", .follow("https://api.example.com/v1/home")),
        LocationCase("dot segments", "../v2/./x/../y", .follow("https://api.example.com/v2/y")),
        LocationCase("dot segments above the root", "/../../etc/passwd", .follow("https://api.example.com/etc/passwd")),
        LocationCase("query only", "?page=2", .follow("https://api.example.com/v1/login?page=2")),
        LocationCase("field whitespace trimmed", " \t/v1/home \t", .follow("https://api.example.com/v1/home")),
        LocationCase(
            "allowlisted subdomain",
            "https://cdn.example.com/a?b=c",
            .follow("https://cdn.example.com/a?b=c")
        ),
        LocationCase(
            "allowlisted other domain",
            "https://partner.example.org/",
            .follow("https://partner.example.org/")
        ),
        LocationCase("scheme-relative to allowed host", "//cdn.example.com/x", .follow("https://cdn.example.com/x")),
        LocationCase("upper-case scheme", "HTTPS://cdn.example.com/x", .follow("https://cdn.example.com/x")),
        LocationCase("upper-case host", "https://API.EXAMPLE.COM/v1/home", .follow("https://api.example.com/v1/home")),
        LocationCase("trailing dot", "https://api.example.com./v1/home", .follow("https://api.example.com/v1/home")),
        LocationCase(
            "explicit default port",
            "https://api.example.com:443/v1/home",
            .follow("https://api.example.com/v1/home")
        ),
        LocationCase("listed port", "https://api.example.com:8443/x", .follow("https://api.example.com:8443/x")),
        LocationCase("space encoded", "/a b", .follow("https://api.example.com/a%20b")),
        LocationCase("non-ASCII path encoded", "/caf\u{E9}", .follow("https://api.example.com/caf%C3%A9")),
        LocationCase(
            "encoded CRLF stays encoded",
            "/x%0d%0aSet-Cookie:%20a=b",
            .follow("https://api.example.com/x%0d%0aSet-Cookie:%20a=b")
        ),
        LocationCase("encoded dots stay encoded", "/%2e%2e/admin", .follow("https://api.example.com/%2e%2e/admin")),
        LocationCase("longest accepted (8 KiB)", Self.longest, .follow("https://api.example.com" + Self.longest)),

        // Loops: the same URL, ignoring the fragment.
        LocationCase("fragment only", "#section", .refuse("loop")),
        LocationCase("same URL", "https://api.example.com/v1/login", .refuse("loop")),
        LocationCase("same URL, other fragment", "https://api.example.com/v1/login#top", .refuse("loop")),
        LocationCase("same URL, other spelling", "HTTPS://API.example.com.:443/v1/./login", .refuse("loop")),

        // Hosts outside the allowlist.
        LocationCase("other host", "https://evil.com/?token=secret", .refuse("host_not_allowed")),
        LocationCase("scheme-relative //evil", "//evil.com/", .refuse("host_not_allowed")),
        LocationCase("suffix confusion", "https://api.example.com.evil.com/", .refuse("host_not_allowed")),
        LocationCase("two labels under a one-label wildcard", "https://a.b.example.com/", .refuse("host_not_allowed")),
        LocationCase("apex under a one-label wildcard", "https://example.com/", .refuse("host_not_allowed")),
        LocationCase("fragment hides the real host", "https://evil.com#@api.example.com/", .refuse("host_not_allowed")),
        LocationCase("query hides the real host", "https://evil.com?@api.example.com/", .refuse("host_not_allowed")),
        LocationCase("IDN homograph in punycode", "https://xn--80ak6aa92e.com/", .refuse("host_not_allowed")),
        LocationCase("IPv4 dotted quad", "https://127.0.0.1/", .refuse("host_not_allowed")),
        LocationCase("IPv6 loopback", "https://[::1]/", .refuse("host_not_allowed")),
        LocationCase("IPv4-mapped IPv6", "https://[::ffff:127.0.0.1]/", .refuse("host_not_allowed")),
        LocationCase("listed port, other host", "https://evil.com:8443/", .refuse("host_not_allowed")),

        // User information: never followed, whatever it tries to look like.
        LocationCase("userinfo confusion", "https://api.example.com@evil.com/", .refuse("userinfo")),
        LocationCase("user and password", "https://user:secret@api.example.com/", .refuse("userinfo")),
        LocationCase("port-looking userinfo", "https://evil.com:443@api.example.com/", .refuse("userinfo")),
        LocationCase("encoded slash before @", "https://api.example.com%2f@evil.com/", .refuse("userinfo")),
        LocationCase("scheme-relative userinfo", "//api.example.com@evil.com", .refuse("userinfo")),

        // Backslashes (browsers read them as slashes).
        LocationCase("backslash before @", "https://evil.com\\@api.example.com/", .refuse("backslash")),
        LocationCase("slash-backslash", "/\\evil.com", .refuse("backslash")),
        LocationCase("two backslashes", "\\\\evil.com", .refuse("backslash")),
        LocationCase("https colon backslashes", "https:\\\\evil.com", .refuse("backslash")),

        // Schemes.
        LocationCase("https: without //", "https:evil.com", .refuse("scheme_without_authority")),
        LocationCase("https:/ with one slash", "https:/evil.com", .refuse("scheme_without_authority")),
        LocationCase("http: without //", "http:evil.com", .refuse("scheme_without_authority")),
        LocationCase("javascript:", "javascript:alert(document.cookie)", .refuse("scheme_not_allowed")),
        LocationCase("JavaScript: mixed case", "JaVaScRiPt:alert(1)", .refuse("scheme_not_allowed")),
        LocationCase("data:", "data:text/html,<script>alert(1)</script>", .refuse("scheme_not_allowed")),
        LocationCase("file:", "file:///etc/passwd", .refuse("scheme_not_allowed")),
        LocationCase("ftp:", "ftp://api.example.com/", .refuse("scheme_not_allowed")),
        LocationCase("host:port read as a scheme", "localhost:8080/x", .refuse("scheme_not_allowed")),
        LocationCase("downgrade, same host", "http://api.example.com/v1/home", .refuse("scheme_downgrade")),
        LocationCase("downgrade, other host", "http://evil.com/", .refuse("scheme_downgrade")),

        // Hosts that are not host names.
        LocationCase("percent-encoded host byte", "https://ev%69l.com/", .refuse("percent_in_host")),
        LocationCase("percent-encoded dot", "https://api%2eexample.com/", .refuse("percent_in_host")),
        LocationCase("IPv6 zone", "https://[fe80::1%25eth0]/", .refuse("percent_in_host")),
        LocationCase("Cyrillic homograph", "https://\u{430}pi.example.com/", .refuse("non_ascii_host")),
        LocationCase("fullwidth letters", "https://\u{FF41}\u{FF50}\u{FF49}.example.com/", .refuse("non_ascii_host")),
        LocationCase("ideographic full stop", "https://api.example.com\u{3002}evil.com/", .refuse("non_ascii_host")),
        LocationCase("IDN in Unicode", "https://b\u{FC}cher.example.com/", .refuse("non_ascii_host")),
        LocationCase("IPv4 as one decimal number", "https://2130706433/", .refuse("invalid_host")),
        LocationCase("IPv4 in hex", "https://0x7f000001/", .refuse("invalid_host")),
        LocationCase("IPv4 in octal", "https://0177.0.0.1/", .refuse("invalid_host")),
        LocationCase("IPv4 shortened", "https://127.1/", .refuse("invalid_host")),
        LocationCase("IPv6 without closing bracket", "https://[::1/", .refuse("invalid_host")),
        LocationCase("empty host after ///", "///evil.com", .refuse("invalid_host")),
        LocationCase("empty host", "https://", .refuse("invalid_host")),
        LocationCase("empty host with port", "https://:443/", .refuse("invalid_host")),
        LocationCase("empty label", "https://api..example.com/", .refuse("invalid_host")),

        // Ports.
        LocationCase("unlisted port", "https://api.example.com:8080/x", .refuse("port_change")),
        LocationCase("port 0", "https://api.example.com:0/", .refuse("invalid_port")),
        LocationCase("port out of range", "https://api.example.com:99999/", .refuse("invalid_port")),
        LocationCase("port with letters", "https://api.example.com:80a/", .refuse("invalid_port")),

        // Control characters (header injection) and invisible characters.
        LocationCase("CRLF", "/next\r\nSet-Cookie: a=b", .refuse("control_character")),
        LocationCase("bare LF", "/next\nx", .refuse("control_character")),
        LocationCase("NUL", "/a\u{0}b", .refuse("control_character")),
        LocationCase("tab inside", "/a\tb", .refuse("control_character")),
        LocationCase("DEL", "/a\u{7F}", .refuse("control_character")),
        LocationCase("C1 control", "/a\u{85}b", .refuse("control_character")),
        LocationCase("bidi override", "/a\u{202E}b", .refuse("control_character")),
        LocationCase("zero-width space in host", "https://api\u{200B}.example.com/", .refuse("control_character")),

        // Shape.
        LocationCase("empty", "", .refuse("empty_location")),
        LocationCase("only spaces", "   ", .refuse("empty_location")),
        LocationCase("overlong (8 KiB + 1)", Self.overlong, .refuse("location_too_long")),
        LocationCase("bad percent-encoding", "/x%zz", .refuse("unparsable")),
        LocationCase("truncated percent-encoding", "/x%4", .refuse("unparsable")),
        LocationCase("colon in first segment", "1http://evil.com", .refuse("unparsable")),
    ]
}

@Suite("Redirect Location table: adversarial Locations and their decisions")
struct RedirectLocationTableTests {
    @Test("the table holds at least 40 adversarial Locations")
    func tableSize() {
        #expect(LocationTable.cases.count >= 40)
        #expect(Set(LocationTable.cases.map(\.name)).count == LocationTable.cases.count, "case names are unique")
    }

    @Test(arguments: LocationTable.cases)
    func location(_ testCase: LocationCase) throws {
        let decision = LocationTable.decide(testCase.location)
        switch (testCase.expected, decision) {
        case (.follow(let url), .follow(let follow)):
            #expect(follow.url.absoluteString == url)
            #expect(follow.method == "GET")
            let sameOrigin = follow.url.host() == "api.example.com" && follow.url.port == nil
            #expect(follow.headers.isEmpty == !sameOrigin, "Authorization is kept only within the origin")
        case (.refuse(let reason), .refuse(let refusal)):
            #expect(refusal.shortDescription == reason, "\(refusal)")
            #expect(refusal.from == LocationTable.from)
            // Refusals are logged: they never carry a password, a query or a raw control character.
            let text = refusal.description + (refusal.to ?? "")
            #expect(!text.contains("secret"), "\(text)")
            #expect(!text.unicodeScalars.contains { $0.value < 0x20 }, "\(text)")
        default:
            Issue.record("expected \(testCase.expected), got \(decision.shortDescription): \(decision)")
        }
    }

    @Test("a refusal names where the redirect pointed, without userinfo or query")
    func refusalTargetsAreRedacted() throws {
        let cases: [(String, String?)] = [
            ("https://evil.com/path?token=secret", "https://evil.com/path"),
            ("https://user:secret@api.example.com/x", "https://…@api.example.com/x"),
            ("https://u:p?secret@evil.com/", "https://…@evil.com/"),
            ("/next\r\nSet-Cookie: secret", "/next\\u{D}\\u{A}Set-Cookie: secret"),
            ("javascript:alert(1)", "javascript:alert(1)"),
        ]
        for (location, to) in cases {
            let refusal = try #require(LocationTable.decide(location).refusal, "\(location)")
            #expect(refusal.to == to, "\(location)")
        }
    }

    @Test(
        "only 301, 302, 303, 307 and 308 are redirects",
        arguments: [300, 301, 302, 303, 304, 305, 306, 307, 308, 200]
    )
    func redirectStatuses(status: Int) {
        let decision = LocationTable.decide("/v1/home", status: status)
        if [301, 302, 303, 307, 308].contains(status) {
            #expect(decision.follow?.url.absoluteString == "https://api.example.com/v1/home")
        } else {
            #expect(decision.refusal?.reason == .notARedirect(status: status))
        }
    }
}
