import BulwarkTestHelpers
import BulwarkTestSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import Bulwark

/// A request head that HTTP cannot carry (a line break in a field's value, a name that is not a token, a method with a
/// space) is the caller's mistake, and a way to smuggle a second request or a header into the first. It is refused
/// before any byte of it is sent, as `invalid_request`, naming the field but never showing a value (which may be a
/// credential), on either protocol; the connection stays usable.
@Suite("Request heads HTTP cannot carry, against local HTTPS servers")
struct RequestHeadCheckTests {
    let chain: TestChain
    let evaluator: DefaultTrustEvaluator

    init() throws {
        self.chain = try TestChain.make(host: Harness.host)
        self.evaluator = DefaultTrustEvaluator(roots: .custom([chain.root.certificate]))
    }

    static let refusedHeads: [(what: String, method: HTTPMethod, fields: [(String, String)])] = [
        ("a value with CR LF", .GET, [("X-Note", "a\r\nx-injected: s3cret")]),
        ("a value with LF", .GET, [("X-Note", "a\nx-injected: s3cret")]),
        ("a value with NUL", .GET, [("X-Note", "s3cret\u{0}")]),
        ("a name that is not a token", .GET, [("X-Note: s3cret", "a")]),
        ("an empty name", .GET, [("", "s3cret")]),
        ("a method with a space", .RAW(value: "GET /s3cret"), [("X-Note", "a")]),
    ]

    @Test(arguments: [["http/1.1"], ["h2"]])
    func aHeadHTTPCannotCarryIsRefusedBeforeItIsSent(alpn: [String]) async throws {
        let server = try await Harness.server(chain, alpn: alpn)
        let client = try Harness.client(for: server, evaluator: evaluator)
        // One request first, so that the connection is open and the refusals below meet it.
        _ = try await Harness.get(client, Harness.url(server, "/hello"))
        for (what, method, fields) in Self.refusedHeads {
            let request = BulwarkRequest(
                url: Harness.url(server, "/hello"),
                method: method,
                headers: HTTPHeaders(fields)
            )
            let error = await Harness.expectError(.invalidRequest) { _ = try await client.execute(request) }
            let shown = String(describing: error as Any) + String(reflecting: error as Any)
            #expect(!shown.contains("s3cret"), "\(what): \(shown)")
            #expect(shown.contains("request"), "\(what): \(shown)")
        }
        // Nothing of them reached the server, and the connection is still the one in use.
        let (_, body) = try await Harness.get(client, Harness.url(server, "/hello"))
        #expect(body == "hello")
        #expect(server.requests.count == 2)
        #expect(server.acceptedConnections == 1)
        await client.shutdown()
        try await server.shutdown()
    }

    /// helper-24's finding: the first version refused the head but still ran a streamed body's producer, whose chunks
    /// went out headless on the connection (idle again, or handed to the next request), so that a body holding a whole
    /// request was sent as one. Nothing of the request may reach the server: not its head, not a byte of its body.
    @Test(arguments: [["http/1.1"], ["h2"]])
    func aStreamedBodyOfARefusedHeadIsNeverSent(alpn: [String]) async throws {
        let server = try await Harness.server(chain, alpn: alpn)
        let client = try Harness.client(for: server, evaluator: evaluator)
        _ = try await Harness.get(client, Harness.url(server, "/hello"))
        let bytesBefore = server.receivedApplicationBytes
        let smuggled = ByteBuffer(string: "GET /smuggled HTTP/1.1\r\nHost: \(Harness.host)\r\n\r\n")
        let produced = NIOLockedValueBox(0)
        let request = BulwarkRequest(
            url: Harness.url(server, "/upload"),
            method: .POST,
            headers: ["X-User": "alice\r\nx-injected: 1"],
            body: .stream(length: smuggled.readableBytes) { writer in
                produced.withLockedValue { $0 += 1 }
                try await writer.write(smuggled)
            }
        )
        await Harness.expectError(.invalidRequest) { _ = try await client.execute(request) }
        // Whatever a producer would have written has had time to arrive.
        try await Task.sleep(for: .milliseconds(300))
        #expect(produced.withLockedValue { $0 } == 0, "the producer ran")
        if alpn == ["http/1.1"] {
            // (An HTTP/2 connection also carries control frames, a SETTINGS acknowledgement or a WINDOW_UPDATE, whose
            // time is not this test's; there no request and no producer run are what is counted.)
            #expect(server.receivedApplicationBytes == bytesBefore)
        }
        _ = try await Harness.get(client, Harness.url(server, "/hello"))
        #expect(server.requests.map(\.path) == ["/hello", "/hello"])
        await client.shutdown()
        try await server.shutdown()
    }

    /// The refusal names the field (quoted) whose value cannot be sent.
    @Test(arguments: [["http/1.1"], ["h2"]])
    func theRefusalNamesTheField(alpn: [String]) async throws {
        let server = try await Harness.server(chain, alpn: alpn)
        let client = try Harness.client(for: server, evaluator: evaluator)
        let request = BulwarkRequest(
            url: Harness.url(server, "/hello"),
            headers: ["X-Trace-Note": "a\r\nx-injected: s3cret"]
        )
        let error = await Harness.expectError(.invalidRequest) { _ = try await client.execute(request) }
        #expect(String(describing: error as Any).contains("\"X-Trace-Note\""), "\(error as Any)")
        await client.shutdown()
        try await server.shutdown()
    }
}

/// Bulwark's HTTP/1.1 connections leave NIOHTTP1's check of sent heads out; `HTTP1RequestHeadCheck` takes its place.
/// It must refuse every head NIOHTTP1's validator refuses, and the three it let through (an empty field name, sent as
/// `: value`, an empty target, sent as `GET  HTTP/1.1`, and an empty method), and nothing else.
@Suite("The HTTP/1.1 request head check against NIOHTTP1's validator")
struct HTTP1RequestHeadCheckTests {
    static let methods: [HTTPMethod] = [
        .GET, .POST, .CONNECT, .RAW(value: "PATCH"), .RAW(value: "X-Custom_1"), .RAW(value: "GE T"), .RAW(value: ""),
        .RAW(value: "GET\r\n"), .RAW(value: "M\u{C9}THOD"), .RAW(value: "GET:"),
    ]
    static let targets = [
        "/", "/a?b=c&d=%20", "", "*", "http://h.example:1/x", "h.example:443", "/a b", "/a\r\nb", "/a\tb", "/\u{E4}",
        "/\"q\"", "/{x}", "/a\u{7F}", "/a|b", "/a\\b", "/a^b", "/a`b", "/<x>", "/[::1]@!$&'()*+,;=~",
    ]
    static let names = ["x-a", "X-Trace_ID.1", "", "x a", "x:a", "x\r\n", "\u{E4}", "x\u{0}", "x\"", "x(a)", "x/a"]
    static let values = [
        "", "v", "a\tb", "a b", "a\r\nb", "a\nb", "a\rb", "a\u{0}", "a\u{1}", "a\u{1F}", "a\u{7F}", "\u{E4}\u{1F600}",
        " lead", "trail\t", "\"quoted\"",
    ]

    /// Whether NIOHTTP1's validator lets `head` through.
    static func nioAccepts(_ head: HTTPRequestHead, on channel: EmbeddedChannel) throws -> Bool {
        let promise = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(HTTPClientRequestPart.head(head), promise: promise)
        let accepted: Bool
        do {
            try promise.futureResult.wait()
            accepted = true
        } catch {
            accepted = false
            _ = try? channel.throwIfErrorCaught()
        }
        while try channel.readOutbound(as: HTTPClientRequestPart.self) != nil {}
        return accepted
    }

    @Test("every head of methods x targets x one field: refused exactly when NIOHTTP1 refuses it, or when empty")
    func theCheckRefusesWhatNIOHTTP1Refuses() throws {
        let channel = EmbeddedChannel(handler: NIOHTTPRequestHeadersValidator())
        defer { _ = try? channel.finish() }
        var compared = 0
        var emptyParts = 0
        for method in Self.methods {
            for target in Self.targets {
                for name in Self.names {
                    for value in Self.values {
                        let head = HTTPRequestHead(
                            version: .http1_1,
                            method: method,
                            uri: target,
                            headers: HTTPHeaders([("host", "h.example"), (name, value)])
                        )
                        let nio = try Self.nioAccepts(head, on: channel)
                        let bulwark = HTTP1RequestHeadCheck.problem(in: head) == nil
                        compared += 1
                        if (name.isEmpty || target.isEmpty || method == .RAW(value: "")) && nio {
                            // NIOHTTP1 asks that every byte be allowed, which an empty name, target or method passes.
                            emptyParts += 1
                            #expect(!bulwark, "sent: \(method) \(target.debugDescription) \(name.debugDescription)")
                            continue
                        }
                        #expect(
                            bulwark == nio,
                            "\(method) \(target.debugDescription) \(name.debugDescription): \(value.debugDescription)"
                        )
                    }
                }
            }
        }
        #expect(compared == Self.methods.count * Self.targets.count * Self.names.count * Self.values.count)
        #expect(emptyParts > 0, "the table no longer holds a head NIOHTTP1 lets through with an empty part")
    }

    /// A refusal never shows a value, nor a name that is not a token; it names a token field, quoted.
    @Test func theWordsShowNoValue() {
        func problem(_ method: HTTPMethod, _ target: String, _ fields: [(String, String)]) -> String {
            HTTP1RequestHeadCheck.problem(
                in: HTTPRequestHead(version: .http1_1, method: method, uri: target, headers: HTTPHeaders(fields))
            ) ?? "accepted"
        }
        let authorization = problem(.GET, "/", [("Authorization", "Bearer s3cret\r\nx: 1")])
        #expect(authorization.contains("\"Authorization\""))
        #expect(!authorization.contains("s3cret"))
        #expect(!problem(.GET, "/", [("Authorization: Bearer s3cret", "x")]).contains("s3cret"))
        #expect(!problem(.RAW(value: "GET /s3cret"), "/", []).contains("s3cret"))
        #expect(!problem(.GET, "/s3cret x", []).contains("s3cret"))
        #expect(problem(.GET, "", []) == "the request's target is empty")
        #expect(problem(.GET, "/", [("x-a", "ok\tfine \u{E4}")]) == "accepted")
    }
}
