@_spi(Insecure) import BulwarkPolicy
import Foundation
import Testing

/// Builds hops for the policy tests.
enum Hops {
    static let credentials = [
        HeaderField(name: "Authorization", value: "Bearer secret-token"),
        HeaderField(name: "Cookie", value: "session=secret-cookie"),
        HeaderField(name: "Proxy-Authorization", value: "Basic c2VjcmV0"),
        HeaderField(name: "Accept", value: "application/json"),
    ]

    static func hop(
        _ url: String,
        status: Int = 302,
        location: String?,
        method: String = "GET",
        headers: [HeaderField] = Hops.credentials,
        body: RedirectRequest.Body = .none,
        chain: RedirectChain? = nil
    ) -> RedirectHop {
        let request = RedirectRequest(method: method, url: URL(string: url)!, headers: headers, body: body)
        return RedirectHop(
            request: request,
            status: status,
            locations: location.map { [$0] } ?? [],
            chain: chain ?? RedirectChain(startingAt: request.url)
        )
    }

    static func names(_ headers: [HeaderField]) -> [String] {
        headers.map(\.lowercasedName)
    }
}

@Suite("Redirect policy: methods, bodies, credentials, limits, handlers, events, JSON")
struct RedirectPolicyTests {
    let policy: RedirectPolicy = {
        var policy = try! RedirectPolicy(allowing: ["**.example.com"])
        policy.allowedPorts = [8443]
        return policy
    }()

    @Test("the defaults are the secure ones")
    func defaults() {
        let policy = RedirectPolicy()
        #expect(policy.followsRedirects)
        #expect(policy.allowedHosts.isEmpty)
        #expect(policy.maximumHops == 5)
        #expect(policy.allowedSchemes == ["https"])
        #expect(policy.allowedPorts.isEmpty)
        #expect(policy.credentialHeaders == ["authorization", "cookie", "proxy-authorization"])
        #expect(policy.onRefusal == .throw)
        #expect(!policy.allowsHTTPSToHTTP)
        #expect(policy.handler == nil)
        #expect(!RedirectPolicy.doNotFollow.followsRedirects)
    }

    // MARK: Methods and bodies

    struct MethodCase: Sendable, CustomTestStringConvertible {
        let status: Int
        let method: String
        let body: RedirectRequest.Body
        let expectedMethod: String?
        let keepsBody: Bool
        var testDescription: String { "\(self.status) \(self.method) \(self.body)" }
    }

    static let methodCases: [MethodCase] = [
        MethodCase(status: 301, method: "POST", body: .replayable, expectedMethod: "GET", keepsBody: false),
        MethodCase(status: 302, method: "POST", body: .replayable, expectedMethod: "GET", keepsBody: false),
        MethodCase(status: 302, method: "POST", body: .streamed, expectedMethod: "GET", keepsBody: false),
        MethodCase(status: 301, method: "PUT", body: .replayable, expectedMethod: "PUT", keepsBody: true),
        MethodCase(status: 302, method: "DELETE", body: .none, expectedMethod: "DELETE", keepsBody: false),
        MethodCase(status: 303, method: "POST", body: .replayable, expectedMethod: "GET", keepsBody: false),
        MethodCase(status: 303, method: "PUT", body: .streamed, expectedMethod: "GET", keepsBody: false),
        MethodCase(status: 303, method: "HEAD", body: .none, expectedMethod: "HEAD", keepsBody: false),
        MethodCase(status: 303, method: "GET", body: .none, expectedMethod: "GET", keepsBody: false),
        MethodCase(status: 307, method: "POST", body: .replayable, expectedMethod: "POST", keepsBody: true),
        MethodCase(status: 308, method: "PUT", body: .replayable, expectedMethod: "PUT", keepsBody: true),
        MethodCase(status: 307, method: "GET", body: .none, expectedMethod: "GET", keepsBody: false),
        MethodCase(status: 307, method: "POST", body: .streamed, expectedMethod: nil, keepsBody: false),
        MethodCase(status: 308, method: "PATCH", body: .streamed, expectedMethod: nil, keepsBody: false),
        MethodCase(status: 301, method: "PUT", body: .streamed, expectedMethod: nil, keepsBody: false),
    ]

    @Test("method and body rewriting", arguments: Self.methodCases)
    func methodRewriting(_ testCase: MethodCase) {
        let bodyHeaders = [
            HeaderField(name: "Content-Type", value: "application/json"),
            HeaderField(name: "Content-Length", value: "12"),
            HeaderField(name: "X-Trace", value: "1"),
        ]
        let hop = Hops.hop(
            "https://api.example.com/form",
            status: testCase.status,
            location: "/done",
            method: testCase.method,
            headers: bodyHeaders,
            body: testCase.body
        )
        let decision = self.policy.decide(hop)
        guard let expectedMethod = testCase.expectedMethod else {
            #expect(decision.refusal?.reason == .bodyNotReplayable(method: testCase.method))
            return
        }
        let follow = decision.follow
        #expect(follow?.method == expectedMethod)
        #expect(follow?.keepsBody == testCase.keepsBody)
        if expectedMethod != testCase.method {
            #expect(follow.map { Hops.names($0.headers) } == ["x-trace"])
            #expect(follow?.strippedHeaders == ["content-type", "content-length"])
        } else {
            #expect(follow?.headers == bodyHeaders)
        }
    }

    // MARK: Credentials

    @Test("credentials stay within the origin")
    func sameOriginKeepsCredentials() {
        let follow = self.policy.decide(Hops.hop("https://api.example.com/a", location: "/b")).follow
        #expect(follow?.headers == Hops.credentials)
        #expect(follow?.changesOrigin == false)
        #expect(follow?.strippedHeaders == [])
    }

    @Test(
        "credentials are removed on every kind of origin change",
        arguments: [
            ("https://api.example.com/a", "https://cdn.example.com/b"),
            ("https://api.example.com/a", "https://api.example.com:8443/b"),
            ("http://api.example.com/a", "https://api.example.com/b"),
        ]
    )
    func originChangeStripsCredentials(from: String, to: String) {
        var policy = self.policy
        policy.allowedSchemes = ["https", "http"]
        let headers = Hops.credentials + [HeaderField(name: "Host", value: "api.example.com")]
        let follow = policy.decide(Hops.hop(from, location: to, headers: headers)).follow
        #expect(follow?.changesOrigin == true)
        #expect(follow.map { Hops.names($0.headers) } == ["accept"])
        #expect(follow?.strippedHeaders == ["authorization", "cookie", "proxy-authorization", "host"])
        #expect(follow?.strippedCredentials == ["authorization", "cookie", "proxy-authorization"])
    }

    @Test("stripping is sticky: A → B → A never brings credentials back (CVE-2024-45336)")
    func stickyStripping() throws {
        let start = "https://api.example.com/login"
        var chain = RedirectChain(startingAt: URL(string: start)!)
        let first = try #require(self.policy.decide(Hops.hop(start, location: "https://sso.example.com/auth")).follow)
        #expect(first.strippedCredentials == ["authorization", "cookie", "proxy-authorization"])
        chain.record(first)
        #expect(chain.hasChangedOrigin)
        // A caller (or a credential store) that puts the credentials back on the request does not get them through.
        let back = Hops.hop(first.url.absoluteString, location: "https://api.example.com/home", chain: chain)
        let second = try #require(self.policy.decide(back).follow)
        #expect(second.changesOrigin)
        #expect(Hops.names(second.headers) == ["accept"])
        chain.record(second)
        let within = Hops.hop(second.url.absoluteString, location: "/profile", chain: chain)
        let third = try #require(self.policy.decide(within).follow)
        #expect(!third.changesOrigin, "a same-origin hop after the return")
        #expect(Hops.names(third.headers) == ["accept"], "still stripped")
        #expect(third.strippedCredentials == ["authorization", "cookie", "proxy-authorization"])
        #expect(
            RedirectRecord(url: back.request.url, status: 302, decision: .follow(third)).securityEvents()
                .map(\.shortDescription) == ["credential_stripped:earlier_origin_change", "redirect_followed"]
        )
    }

    @Test("the credential headers can be extended")
    func customCredentialHeaders() {
        var policy = self.policy
        policy.credentialHeaders.insert("X-API-Key")
        let headers = [HeaderField(name: "x-api-key", value: "secret"), HeaderField(name: "Accept", value: "*/*")]
        let follow = policy.decide(
            Hops.hop("https://api.example.com/", location: "https://cdn.example.com/", headers: headers)
        )
        #expect(follow.follow?.strippedCredentials == ["x-api-key"])
    }

    // MARK: Limits, loops, hosts, schemes, ports

    @Test("the hop limit: the fifth redirect is followed, the sixth refused")
    func hopLimit() {
        let fifth = RedirectChain(startingAt: URL(string: "https://api.example.com/0")!, followedCount: 4)
        #expect(self.policy.decide(Hops.hop("https://api.example.com/4", location: "/5", chain: fifth)).follow != nil)
        let sixth = RedirectChain(startingAt: URL(string: "https://api.example.com/0")!, followedCount: 5)
        let refusal = self.policy.decide(Hops.hop("https://api.example.com/5", location: "/6", chain: sixth)).refusal
        #expect(refusal?.reason == .tooManyHops(limit: 5))
        var none = self.policy
        none.maximumHops = 0
        #expect(
            none.decide(Hops.hop("https://api.example.com/", location: "/x")).refusal?.shortDescription
                == "too_many_hops"
        )
    }

    @Test("a loop is any URL requested earlier in the chain")
    func loopAcrossTheChain() throws {
        var chain = RedirectChain(startingAt: URL(string: "https://api.example.com/a")!)
        let toB = try #require(self.policy.decide(Hops.hop("https://api.example.com/a", location: "/b")).follow)
        chain.record(toB)
        let toC = try #require(
            self.policy.decide(Hops.hop("https://api.example.com/b", location: "/c", chain: chain)).follow
        )
        chain.record(toC)
        let back = self.policy.decide(Hops.hop("https://api.example.com/c", location: "/a#again", chain: chain))
        #expect(back.refusal?.reason == .loop(url: "https://api.example.com/a"))
    }

    @Test("the first Location is used when there are several")
    func firstLocation() {
        var hop = Hops.hop("https://api.example.com/", location: nil)
        hop.locations = ["/first", "https://evil.com/"]
        #expect(self.policy.decide(hop).follow?.url.absoluteString == "https://api.example.com/first")
        hop.locations = []
        #expect(self.policy.decide(hop).refusal?.reason == .missingLocation)
    }

    @Test("the starting host is allowed without listing it; other hosts need the allowlist")
    func startingHost() {
        let policy = RedirectPolicy()
        #expect(policy.decide(Hops.hop("https://a.test/", location: "/x")).follow != nil)
        #expect(
            policy.decide(Hops.hop("https://a.test/", location: "https://b.test/")).refusal?.reason
                == .hostNotAllowed(host: "b.test")
        )
    }

    @Test("http targets need \"http\" in allowedSchemes; http:80 to https:443 is not a port change")
    func schemes() {
        let fromHTTP = Hops.hop("http://api.example.com/", location: "/x")
        #expect(self.policy.decide(fromHTTP).refusal?.reason == .schemeNotAllowed(scheme: "http"))
        var lenient = self.policy
        lenient.allowedSchemes = ["https", "http"]
        #expect(lenient.decide(fromHTTP).follow?.url.absoluteString == "http://api.example.com/x")
        let upgrade = self.policy.decide(Hops.hop("http://api.example.com/", location: "https://api.example.com/"))
        #expect(upgrade.follow?.changesOrigin == true)
        let sideways = self.policy.decide(
            Hops.hop("http://api.example.com:8080/", location: "https://api.example.com/")
        )
        #expect(sideways.refusal?.reason == .portChange(from: 8080, to: 443))
        // Even with http allowed, https to http needs the dangerous opt-in.
        #expect(
            lenient.decide(Hops.hop("https://api.example.com/", location: "http://api.example.com/")).refusal?.reason
                == .schemeDowngrade
        )
    }

    @Test("the https-to-http opt-in follows the downgrade and reports it every time")
    func downgradeOptIn() throws {
        var policy = self.policy
        policy.allowsHTTPSToHTTP = true
        let hop = Hops.hop("https://api.example.com/", location: "http://api.example.com/plain")
        let follow = try #require(policy.decide(hop).follow)
        #expect(follow.isDowngrade)
        #expect(follow.changesOrigin)
        #expect(Hops.names(follow.headers) == ["accept"])
        let events = RedirectRecord(url: hop.request.url, status: 302, decision: .follow(follow)).securityEvents(
            requestID: 7
        )
        #expect(
            events.map(\.shortDescription) == [
                "insecure_option_used:https_to_http_redirect", "credential_stripped:origin_change", "redirect_followed",
            ]
        )
        #expect(events.allSatisfy { $0.requestID == 7 && $0.host == "api.example.com" })
        #expect(events[0].details[.to]?.text == "http://api.example.com/plain")
    }

    // MARK: Handler

    @Test("a handler may follow, refuse or modify, but cannot lift a rule")
    func handler() throws {
        var policy = self.policy
        policy.handler = { hop, follow in
            switch hop.request.url.path() {
            case "/refuse": return .refuse("not on Sundays")
            case "/modify":
                var modified = follow
                modified.headers.append(HeaderField(name: "X-Hop", value: String(hop.number)))
                return .modify(modified)
            case "/sneak":
                var modified = follow
                modified.headers.append(HeaderField(name: "Authorization", value: "Bearer secret-again"))
                return .modify(modified)
            case "/evil":
                var modified = follow
                modified.url = URL(string: "https://evil.com/")!
                return .modify(modified)
            default: return .follow
            }
        }
        let refused = policy.decide(Hops.hop("https://api.example.com/refuse", location: "/x"))
        #expect(refused.refusal?.reason == .refusedByHandler(detail: "not on Sundays"))
        #expect(refused.refusal?.shortDescription == "refused_by_handler")
        let modified = try #require(policy.decide(Hops.hop("https://api.example.com/modify", location: "/x")).follow)
        #expect(modified.headers.last == HeaderField(name: "X-Hop", value: "1"))
        let sneak = try #require(
            policy.decide(Hops.hop("https://api.example.com/sneak", location: "https://cdn.example.com/")).follow
        )
        #expect(!sneak.headers.contains { $0.lowercasedName == "authorization" })
        let evil = policy.decide(Hops.hop("https://api.example.com/evil", location: "/x"))
        #expect(evil.refusal?.reason == .hostNotAllowed(host: "evil.com"))
        #expect(policy.decide(Hops.hop("https://api.example.com/other", location: "/x")).follow != nil)
    }

    // MARK: Events and output formats

    @Test("a refusal is one event naming from, to and why, without secrets")
    func refusalEvent() throws {
        let hop = Hops.hop(
            "https://api.example.com/login?token=secret",
            location: "https://evil.com/steal?token=secret"
        )
        let decision = self.policy.decide(hop)
        let events = RedirectRecord(url: hop.request.url, status: 302, decision: decision).securityEvents(requestID: 3)
        let event = try #require(events.first)
        #expect(events.count == 1)
        #expect(event.kind == .redirectRefused)
        #expect(event.shortDescription == "redirect_refused:host_not_allowed")
        #expect(event.host == "api.example.com")
        #expect(event.details[.from]?.text == "https://api.example.com/login")
        #expect(event.details[.to]?.text == "https://evil.com/steal")
        #expect(
            event.message == "redirect (302) from https://api.example.com/login to https://evil.com/steal refused: "
                + "the host evil.com is not in the redirect allowlist"
        )
        #expect(
            !String(describing: event).contains("secret")
                && !event.details.values.contains { $0.description.contains("secret") }
        )
    }

    @Test("JSON: one object, keys in the documented order")
    func json() throws {
        let hop = Hops.hop(
            "https://api.example.com/a",
            location: "https://cdn.example.com/b?q=\"x\"",
            method: "POST",
            headers: Hops.credentials + [
                HeaderField(name: "X-Multi", value: "1"), HeaderField(name: "x-multi", value: "2"),
                HeaderField(name: "Content-Type", value: "text/plain"),
            ],
            body: .replayable
        )
        #expect(
            self.policy.decide(hop).json == """
                {"decision":"follow","url":"https://cdn.example.com/b?q=%22x%22","method":"GET",\
                "headers":{"accept":"application/json","x-multi":"1, 2"},\
                "stripped":["authorization","cookie","proxy-authorization","content-type"]}
                """
        )
        let refused = self.policy.decide(Hops.hop("https://api.example.com/", location: "/a\r\nb"))
        #expect(
            refused.json == """
                {"decision":"refuse","reason":"control_character",\
                "detail":"the Location holds a control or invisible formatting character (U+000D)"}
                """
        )
        let object = try JSONSerialization.jsonObject(with: Data(self.policy.decide(hop).json.utf8)) as? [String: Any]
        #expect(object?["decision"] as? String == "follow")
        #expect(
            RedirectDecision.follow(
                RedirectFollow(
                    url: URL(string: "https://a.test/")!,
                    method: "GET",
                    headers: [
                        HeaderField(name: "X", value: "tab\there \"q\" \\ \u{1}")
                    ]
                )
            ).json.contains(#""x":"tab\there \"q\" \\ \u0001""#)
        )
    }
}
