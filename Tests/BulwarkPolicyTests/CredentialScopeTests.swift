import Foundation
import Testing

@testable import BulwarkPolicy

struct ScopeCase: Sendable, CustomTestStringConvertible {
    let url: String
    let contained: Bool

    init(_ url: String, _ contained: Bool) {
        self.url = url
        self.contained = contained
    }

    var testDescription: String { "\(self.url) \(self.contained ? "in" : "out of") scope" }
}

@Suite("Credential scope")
struct CredentialScopeTests {
    /// Under `https://api.example.com/v1/`.
    static let baseCases: [ScopeCase] = [
        ScopeCase("https://api.example.com/v1/", true),
        ScopeCase("https://api.example.com/v1", true),
        ScopeCase("https://api.example.com/v1/users", true),
        ScopeCase("https://api.example.com/v1/users/42?fields=all#top", true),
        ScopeCase("https://API.Example.COM./v1/x", true),
        ScopeCase("https://api.example.com:443/v1/x", true),
        ScopeCase("https://api.example.com/v1/./x", true),
        ScopeCase("https://api.example.com/v1/a/../b", true),
        ScopeCase("https://api.example.com/v1//double", true),
        // Path-segment boundaries.
        ScopeCase("https://api.example.com/v1x", false),
        ScopeCase("https://api.example.com/v10/", false),
        ScopeCase("https://api.example.com/v1.json", false),
        ScopeCase("https://api.example.com/", false),
        ScopeCase("https://api.example.com/V1/", false),
        ScopeCase("https://api.example.com/v2/v1/", false),
        ScopeCase("https://api.example.com/other?next=/v1/", false),
        // Dot segments are removed first; encoded dots, slashes and backslashes are never in scope.
        ScopeCase("https://api.example.com/v1/../admin", false),
        ScopeCase("https://api.example.com/v1/..", false),
        ScopeCase("https://api.example.com/v1/%2e%2e/admin", false),
        ScopeCase("https://api.example.com/v1/%2E%2E/admin", false),
        ScopeCase("https://api.example.com/v1%2fx", false),
        ScopeCase("https://api.example.com/v1/a%5c..%5cadmin", false),
        // Scheme, host and port must be the base URL's.
        ScopeCase("http://api.example.com/v1/", false),
        ScopeCase("https://api.example.com:8443/v1/", false),
        ScopeCase("https://example.com/v1/", false),
        ScopeCase("https://evil.api.example.com/v1/", false),
        ScopeCase("https://api.example.com.evil.net/v1/", false),
        ScopeCase("https://user:pass@api.example.com/v1/", false),
        ScopeCase("https://api.example.com@evil.net/v1/", false),
        ScopeCase("https://api%2eexample.com/v1/", false),
        ScopeCase("https://api.example.com%2F@evil.net/v1/", false),
        ScopeCase("wss://api.example.com/v1/", false),
        ScopeCase("/v1/relative", false),
    ]

    /// `**.example.com`, https, default port.
    static let hostCases: [ScopeCase] = [
        ScopeCase("https://example.com/", true),
        ScopeCase("https://api.example.com/anything/at/all", true),
        ScopeCase("https://a.b.example.com:443/", true),
        ScopeCase("https://api.example.com:8443/", false),
        ScopeCase("http://api.example.com/", false),
        ScopeCase("https://example.com.evil.net/", false),
        ScopeCase("https://notexample.com/", false),
        ScopeCase("https://127.0.0.1/", false),
        ScopeCase("https://bücher.example.com/", true),
        ScopeCase("https://xn--bcher-kva.example.com/", true),
    ]

    @Test("under a base URL (Siesta's \"**\")", arguments: baseCases)
    func underBaseURL(_ testCase: ScopeCase) throws {
        let scope = try CredentialScope.under("https://api.example.com/v1/")
        #expect(scope.contains(try #require(URL(string: testCase.url))) == testCase.contained)
        // Written without the trailing slash, or with "**", the base means the same.
        #expect(try CredentialScope.under("https://api.example.com/v1") == scope)
        #expect(try CredentialScope.under("https://api.example.com/v1/**") == scope)
    }

    @Test("host patterns", arguments: hostCases)
    func hostPatterns(_ testCase: ScopeCase) throws {
        let scope = try CredentialScope.hosts(["**.example.com"])
        #expect(scope.contains(try #require(URL(string: testCase.url))) == testCase.contained)
    }

    @Test("host patterns with explicit schemes and ports; anyOf; the root base URL")
    func combinations() throws {
        let dev = try CredentialScope.hosts(["localhost", "127.0.0.1"], schemes: ["http", "HTTPS"], ports: [8080])
        #expect(dev.contains(url("http://localhost:8080/x")))
        #expect(dev.contains(url("https://127.0.0.1:8080/")))
        #expect(!dev.contains(url("http://localhost/")))
        #expect(!dev.contains(url("http://localhost:8081/")))

        let both = CredentialScope.anyOf([try .under("https://a.example/api/"), try .hosts(["b.example"])])
        #expect(both.contains(url("https://a.example/api/x")))
        #expect(both.contains(url("https://b.example/anything")))
        #expect(!both.contains(url("https://a.example/other")))
        #expect(!CredentialScope.anyOf([]).contains(url("https://a.example/")))

        let root = try CredentialScope.under("https://a.example")
        #expect(root.contains(url("https://a.example")))
        #expect(root.contains(url("https://a.example/deep/path")))
        let ipv6 = try CredentialScope.under("https://[::1]:8443/api")
        #expect(ipv6.contains(url("https://[0::1]:8443/api/x")))
        #expect(!ipv6.contains(url("https://[::1]/api/x")))

        let relative = try #require(URL(string: "users", relativeTo: url("https://api.example.com/v1/")))
        #expect(try CredentialScope.under("https://api.example.com/v1/").contains(relative))
    }

    @Test("descriptions")
    func descriptions() throws {
        #expect(try CredentialScope.under("https://API.example.com/v1").description == "https://api.example.com/v1/**")
        #expect(try CredentialScope.under("http://[::1]:8080/").description == "http://[::1]:8080/**")
        #expect(try CredentialScope.hosts(["**.example.com"]).description == "https://**.example.com")
        #expect(
            try CredentialScope.hosts(["a.example", "b.example"], schemes: ["http", "https"], ports: [80, 8080])
                .description == "http|https://a.example:80,8080 | http|https://b.example:80,8080"
        )
        #expect(CredentialScope.anyOf([]).description == "(empty scope)")
    }

    @Test("invalid base URLs and patterns, with errors that never quote the URL")
    func errors() {
        let cases: [(String, CredentialScopeError.Code)] = [
            ("https://user:hunter2@api.example.com/", .userInfo),
            ("ftp://api.example.com/", .unsupportedScheme),
            ("api.example.com/v1", .unsupportedScheme),
            ("https://api.example.com/v1?token=hunter2", .queryOrFragment),
            ("https://api.example.com/v1#hunter2", .queryOrFragment),
            ("https:///v1", .missingHost),
            ("https://a%2eexample.com/", .invalidHost),
            ("https://api.example.com/v1/%2e%2e/", .invalidURL),
            ("https://api.example.com:0/", .invalidURL),
            ("https://exa mple.com/", .invalidURL),
        ]
        for (text, code) in cases {
            let error = #expect(throws: CredentialScopeError.self, "\(text)") { try CredentialScope.under(text) }
            #expect(error?.code == code, "\(text)")
            #expect(error?.description.contains("hunter2") == false)
        }
        let pattern = #expect(throws: CredentialScopeError.self) { try CredentialScope.hosts(["a*.example.com"]) }
        #expect(pattern?.code == .invalidHost)
        #expect(pattern?.hostError?.code == .misplacedWildcard)
    }

    /// Issue 16, defect 12: paths that common servers read differently from RFC 3986's dot-segment removal. Each is
    /// under `/v1/` by the RFC, outside by some server (Tomcat drops `;…` from a segment before removing dot
    /// segments; nginx merges slashes first), so a scoped credential must not go with it.
    static let ambiguousCases: [ScopeCase] = [
        ScopeCase("https://api.example.com/v1/..;/admin", false),  // Tomcat: /admin
        ScopeCase("https://api.example.com/v1/..;jsessionid=abc/admin", false),
        ScopeCase("https://api.example.com/v1/x/..;/..;/admin", false),
        ScopeCase("https://api.example.com/v1/.;/x", false),  // ";" in a dot segment: no guess either way
        ScopeCase("https://api.example.com/v1/..%3b/admin", false),  // an encoded ";" is no better
        ScopeCase("https://api.example.com/v1/..%3Bx;y/admin", false),
        ScopeCase("https://api.example.com/v1//../admin", false),  // nginx: /admin
        ScopeCase("https://api.example.com/v1/x//../../admin", false),  // nginx: /admin
        ScopeCase("https://api.example.com/v1/x//..", false),
        // Encoded dots and slashes, whatever their case and mix.
        ScopeCase("https://api.example.com/v1/%2e./admin", false),
        ScopeCase("https://api.example.com/v1/.%2E/admin", false),
        ScopeCase("https://api.example.com/v1/a%2F..%2F..%2Fadmin", false),
        // Still in scope: nothing here is read differently.
        ScopeCase("https://api.example.com/v1/./x", true),
        ScopeCase("https://api.example.com/./v1/x", true),
        ScopeCase("https://api.example.com/v1/x/..", true),
        ScopeCase("https://api.example.com/v1//double", true),
        ScopeCase("https://api.example.com/v1/a;b/c", true),
        ScopeCase("https://api.example.com/v1/.../x", true),
        ScopeCase("https://api.example.com/v1/..a/x", true),
        ScopeCase("https://api.example.com/v1/x/../y//z", true),
    ]

    @Test("ambiguous paths get no scoped credential (issue 16, defect 12)", arguments: ambiguousCases)
    func ambiguousPaths(_ testCase: ScopeCase) throws {
        let scope = try CredentialScope.under("https://api.example.com/v1/")
        #expect(scope.contains(try #require(URL(string: testCase.url))) == testCase.contained)
    }

    @Test("an ambiguous path says why; an ambiguous base URL is refused")
    func ambiguityReasons() throws {
        let cases: [(String, CredentialScope.PathAmbiguity?)] = [
            ("https://a.example/v1/..;/admin", .parameterInDotSegment),
            ("https://a.example/v1/.%2E/admin", .encodedDotSlashOrBackslash),
            ("https://a.example/v1//../admin", .emptySegmentBeforeDotDot),
            ("https://a.example/v1/a%5cb", .encodedDotSlashOrBackslash),
            ("https://a.example/v1/x/../y", nil),
        ]
        for (text, expected) in cases {
            #expect(CredentialScope.pathAmbiguity(of: try #require(URL(string: text))) == expected, "\(text)")
        }
        let scope = try CredentialScope.anyOf([.under("https://a.example/v1/"), .hosts(["b.example"])])
        #expect(scope.pathAmbiguity(for: url("https://a.example/v1/..;/x")) == .parameterInDotSegment)
        #expect(scope.pathAmbiguity(for: url("https://c.example/v1/..;/x")) == nil, "another origin")
        #expect(scope.pathAmbiguity(for: url("https://a.example/v1/x")) == nil)
        for base in ["https://a.example/v1/..;/", "https://a.example/v1//../x/"] {
            let error = #expect(throws: CredentialScopeError.self) { try CredentialScope.under(base) }
            #expect(error?.code == .invalidURL)
            #expect(error?.description.contains("ambiguous") == true)
        }
    }

    @Test("dot-segment removal (RFC 3986 section 5.2.4)")
    func dotSegments() {
        let cases: [(String, String?)] = [
            ("", "/"), ("/", "/"), ("/a/b/c/./../../g", "/a/g"), ("/a/./b", "/a/b"), ("/../a", "/a"),
            ("/a/..", "/"), ("/a/.", "/a/"), ("/a/b/..", "/a/"), ("/a//b", "/a//b"), ("/a/%2E/b", nil),
            ("/a/%2f", nil), ("/a\\b", nil),
        ]
        for (path, expected) in cases {
            #expect(CredentialScope.normalizedPath(path) == expected, "\(path)")
        }
    }
}
