import Foundation
import Testing

@testable import BulwarkPolicy

/// One URL and how every reader of a URL must read it: its origin and its path after dot-segment removal, or nil when
/// every reader must refuse it.
struct URLReadingCase: Sendable, CustomTestStringConvertible {
    let text: String
    /// `scheme`, canonical host, effective port; nil: not a URL any reader accepts.
    let origin: (scheme: String, host: String, port: Int)?
    /// The path with dot segments removed (RFC 3986 section 5.2.4), still percent-encoded.
    let path: String

    init(_ text: String, _ scheme: String, _ host: String, _ port: Int, path: String) {
        self.text = text
        self.origin = (scheme, host, port)
        self.path = path
    }

    init(refused text: String) {
        self.text = text
        self.origin = nil
        self.path = ""
    }

    var testDescription: String { self.text.debugDescription }

    var url: URL {
        get throws { try #require(URL(string: self.text), "Foundation parses \(self.text.debugDescription)") }
    }

    /// The URL written canonically: what every reader must treat as the same origin and path.
    var canonical: String? {
        guard let (scheme, host, port) = self.origin else { return nil }
        let literal = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(literal):\(port)\(self.path)"
    }
}

/// Issue 17, item 2: a URL was read five ways (the client's request target, redirect resolution, credential scopes,
/// the host allowlist, the cookie jar). The same spellings of a host (Unicode and punycode IDN, upper case, a trailing
/// dot, IPv4 and IPv6 forms) and of a path (`.` and `..` segments, `%2e`, control characters) must reach the same
/// origin and path through every one of them. The client's request target is checked with the same cases in
/// `RequestTargetReadingTests` (Bulwark's tests).
@Suite("One reading of a URL: origin and path agree across every reader")
struct URLReadingConsistencyTests {
    static let cases: [URLReadingCase] = [
        // Internationalized names: Unicode, punycode, upper case and a trailing dot are one host.
        URLReadingCase("https://bücher.example/a/b", "https", "xn--bcher-kva.example", 443, path: "/a/b"),
        URLReadingCase("https://xn--bcher-kva.example/a/b", "https", "xn--bcher-kva.example", 443, path: "/a/b"),
        URLReadingCase("https://BÜCHER.example./a/b", "https", "xn--bcher-kva.example", 443, path: "/a/b"),
        URLReadingCase("https://XN--BCHER-KVA.EXAMPLE/a/b", "https", "xn--bcher-kva.example", 443, path: "/a/b"),
        // Case, trailing dot, default and explicit ports.
        URLReadingCase("HTTPS://API.Example.COM.:443/v1/x", "https", "api.example.com", 443, path: "/v1/x"),
        URLReadingCase("http://api.example.com:8080/v1/x", "http", "api.example.com", 8080, path: "/v1/x"),
        URLReadingCase("https://api.example.com", "https", "api.example.com", 443, path: "/"),
        // IPv4: only the dotted quad; a trailing dot is the same address.
        URLReadingCase("https://127.0.0.1:8443/x", "https", "127.0.0.1", 8443, path: "/x"),
        URLReadingCase("https://1.2.3.4./x", "https", "1.2.3.4", 443, path: "/x"),
        URLReadingCase(refused: "https://127.1/x"),
        URLReadingCase(refused: "https://2130706433/x"),
        URLReadingCase(refused: "https://0x7f.0.0.1/x"),
        URLReadingCase(refused: "https://0177.0.0.1/x"),
        URLReadingCase(refused: "https://1.2.3.4.5/x"),
        // IPv6: brackets, zero compression and embedded IPv4 written one way; no zone identifier.
        URLReadingCase("https://[::1]:8443/x", "https", "::1", 8443, path: "/x"),
        URLReadingCase("https://[0:0:0:0:0:0:0:1]:8443/x", "https", "::1", 8443, path: "/x"),
        URLReadingCase("https://[2001:DB8::0:1]/x", "https", "2001:db8::1", 443, path: "/x"),
        URLReadingCase("https://[::ffff:127.0.0.1]/x", "https", "::ffff:7f00:1", 443, path: "/x"),
        URLReadingCase(refused: "https://[fe80::1%25eth0]/x"),
        // Dot segments are removed (RFC 3986 section 5.2.4), above the root too; `%2e` is not a dot.
        URLReadingCase("https://a.example/v1/../admin", "https", "a.example", 443, path: "/admin"),
        URLReadingCase("https://a.example/v1/./x/.", "https", "a.example", 443, path: "/v1/x/"),
        URLReadingCase("https://a.example/v1/x/..", "https", "a.example", 443, path: "/v1/"),
        URLReadingCase("https://a.example/../../etc/passwd", "https", "a.example", 443, path: "/etc/passwd"),
        URLReadingCase("https://a.example/v1/%2e%2e/admin", "https", "a.example", 443, path: "/v1/%2e%2e/admin"),
        URLReadingCase("https://a.example/v1/%2E/x", "https", "a.example", 443, path: "/v1/%2E/x"),
        // Control characters: escaped in the path, refused in the host.
        URLReadingCase("https://a.example/v1/x%0D%0Ay", "https", "a.example", 443, path: "/v1/x%0D%0Ay"),
        URLReadingCase(refused: "https://a%0d.example/x"),
        URLReadingCase(refused: "https://a%2eexample/x"),
        // User information: never read as anything.
        URLReadingCase(refused: "https://user:pass@a.example/x"),
    ]

    /// Cases with an origin whose path no server reads differently (no `%2e`), for the credential scope's paths.
    static var unambiguous: [URLReadingCase] {
        self.cases.filter { $0.origin != nil && !$0.path.lowercased().contains("%2e") }
    }

    // MARK: - Redirect resolution

    /// The URL a redirect to `location` (status 302, GET) from `from` goes to, or the refusal's label.
    static func follow(_ location: String, from: URL, allowing hosts: [String] = []) -> Result<URL, RedirectRefusal> {
        var policy = try! RedirectPolicy(allowing: hosts)
        policy.allowedPorts = [80, 443, 8080, 8443]
        policy.allowedSchemes = ["https", "http"]
        let request = RedirectRequest(method: "GET", url: from, headers: [])
        let hop = RedirectHop(
            request: request,
            status: 302,
            locations: [location],
            chain: RedirectChain(startingAt: from)
        )
        switch policy.decide(hop) {
        case .follow(let follow): return .success(follow.url)
        case .refuse(let refusal): return .failure(refusal)
        }
    }

    /// `scheme://host:port/path` of a URL the redirect rules produced (Foundation reads it: the rules write it
    /// canonically).
    static func written(_ url: URL) -> String {
        let host = url.host(percentEncoded: true) ?? ""
        let literal = host.contains(":") ? "[\(host)]" : host
        let port = url.port ?? (url.scheme == "https" ? 443 : 80)
        let path = url.path(percentEncoded: true)
        return "\(url.scheme ?? "")://\(literal):\(port)\(path.isEmpty ? "/" : path)"
    }

    @Test("redirect resolution reads the request URL as every reader does", arguments: cases)
    func redirectBase(_ testCase: URLReadingCase) throws {
        let result = Self.follow("?probe", from: try testCase.url)
        switch (testCase.canonical, result) {
        case (let canonical?, .success(let url)):
            #expect(Self.written(url) == canonical)
            #expect(url.query == "probe")
        case (nil, .failure(let refusal)):
            #expect(refusal.shortDescription == "unparsable", "\(refusal)")
        case (let canonical, let result):
            Issue.record("expected \(canonical ?? "a refusal"), got \(result)")
        }
        // The chain names the same initial host.
        let chain = RedirectChain(startingAt: try testCase.url)
        #expect(chain.initialHost == testCase.origin?.host)
    }

    @Test("a Location in ASCII resolves to the same origin and path", arguments: cases)
    func redirectLocation(_ testCase: URLReadingCase) throws {
        // A Location is text from a server: a host in Unicode or with `%` is refused (RedirectLocation's rule: an
        // internationalized name must arrive in punycode), so only ASCII spellings are compared.
        let location = testCase.text
        guard location.unicodeScalars.allSatisfy(\.isASCII), !location.contains("@"), !location.contains("%25"),
            let origin = testCase.origin
        else { return }
        let base = try #require(URL(string: "\(origin.scheme)://base.example/"))
        let result = Self.follow(location, from: base, allowing: [origin.host])
        switch result {
        case .success(let url): #expect(Self.written(url) == testCase.canonical)
        case .failure(let refusal): Issue.record("\(location) refused: \(refusal)")
        }
    }

    // MARK: - Credential scope

    @Test("a credential scope reads the same origin", arguments: cases)
    func scopeOrigin(_ testCase: URLReadingCase) throws {
        let url = try testCase.url
        guard let (scheme, host, port) = testCase.origin else {
            // Whatever the loose reading of the host would be, nothing matches a scope on the exact origins.
            let scope = try CredentialScope.hosts(["a.example", "127.0.0.1", "1.2.3.4", "fe80::1"], schemes: ["https"])
            #expect(!scope.contains(url))
            return
        }
        let exact = try CredentialScope.hosts([host], schemes: [scheme], ports: [port])
        #expect(exact.contains(url))
        let otherPort = try CredentialScope.hosts([host], schemes: [scheme], ports: [port + 1])
        #expect(!otherPort.contains(url))
    }

    @Test("a credential scope reads the same path", arguments: unambiguous)
    func scopePath(_ testCase: URLReadingCase) throws {
        let url = try testCase.url
        let canonical = try #require(testCase.canonical)
        // Under the normalized path (a base path names a directory: `/admin` is `/admin/`), and not under its parent
        // directory's sibling.
        #expect(try CredentialScope.under(canonical).contains(url), "\(canonical)")
        let sibling = canonical + "-other/"
        #expect(try !CredentialScope.under(sibling).contains(url), "\(sibling)")
    }

    // MARK: - Allowlist

    @Test("the allowlist reads the same origin", arguments: cases)
    func allowlist(_ testCase: URLReadingCase) throws {
        let refusal = try #require(HostAllowlist([]).decision(for: try testCase.url).refusal)
        guard let (scheme, host, port) = testCase.origin else {
            // The allowlist judges hosts only: user information is the client's to refuse.
            if testCase.text.contains("@") {
                #expect(refusal.code == .hostNotListed)
            } else {
                #expect(refusal.code == .invalidHost, "\(refusal)")
            }
            return
        }
        #expect(refusal.code == .hostNotListed, "\(refusal)")
        #expect(refusal.host == host)
        #expect(refusal.scheme == scheme)
        #expect(refusal.port == port)
        let allowed = try HostAllowlist([.init(host, schemes: [scheme], ports: [port])])
        #expect(allowed.decision(for: try testCase.url).isAllowed)
    }

    // MARK: - Cookie jar

    @Test("the cookie jar reads the same host and path", arguments: cases)
    func cookieJar(_ testCase: URLReadingCase) throws {
        let url = try testCase.url
        let jar = CookieJar()
        let outcomes = jar.store(setCookieFields: ["probe=1"], from: url)
        guard let origin = testCase.origin else {
            #expect(outcomes == [.ignored(name: "probe", reason: .noHost)])
            #expect(jar.count == 0)
            return
        }
        #expect(outcomes == [.stored(name: "probe")])
        let cookie = try #require(jar.allCookies.first)
        #expect(cookie.domain == origin.host)
        #expect(cookie.isHostOnly)
        // The default path is the normalized path's directory (RFC 6265 section 5.1.4).
        let directory = testCase.path.lastIndex(of: "/").map { testCase.path[..<$0] } ?? ""
        #expect(cookie.path == (directory.isEmpty ? "/" : String(directory)))
    }

    @Test("the cookie jar sends by the normalized path", arguments: cases)
    func cookiePaths(_ testCase: URLReadingCase) throws {
        guard let canonical = testCase.canonical, let origin = testCase.origin else { return }
        let jar = CookieJar()
        let site = try #require(URL(string: canonical))
        // A cookie on the normalized path is sent; one on a path the URL names only before its dot segments are
        // removed is not (`/v1/../admin` is not under `/v1`).
        jar.store(setCookieFields: ["exact=1; Path=\(testCase.path)"], from: site)
        let written = try testCase.url.path(percentEncoded: true)
        let firstSegment = "/" + (written.split(separator: "/").first.map(String.init) ?? "")
        let normalizedFirst = "/" + (testCase.path.split(separator: "/").first.map(String.init) ?? "")
        if firstSegment != normalizedFirst {
            jar.store(setCookieFields: ["removed=1; Path=\(firstSegment)"], from: site)
        }
        let sent = jar.cookies(for: try testCase.url).map(\.name)
        #expect(sent == ["exact"], "\(origin.host) \(testCase.path)")
    }

    // MARK: - Events and errors

    @Test("events and errors name the URL as read, without user information or query")
    func redaction() throws {
        let url = try #require(URL(string: "https://BÜCHER.example./v1/../x?token=secret"))
        let event = SecurityEvent.credentialsNotCarriedBefore(from: url, to: url)
        #expect(event.host == "xn--bcher-kva.example")
        #expect(event.message.contains("to https://xn--bcher-kva.example/x:"), "\(event.message)")
        #expect(!event.description.contains("secret"))
    }
}
