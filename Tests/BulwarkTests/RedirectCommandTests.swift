import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing

/// `bulwark redirect-check` and the redirect lines of `bulwark fetch`, run as the built executable.
@Suite("The bulwark redirect-check command and fetch's redirect lines", .tags(.externalPeers))
struct RedirectCommandTests {
    static let from = "https://api.example.com/login?next=1"

    /// Runs `bulwark redirect-check ARGUMENTS`.
    static func check(_ arguments: [String]) async throws -> CLI.Result {
        try await CLI.run(["redirect-check"] + arguments)
    }

    struct JSONCase: Sendable, CustomTestStringConvertible {
        let name: String
        let arguments: [String]
        let status: Int32
        let json: String
        var testDescription: String { self.name }
    }

    static let jsonCases: [JSONCase] = [
        JSONCase(
            name: "cross-origin 302 of a POST: GET, credentials and body headers stripped",
            arguments: [
                "--allow", "*.example.com", "--from", Self.from, "--location", "https://cdn.example.com/a?b=c",
                "--method", "POST", "--header", "Authorization: Bearer t0ken", "--header", "Content-Type: text/plain",
                "--header", "Accept: */*", "--header", "Cookie: s=1",
            ],
            status: 0,
            json:
                #"{"decision":"follow","url":"https://cdn.example.com/a?b=c","method":"GET","#
                + #""headers":{"accept":"*/*"},"stripped":["authorization","content-type","cookie"]}"#
        ),
        JSONCase(
            name: "same-origin 307 of a POST keeps everything",
            arguments: [
                "--from", Self.from, "--location", "/v2/login", "--status", "307", "--method", "POST",
                "--header", "Authorization: Bearer t0ken", "--header", "Content-Type: text/plain",
            ],
            status: 0,
            json:
                #"{"decision":"follow","url":"https://api.example.com/v2/login","method":"POST","#
                + #""headers":{"authorization":"Bearer t0ken","content-type":"text/plain"},"stripped":[]}"#
        ),
        JSONCase(
            name: "303 of a PUT becomes GET",
            arguments: ["--from", Self.from, "--location", "done", "--status", "303", "--method", "PUT"],
            status: 0,
            json:
                #"{"decision":"follow","url":"https://api.example.com/done","method":"GET","headers":{},"stripped":[]}"#
        ),
        JSONCase(
            name: "host outside the allowlist",
            arguments: [
                "--allow", "*.example.com", "--allow", "cdn.example.net", "--from", Self.from, "--location",
                "https://evil.example.org/?t=1",
            ],
            status: 1,
            json:
                #"{"decision":"refuse","reason":"host_not_allowed","#
                + #""detail":"the host evil.example.org is not in the redirect allowlist"}"#
        ),
        JSONCase(
            name: "several patterns after one --allow",
            arguments: [
                "--allow", "a.example.net", "b.example.net", "--from", Self.from, "--location",
                "https://b.example.net/",
            ],
            status: 0,
            json: #"{"decision":"follow","url":"https://b.example.net/","method":"GET","headers":{},"stripped":[]}"#
        ),
        JSONCase(
            name: "no --location: the response had no Location",
            arguments: ["--from", Self.from],
            status: 1,
            json: #"{"decision":"refuse","reason":"missing_location","detail":"the response has no Location header"}"#
        ),
        JSONCase(
            name: "empty Location",
            arguments: ["--from", Self.from, "--location", ""],
            status: 1,
            json: #"{"decision":"refuse","reason":"empty_location","detail":"the Location header is empty"}"#
        ),
        JSONCase(
            name: "CRLF injection",
            arguments: ["--from", Self.from, "--location", "/x\r\nSet-Cookie: a=b"],
            status: 1,
            json:
                #"{"decision":"refuse","reason":"control_character","#
                + #""detail":"the Location holds a control or invisible formatting character (U+000D)"}"#
        ),
        JSONCase(
            name: "userinfo confusion",
            arguments: ["--from", Self.from, "--location", "https://api.example.com@evil.example/"],
            status: 1,
            json:
                #"{"decision":"refuse","reason":"userinfo","#
                + #""detail":"the Location carries user information (user:password@), which is never followed"}"#
        ),
        JSONCase(
            name: "downgrade",
            arguments: ["--from", Self.from, "--location", "http://api.example.com/"],
            status: 1,
            json:
                #"{"decision":"refuse","reason":"scheme_downgrade","#
                + #""detail":"a redirect from https to http is refused: "#
                + #"the rest of the exchange would travel unencrypted"}"#
        ),
        JSONCase(
            name: "304 is not a redirect",
            arguments: ["--from", Self.from, "--location", "/x", "--status", "304"],
            status: 1,
            json:
                #"{"decision":"refuse","reason":"not_a_redirect","#
                + #""detail":"status 304 is not a redirect; only 301, 302, 303, 307 and 308 are followed"}"#
        ),
        JSONCase(
            name: "hop 5 is followed",
            arguments: ["--from", Self.from, "--location", "/x", "--hop", "5"],
            status: 0,
            json: #"{"decision":"follow","url":"https://api.example.com/x","method":"GET","headers":{},"stripped":[]}"#
        ),
        JSONCase(
            name: "hop 6 is over the limit",
            arguments: ["--from", Self.from, "--location", "/x", "--hop", "6"],
            status: 1,
            json: #"{"decision":"refuse","reason":"too_many_hops","detail":"more than 5 redirects"}"#
        ),
        JSONCase(
            name: "loop (fragment only)",
            arguments: ["--from", Self.from, "--location", "#again"],
            status: 1,
            json:
                #"{"decision":"refuse","reason":"loop","#
                + #""detail":"https://api.example.com/login was already requested in this chain "#
                + #"(a redirect loop)"}"#
        ),
        JSONCase(
            name: "port change, then listed",
            arguments: ["--from", Self.from, "--location", "https://api.example.com:8443/"],
            status: 1,
            json:
                #"{"decision":"refuse","reason":"port_change","#
                + #""detail":"the port changes from 443 to 8443, which is not an allowed redirect port"}"#
        ),
        JSONCase(
            name: "listed port: origin changes, credentials stripped",
            arguments: [
                "--from", Self.from, "--location", "https://api.example.com:8443/", "--allow-port", "8443", "--header",
                "Authorization: x",
            ],
            status: 0,
            json:
                #"{"decision":"follow","url":"https://api.example.com:8443/","method":"GET","headers":{},"#
                + #""stripped":["authorization"]}"#
        ),
        JSONCase(
            name: "quotes and backslashes in values are escaped",
            arguments: ["--from", Self.from, "--location", "/x", "--header", #"X-Quote: a "b" \c"#],
            status: 0,
            json:
                #"{"decision":"follow","url":"https://api.example.com/x","method":"GET","#
                + #""headers":{"x-quote":"a \"b\" \\c"},"stripped":[]}"#
        ),
    ]

    @Test("--json prints exactly one object and exits 0 to follow, 1 to refuse", arguments: Self.jsonCases)
    func json(_ testCase: JSONCase) async throws {
        let result = try await Self.check(testCase.arguments + ["--json"])
        #expect(result.status == testCase.status, "\(result.stderr)")
        #expect(result.stdout == testCase.json + "\n")
        #expect(result.stderr.isEmpty)
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        #expect(object?["decision"] as? String == (testCase.status == 0 ? "follow" : "refuse"))
    }

    @Test("without --json the decision is printed in words")
    func text() async throws {
        let follow = try await Self.check([
            "--from", Self.from, "--location", "https://cdn.example.com/", "--allow", "cdn.example.com",
            "--header", "Authorization: x", "--header", "Accept: y",
        ])
        #expect(follow.status == 0)
        #expect(follow.stdout == "follow: GET https://cdn.example.com/\n  kept: accept\n  stripped: authorization\n")
        let refuse = try await Self.check(["--from", Self.from, "--location", "javascript:alert(1)"])
        #expect(refuse.status == 1)
        #expect(
            refuse.stdout == """
                refuse (scheme_not_allowed): the scheme "javascript" is not allowed for redirects
                  from: https://api.example.com/login
                  to: javascript:alert(1)

                """
        )
    }

    @Test(
        "bad arguments exit 2 and print nothing on standard output",
        arguments: [
            [String](),
            ["--location", "/x"],
            ["--from"],
            ["--from", Self.from, "--status", "abc"],
            ["--from", Self.from, "--status", "99"],
            ["--from", Self.from, "--hop", "0"],
            ["--from", Self.from, "--allow", "a*.example.com"],
            ["--from", "ftp://example.com/"],
            ["--from", "https://user:pw@example.com/"],
            ["--from", "not a url"],
            ["--from", Self.from, "--header", "no colon"],
            ["--from", Self.from, "--method", "GE T"],
            ["--from", Self.from, "--allow-port", "70000"],
            ["--from", Self.from, "--bogus"],
        ]
    )
    func badArguments(_ arguments: [String]) async throws {
        let result = try await Self.check(arguments + ["--json"])
        #expect(result.status == 2, "\(arguments): \(result.stdout) \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix("bulwark redirect-check: "))
    }

    @Test("--help describes the JSON format and exit statuses")
    func help() async throws {
        let result = try await Self.check(["--help"])
        #expect(result.status == 0)
        let follow = #"{"decision":"follow","url":…,"method":…,"headers":{…},"stripped":[…]}"#
        #expect(result.stdout.contains(follow))
        #expect(result.stdout.contains(#"{"decision":"refuse","reason":LABEL,"detail":SENTENCE}"#))
        #expect(result.stdout.contains("Exit status: 0 follow, 1 refuse, 2 bad arguments."))
    }

    @Test("bulwark fetch prints every hop with its verdict on standard error")
    func fetchPrintsHops() async throws {
        let chain = try TestChain.make(host: Harness.host)
        let server = try await Harness.server(chain, alpn: ["http/1.1"])
        defer { Task { try? await server.shutdown() } }
        let root = try CLI.write(chain.root.certificatePEM, name: "root.pem")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let trust = ["--ca", root, "--resolve", "\(Harness.host):\(server.port):127.0.0.1"]
        let base = "https://\(Harness.host):\(server.port)"

        let followed = try await CLI.run(
            [
                "fetch",
                Harness.url(
                    server,
                    RedirectHarness.redirect(302, to: RedirectHarness.redirect(308, to: "/hello?q=secret"))
                ),
            ]
                + trust
        )
        #expect(followed.status == 0, "\(followed.stderr)")
        #expect(followed.stdout == "hello")
        let lines = followed.stderr.split(separator: "\n").map(String.init)
        #expect(
            Array(lines.prefix(2)) == [
                "redirect 1: 302 \(base)/redirect/302 -> GET \(base)/redirect/308: follow",
                "redirect 2: 308 \(base)/redirect/308 -> GET \(base)/hello: follow",
            ]
        )
        #expect(!followed.stderr.contains("secret"))

        let refused = try await CLI.run(
            ["fetch", Harness.url(server, RedirectHarness.redirect(301, to: "https://elsewhere.example/"))] + trust
        )
        #expect(refused.status == 8)
        #expect(
            refused.stderr.hasPrefix(
                "redirect 1: 301 \(base)/redirect/301 -> https://elsewhere.example/: refused (host_not_allowed): "
                    + "the host elsewhere.example is not in the redirect allowlist\n"
            )
        )
        #expect(refused.stderr.contains("bulwark fetch: redirect_refused (\(Harness.host)): redirect (301) from"))

        let limited = try await CLI.run(
            ["fetch", Harness.url(server, RedirectHarness.chain(of: 2, to: "/hello")), "--max-redirects", "1"] + trust
        )
        #expect(limited.status == 8)
        #expect(limited.stderr.contains("redirect 2: 302"))
        #expect(limited.stderr.contains("refused (too_many_hops): more than 1 redirect"))
        #expect(
            server.requests.map(\.path) == [
                "/redirect/302", "/redirect/308", "/hello", "/redirect/301", "/redirect/302", "/redirect/302",
            ]
        )
    }
}
