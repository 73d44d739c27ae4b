import Foundation
import Testing

@testable import BulwarkPolicy

struct AllowlistCase: Sendable, CustomTestStringConvertible {
    let url: String
    /// nil: allowed.
    let code: AllowlistRefusal.Code?
    /// The pattern of the entry that allowed it, or that matched when a constraint failed.
    let pattern: String?

    init(_ url: String, _ code: AllowlistRefusal.Code?, pattern: String? = nil) {
        self.url = url
        self.code = code
        self.pattern = pattern
    }

    var testDescription: String { "\(self.url) -> \(self.code?.description ?? "allowed")" }
}

@Suite("Host allowlist")
struct HostAllowlistTests {
    static func allowlist() throws -> HostAllowlist {
        HostAllowlist([
            try .init("**.example.com", schemes: ["HTTPS"]),
            try .init("legacy.example.com", schemes: ["http"], ports: [8080]),
            try .init("legacy.example.com", schemes: ["https"], ports: [8443]),
            try .init("*.cdn.example.net"),
            try .init("localhost", ports: [8080, 8443]),
            try .init("127.0.0.1", schemes: ["https"]),
            try .init("[::1]", ports: [443]),
            try .init("bücher.example"),
        ])
    }

    static let cases: [AllowlistCase] = [
        // Any depth below example.com, https only, any port.
        AllowlistCase("https://example.com/", nil, pattern: "**.example.com"),
        AllowlistCase("https://api.example.com/v1?q=1", nil, pattern: "**.example.com"),
        AllowlistCase("https://a.b.c.example.com:8443/", nil, pattern: "**.example.com"),
        AllowlistCase("HTTPS://API.EXAMPLE.COM./", nil, pattern: "**.example.com"),
        AllowlistCase("http://api.example.com/", .schemeNotAllowed, pattern: "**.example.com"),
        AllowlistCase("wss://api.example.com/", .schemeNotAllowed, pattern: "**.example.com"),
        // The more specific entry decides for its host: it restricts legacy.example.com.
        AllowlistCase("http://legacy.example.com:8080/", nil, pattern: "legacy.example.com"),
        AllowlistCase("https://legacy.example.com:8443/", nil, pattern: "legacy.example.com"),
        AllowlistCase("https://legacy.example.com/", .portNotAllowed, pattern: "legacy.example.com"),
        AllowlistCase("http://legacy.example.com:8443/", .portNotAllowed, pattern: "legacy.example.com"),
        AllowlistCase("ftp://legacy.example.com/", .schemeNotAllowed, pattern: "legacy.example.com"),
        // Exactly one label under cdn.example.net, any scheme and port.
        AllowlistCase("http://img.cdn.example.net:81/x.png", nil, pattern: "*.cdn.example.net"),
        AllowlistCase("https://cdn.example.net/", .hostNotListed),
        AllowlistCase("https://a.img.cdn.example.net/", .hostNotListed),
        // Lookalikes and other hosts.
        AllowlistCase("https://example.com.evil.net/", .hostNotListed),
        AllowlistCase("https://evilexample.com/", .hostNotListed),
        AllowlistCase("https://example.co/", .hostNotListed),
        AllowlistCase("https://user:pass@evil.net/", .hostNotListed),
        AllowlistCase("https://api.example.com@evil.net/", .hostNotListed),
        // Ports; default ports count as the port.
        AllowlistCase("http://localhost:8080/", nil, pattern: "localhost"),
        AllowlistCase("https://localhost:8443/", nil, pattern: "localhost"),
        AllowlistCase("http://localhost/", .portNotAllowed, pattern: "localhost"),
        AllowlistCase("http://localhost:9090/", .portNotAllowed, pattern: "localhost"),
        AllowlistCase("foo://localhost/", .portNotAllowed, pattern: "localhost"),
        // IP addresses: exact only, never through a wildcard.
        AllowlistCase("https://127.0.0.1:9999/", nil, pattern: "127.0.0.1"),
        AllowlistCase("http://127.0.0.1/", .schemeNotAllowed, pattern: "127.0.0.1"),
        AllowlistCase("https://127.0.0.2/", .hostNotListed),
        AllowlistCase("https://[::1]/", nil, pattern: "::1"),
        AllowlistCase("https://[0:0:0:0:0:0:0:1]:443/", nil, pattern: "::1"),
        AllowlistCase("https://[::1]:8443/", .portNotAllowed, pattern: "::1"),
        // IDN: the Unicode and punycode spellings are the same host.
        AllowlistCase("https://xn--bcher-kva.example/", nil, pattern: "bücher.example"),
        AllowlistCase("https://bücher.example/", nil, pattern: "bücher.example"),
        AllowlistCase("https://b%C3%BCcher.example/", nil, pattern: "bücher.example"),
        AllowlistCase("https://BÜCHER.example/", nil, pattern: "bücher.example"),
        AllowlistCase("https://b%FFcher.example/", .invalidHost),
        // Hosts that do not canonicalize, and no host at all.
        AllowlistCase("https://a%2eexample.com/", .invalidHost),
        AllowlistCase("https://127.1/", .invalidHost),
        AllowlistCase("mailto:someone@example.com", .missingHost),
        AllowlistCase("/relative/path", .missingHost),
    ]

    @Test("decisions", arguments: cases)
    func decisions(_ testCase: AllowlistCase) throws {
        let url = try #require(URL(string: testCase.url))
        let decision = try Self.allowlist().decision(for: url)
        switch decision {
        case .allowed(let entry):
            #expect(testCase.code == nil, "allowed by \(entry)")
            #expect(entry.pattern == (try HostPattern(testCase.pattern ?? "")))
            #expect(decision.isAllowed && decision.refusal == nil)
        case .refused(let refusal):
            #expect(refusal.code == testCase.code)
            #expect(refusal.pattern?.description == testCase.pattern.map { try! HostPattern($0).description })
            #expect(!decision.isAllowed)
        }
    }

    @Test("refusals name the target, the pattern and what is allowed, but never the path, query or user")
    func refusalDescriptions() throws {
        let allowlist = try Self.allowlist()
        let cases: [(String, String)] = [
            (
                "https://user:hunter2@evil.net/private?token=abc",
                "request to https://evil.net:443 refused: the host is not in the allowlist"
            ),
            (
                "http://api.example.com/x?token=abc",
                "request to http://api.example.com:80 refused: scheme http is not allowed for **.example.com "
                    + "(allowed: https)"
            ),
            (
                "https://legacy.example.com/",
                "request to https://legacy.example.com:443 refused: port 443 is not allowed for legacy.example.com "
                    + "(allowed: 8443)"
            ),
            (
                "https://[::1]:8443/",
                "request to https://[::1]:8443 refused: port 8443 is not allowed for ::1 (allowed: 443)"
            ),
        ]
        for (text, expected) in cases {
            let refusal = try #require(allowlist.decision(for: url(text)).refusal)
            #expect(refusal.description == expected)
            for secret in ["hunter2", "token", "private", "/x"] {
                #expect(!refusal.description.contains(secret))
            }
        }
        let invalid = try #require(allowlist.decision(for: url("https://a%2eb.com/")).refusal)
        #expect(invalid.hostError?.code == .percentEncoding)
        #expect(invalid.description.hasPrefix("request to https://a%2eb.com:443 refused: the host is invalid"))
    }

    @Test("a refusal becomes a request_refused_by_allowlist event")
    func event() throws {
        let refusal = try #require(try Self.allowlist().decision(for: url("http://api.example.com/login")).refusal)
        let event = refusal.securityEvent(requestID: 7)
        #expect(event.kind == .requestRefusedByAllowlist)
        #expect(event.host == "api.example.com")
        #expect(event.requestID == 7)
        #expect(event.reason == "scheme_not_allowed")
        #expect(event.details[.pattern]?.text == "**.example.com")
        #expect(event.details[.target]?.text == "http://api.example.com:80")
        #expect(event.message == refusal.description)
    }

    @Test("an empty allowlist refuses everything; patterns-only allowlists allow any scheme and port")
    func emptyAndPatternsOnly() throws {
        let empty = HostAllowlist([])
        #expect(empty.decision(for: try #require(URL(string: "https://example.com/"))).refusal?.code == .hostNotListed)
        #expect(empty.description == "(empty allowlist)")
        let simple = try HostAllowlist(patterns: ["example.com", "*.example.org"])
        #expect(simple.decision(for: try #require(URL(string: "http://example.com:1234/"))).isAllowed)
        #expect(simple.decision(for: try #require(URL(string: "https://www.example.org/"))).isAllowed)
        #expect(simple.decision(scheme: "HTTPS", host: "WWW.example.org.", port: nil).isAllowed)
        #expect(throws: HostPatternError.self) { try HostAllowlist(patterns: ["example.com", "a*.example.com"]) }
    }

    @Test("entries describe themselves; the default ports are 443 and 80")
    func descriptions() throws {
        #expect(
            try HostAllowlist.Entry("**.Example.com", schemes: ["HTTPS", "http"], ports: [8443, 443]).description
                == "http|https://**.example.com:443,8443"
        )
        #expect(try HostAllowlist.Entry("example.com").description == "*://example.com")
        #expect(HostAllowlist.defaultPort(for: "HTTPS") == 443)
        #expect(HostAllowlist.defaultPort(for: "ws") == 80)
        #expect(HostAllowlist.defaultPort(for: "gopher") == nil)
        let decision = try Self.allowlist().decision(for: try #require(URL(string: "https://example.com")))
        #expect(decision.description == "allowed by https://**.example.com")
    }

    @Test("a relative URL is judged by its absolute form")
    func relativeURL() throws {
        let base = try #require(URL(string: "https://api.example.com/v1/"))
        let relative = try #require(URL(string: "users", relativeTo: base))
        #expect(try Self.allowlist().decision(for: relative).isAllowed)
    }
}
