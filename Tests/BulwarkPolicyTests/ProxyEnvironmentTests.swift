import BulwarkPolicy
import Testing

// curl's proxy environment rules (lib/noproxy.c, lib/url.c detect_proxy, and the NO_PROXY tests of curl's own
// unit test 1614) as a table: what Bulwark must decide for each.

@Suite("NO_PROXY as curl reads it")
struct NoProxyListTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var list: String
        var host: String
        var bypass: Bool
        var testDescription: String { "no_proxy=\"\(list)\" host=\(host) → \(bypass ? "direct" : "proxy")" }
    }

    static let cases: [Case] = [
        // `*` alone: everything.
        Case(list: "*", host: "example.com", bypass: true),
        Case(list: " * ", host: "10.0.0.1", bypass: true),
        // `*` anywhere else is no wildcard.
        Case(list: "*.example.com", host: "www.example.com", bypass: false),
        Case(list: "a.com,*", host: "example.com", bypass: false),
        // Domain suffixes, leading dot optional, on label boundaries only.
        Case(list: "example.com", host: "example.com", bypass: true),
        Case(list: "example.com", host: "www.example.com", bypass: true),
        Case(list: "example.com", host: "a.b.example.com", bypass: true),
        Case(list: "example.com", host: "notexample.com", bypass: false),
        Case(list: ".example.com", host: "example.com", bypass: true),
        Case(list: ".example.com", host: "www.example.com", bypass: true),
        Case(list: "www.example.com", host: "example.com", bypass: false),
        Case(list: "example.com.", host: "example.com", bypass: true),
        Case(list: "example.com", host: "example.com.", bypass: true),
        Case(list: "EXAMPLE.com", host: "www.Example.COM", bypass: true),
        Case(list: "com", host: "example.com", bypass: true),
        // Lists: commas, blanks around entries, empty entries.
        Case(list: "a.com, b.com ,example.com", host: "example.com", bypass: true),
        Case(list: ",,example.com,,", host: "example.com", bypass: true),
        Case(list: "a.com,b.com", host: "example.com", bypass: false),
        Case(list: "", host: "example.com", bypass: false),
        // Ports are not part of an entry.
        Case(list: "example.com:8080", host: "example.com", bypass: false),
        // IPv4: exact and CIDR; names and addresses never match each other.
        Case(list: "192.168.0.1", host: "192.168.0.1", bypass: true),
        Case(list: "192.168.0.1", host: "192.168.0.2", bypass: false),
        Case(list: "192.168.0.0/16", host: "192.168.77.3", bypass: true),
        Case(list: "192.168.0.0/16", host: "192.169.0.1", bypass: false),
        Case(list: "10.0.0.0/8", host: "10.255.255.255", bypass: true),
        Case(list: "127.0.0.1/32", host: "127.0.0.1", bypass: true),
        Case(list: "192.168.0.0/33", host: "192.168.0.1", bypass: false),
        Case(list: "0.0.0.0/0", host: "8.8.8.8", bypass: false),  // 0 bits: the whole address, as curl
        Case(list: "localhost", host: "127.0.0.1", bypass: false),
        Case(list: "127.0.0.1", host: "localhost", bypass: false),
        Case(list: "0.1", host: "10.0.0.1", bypass: false),  // no suffix match for addresses
        // IPv6: exact, brackets, CIDR.
        Case(list: "::1", host: "::1", bypass: true),
        Case(list: "::1", host: "[::1]", bypass: true),
        Case(list: "[::1]", host: "::1", bypass: true),
        Case(list: "fe80::/10", host: "fe80::1234", bypass: true),
        Case(list: "fe80::/10", host: "fec0::1", bypass: false),
        Case(list: "2001:db8::/32", host: "[2001:db8:0:1::5]", bypass: true),
        Case(list: "::1", host: "127.0.0.1", bypass: false),
    ]

    @Test("curl's behaviour", arguments: cases)
    func table(_ entry: Case) {
        #expect(NoProxyList(entry.list).matches(entry.host) == entry.bypass)
    }
}

@Suite("The proxy environment as curl reads it")
struct ProxyEnvironmentTests {
    func endpoint(_ variables: [String: String], scheme: String, host: String = "example.com") throws -> String? {
        try ProxyEnvironment(variables).proxy(forScheme: scheme, host: host).map {
            "\($0.variable) \($0.endpoint)"
        }
    }

    @Test("https: https_proxy, then HTTPS_PROXY, then all_proxy, then ALL_PROXY")
    func httpsPrecedence() throws {
        let all: [String: String] = [
            "https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:2", "all_proxy": "http://all:3",
            "ALL_PROXY": "http://allupper:4",
        ]
        #expect(try endpoint(all, scheme: "https") == "https_proxy http://lower:1")
        var variables = all
        variables["https_proxy"] = nil
        #expect(try endpoint(variables, scheme: "https") == "HTTPS_PROXY http://upper:2")
        variables["HTTPS_PROXY"] = ""  // empty is unset, as curl_getenv
        #expect(try endpoint(variables, scheme: "https") == "all_proxy http://all:3")
        variables["all_proxy"] = nil
        #expect(try endpoint(variables, scheme: "https") == "ALL_PROXY http://allupper:4")
        #expect(try endpoint([:], scheme: "https") == nil)
    }

    @Test("http: http_proxy in lower case only (HTTP_PROXY is httpoxy), then all_proxy")
    func httpLowerCaseOnly() throws {
        #expect(try endpoint(["HTTP_PROXY": "http://evil:1"], scheme: "http") == nil)
        #expect(
            try endpoint(["HTTP_PROXY": "http://evil:1", "ALL_PROXY": "http://all:2"], scheme: "http")
                == "ALL_PROXY http://all:2"
        )
        #expect(
            try endpoint(["http_proxy": "http://good:3", "HTTP_PROXY": "http://evil:1"], scheme: "http")
                == "http_proxy http://good:3"
        )
        // An https request never reads http_proxy.
        #expect(try endpoint(["http_proxy": "http://good:3"], scheme: "https") == nil)
    }

    @Test("no_proxy before NO_PROXY; an empty no_proxy is unset; --noproxy replaces both")
    func noProxyPrecedence() throws {
        let proxy = ["https_proxy": "http://proxy:8080"]
        #expect(try endpoint(proxy.merging(["no_proxy": "example.com"]) { $1 }, scheme: "https") == nil)
        #expect(try endpoint(proxy.merging(["NO_PROXY": "example.com"]) { $1 }, scheme: "https") == nil)
        // The lower-case list wins even when it does not match.
        let both = proxy.merging(["no_proxy": "other.com", "NO_PROXY": "example.com"]) { $1 }
        #expect(try endpoint(both, scheme: "https") == "https_proxy http://proxy:8080")
        let emptyLower = proxy.merging(["no_proxy": "", "NO_PROXY": "example.com"]) { $1 }
        #expect(try endpoint(emptyLower, scheme: "https") == nil)
        let replaced = ProxyEnvironment(proxy.merging(["no_proxy": "example.com"]) { $1 }, noProxy: NoProxyList(""))
        #expect(try replaced.proxy(forScheme: "https", host: "example.com")?.endpoint.host == "proxy")
        #expect(try endpoint(proxy.merging(["no_proxy": "*"]) { $1 }, scheme: "https") == nil)
    }

    @Test("a value without a scheme is an http proxy on port 1080; socks5 and socks5h are SOCKS5")
    func schemesAndPorts() throws {
        #expect(try endpoint(["https_proxy": "proxy.corp"], scheme: "https") == "https_proxy http://proxy.corp:1080")
        #expect(
            try endpoint(["https_proxy": "socks5h://127.0.0.1:9050"], scheme: "https")
                == "https_proxy socks5://127.0.0.1:9050"
        )
        #expect(
            try endpoint(["https_proxy": "socks5://[::1]:1080/"], scheme: "https") == "https_proxy socks5://[::1]:1080"
        )
    }

    @Test("https_proxy=https://… (curl 7.52 and later) is an HTTPS proxy, on port 443 unless the URL gives one")
    func httpsProxies() throws {
        #expect(
            try endpoint(["https_proxy": "https://proxy.corp:3129"], scheme: "https")
                == "https_proxy https://proxy.corp:3129"
        )
        #expect(
            try endpoint(["HTTPS_PROXY": "HTTPS://Proxy.Corp"], scheme: "https") == "HTTPS_PROXY https://proxy.corp:443"
        )
        #expect(try endpoint(["http_proxy": "https://[::1]:8443/"], scheme: "http") == "http_proxy https://[::1]:8443")
        #expect(try endpoint(["all_proxy": "https://10.0.0.1"], scheme: "https") == "all_proxy https://10.0.0.1:443")
        let selection = try ProxyEnvironment(["https_proxy": "https://al%40ice:pw@proxy.corp:3129"]).proxy(
            forScheme: "https",
            host: "api.example"
        )
        #expect(selection?.endpoint.kind == .https)
        #expect(selection?.endpoint.speaksHTTP == true)
        #expect(selection?.credentials?.withBasicBytes { String(decoding: $0, as: UTF8.self) } == "al@ice:pw")
        // no_proxy applies to an HTTPS proxy as to any other.
        #expect(
            try ProxyEnvironment(["https_proxy": "https://proxy.corp:3129", "no_proxy": ".example"]).proxy(
                forScheme: "https",
                host: "api.example"
            ) == nil
        )
    }

    @Test("an unreadable variable is reported by name, never by value")
    func unreadable() {
        let error = #expect(throws: ProxyURLError.self) {
            try ProxyEnvironment(["https_proxy": "socks4://user:hunter2@proxy:1080"]).proxy(
                forScheme: "https",
                host: "a"
            )
        }
        #expect(error?.description.hasPrefix("https_proxy: ") == true)
        #expect(error?.description.contains("hunter2") == false)
        #expect(error?.description.contains("user") == false)
    }
}

@Suite("Proxy URLs and credentials")
struct ProxyEndpointTests {
    @Test("user information is percent-decoded into credentials that never print")
    func credentialsFromURL() throws {
        let (endpoint, credentials) = try ProxyEndpoint.parse("http://al%40ice:p%3Ass%20w@proxy.example:3128")
        #expect(endpoint.description == "http://proxy.example:3128")
        #expect(endpoint.authority == "proxy.example:3128")
        let basic = credentials?.withBasicBytes { String(decoding: $0, as: UTF8.self) }
        #expect(basic == "al@ice:p:ss w")
        let parts = credentials?.withUsernameAndPassword {
            [String(decoding: $0, as: UTF8.self), String(decoding: $1, as: UTF8.self)]
        }
        #expect(parts == ["al@ice", "p:ss w"])
        #expect("\(credentials!)" == "ProxyCredentials(<redacted>)")
        var dumped = ""
        dump(credentials!, to: &dumped)
        #expect(!dumped.contains("ice") && !dumped.contains("ss w"), "\(dumped)")
        #expect(String(reflecting: credentials!) == "ProxyCredentials(<redacted>)")
    }

    @Test(
        "refused proxy URLs",
        arguments: [
            "socks4://proxy:1080", "ftp://proxy", "https://proxy:0", "https://proxy/path", "https://", "http://proxy:0",
            "http://proxy:65536",
            "http://proxy:12ab", "http://proxy/path", "http://proxy?q", "http://", "http://user:%zz@proxy",
            "http://[::1", "http://pro xy:1",
        ]
    )
    func refused(_ text: String) {
        #expect(throws: ProxyURLError.self) { try ProxyEndpoint.parse(text) }
    }

    @Test("https:// proxy URLs: TLS to the proxy, port 443 by default, credentials from the user information")
    func httpsURLs() throws {
        let (endpoint, credentials) = try ProxyEndpoint.parse("https://bob:s%3Acret@Proxy.Example:3129/")
        #expect(endpoint.kind == .https)
        #expect(endpoint.description == "https://proxy.example:3129")
        #expect(endpoint.authority == "proxy.example:3129")
        #expect(credentials?.withBasicBytes { String(decoding: $0, as: UTF8.self) } == "bob:s:cret")
        #expect(try ProxyEndpoint.parse("https://proxy.example").endpoint.port == 443)
        #expect(try ProxyEndpoint.parse("https://[2001:db8::1]").endpoint.description == "https://[2001:db8::1]:443")
        #expect(try ProxyEndpoint.parse("http://proxy.example").endpoint.port == 1080)
        #expect(try ProxyEndpoint.parse("https://proxy.example").endpoint.speaksHTTP)
        #expect(try !ProxyEndpoint.parse("socks5://proxy.example").endpoint.speaksHTTP)
        let error = #expect(throws: ProxyURLError.self) { try ProxyEndpoint.parse("httpx://proxy") }
        #expect(
            error?.description
                == "the scheme \"httpx\" is not a supported proxy scheme (http, https, socks5, socks5h)"
        )
    }

    @Test("credentials are checked: no colon or control in the user name, at most 255 bytes each")
    func credentialChecks() {
        #expect(throws: CredentialError.self) {
            try ProxyCredentials(username: "a:b", password: SecretBytes(utf8: "x"))
        }
        #expect(throws: CredentialError.self) {
            try ProxyCredentials(username: "a\n", password: SecretBytes(utf8: "x"))
        }
        #expect(throws: CredentialError.self) {
            try ProxyCredentials(username: "a", password: SecretBytes(utf8: "x\r"))
        }
        #expect(throws: CredentialError.self) {
            try ProxyCredentials(username: "a", password: SecretBytes(utf8: String(repeating: "p", count: 256)))
        }
        #expect(throws: Never.self) { try ProxyCredentials(username: "", password: SecretBytes(utf8: "")) }
    }

    @Test("credentials compare by identity, so a pool never shares a connection between two of them")
    func identity() throws {
        let one = try ProxyCredentials(username: "a", password: SecretBytes(utf8: "b"))
        let two = try ProxyCredentials(username: "a", password: SecretBytes(utf8: "b"))
        let copy = one
        #expect(one == copy)
        #expect(one != two)
        one.wipe()
        #expect(copy.withBasicBytes { _ in true } == nil)
    }
}
