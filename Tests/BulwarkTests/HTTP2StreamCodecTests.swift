import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import NIOHTTPCompression
import Testing

@testable import Bulwark

/// The HTTP/2 stream codec on an `EmbeddedChannel`: credential fields go out never indexed, and for every request
/// and response below it gives what NIOHTTP2's `HTTP2FramePayloadToHTTP1ClientCodec` gave (which it replaced),
/// except where it is stricter on purpose.
@Suite("The HTTP/2 stream codec")
struct HTTP2StreamCodecTests {
    static let long = "x-" + String(repeating: "credential-", count: 7)
    static let sensitive: Set<String> = ["authorization", "cookie", "proxy-authorization", Self.long]

    // MARK: Credentials never indexed

    func written(_ fields: [(String, String)]) throws -> [(name: String, indexing: HPACKIndexing)] {
        let channel = EmbeddedChannel(handler: HTTP2StreamCodec(sensitiveNames: Self.sensitive, host: "example.com"))
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")
        head.headers.add(contentsOf: fields)
        try channel.writeOutbound(HTTPClientRequestPart.head(head))
        try channel.writeOutbound(HTTPClientRequestPart.end(nil))
        guard case .headers(let payload) = try channel.readOutbound(as: HTTP2Frame.FramePayload.self) else {
            Issue.record("no HEADERS payload went out")
            return []
        }
        _ = try channel.finish()
        return payload.headers.map { ($0.name, $0.indexable) }
    }

    @Test func credentialFieldsGoOutNeverIndexedAndNothingElse() throws {
        let fields = try self.written([
            ("host", "example.com"), ("Authorization", "Bearer secret"), ("x-abcdefghijk", "same length"),
            ("cookie", "a=b"), ("accept", "*/*"), (Self.long, "long name"),
            ("x-" + String(repeating: "other-", count: 12), "long too"),
        ])
        let neverIndexed = fields.filter { $0.indexing == .neverIndexed }.map(\.name)
        #expect(neverIndexed == ["authorization", "cookie", Self.long])
        #expect(fields.count == 10)
    }

    @Test func aRequestWithoutCredentialsIsAllIndexable() throws {
        let fields = try self.written([("host", "example.com"), ("accept", "*/*")])
        #expect(fields.map(\.name) == [":path", ":method", ":scheme", ":authority", "accept"])
        #expect(fields.allSatisfy { $0.indexing == .indexable })
    }

    // MARK: The same frames as NIOHTTP2's codec

    /// What a channel wrote, one line per payload (`HEADERS end` and the fields in order, or `DATA end` and the
    /// bytes), and how each write's promise ended.
    static func frames(
        through handler: any ChannelHandler,
        _ parts: [HTTPClientRequestPart],
        flushAfter: Set<Int> = []
    ) throws -> (frames: [String], promises: [String]) {
        let channel = EmbeddedChannel(handler: handler)
        var promises: [EventLoopFuture<Void>] = []
        for (index, part) in parts.enumerated() {
            let promise = channel.eventLoop.makePromise(of: Void.self)
            promises.append(promise.futureResult)
            channel.write(part, promise: promise)
            if flushAfter.contains(index) { channel.flush() }
        }
        channel.flush()
        var frames: [String] = []
        while let payload = try channel.readOutbound(as: HTTP2Frame.FramePayload.self) {
            switch payload {
            case .headers(let headers):
                frames.append(
                    "HEADERS end=\(headers.endStream) "
                        + headers.headers.map { "\($0.name)=\($0.value)" }.joined(
                            separator: " "
                        )
                )
            case .data(let data):
                guard case .byteBuffer(let buffer) = data.data else {
                    frames.append("DATA fileRegion")
                    continue
                }
                frames.append("DATA end=\(data.endStream) \(String(buffer: buffer))")
            default:
                frames.append("other")
            }
        }
        let outcomes = promises.map { future -> String in
            var outcome = "pending"
            future.whenComplete { outcome = (try? $0.get()) != nil ? "ok" : "failed" }
            return outcome
        }
        _ = try? channel.finish()
        return (frames, outcomes)
    }

    static func head(_ fields: [(String, String)]) -> HTTPRequestHead { Self.head(.GET, fields) }

    static func head(_ method: HTTPMethod, _ fields: [(String, String)]) -> HTTPRequestHead {
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: "/items?q=1")
        head.headers.add(contentsOf: fields)
        return head
    }

    static func body(_ text: String) -> HTTPClientRequestPart { .body(.byteBuffer(ByteBuffer(string: text))) }

    static let requests: [(name: String, parts: [HTTPClientRequestPart], flushAfter: Set<Int>)] = [
        ("a GET", [.head(Self.head([("host", "example.com"), ("accept", "*/*")])), .end(nil)], []),
        (
            "names lower-cased, Host anywhere and in capitals",
            [.head(Self.head([("Accept", "*/*"), ("HOST", "example.com:8443"), ("X-Trace-ID", "7")])), .end(nil)],
            []
        ),
        (
            "connection-specific fields left out",
            [
                .head(
                    Self.head([
                        ("host", "example.com"), ("Connection", "keep-alive, x-hop"), ("Keep-Alive", "timeout=5"),
                        ("proxy-connection", "close"), ("Upgrade", "h2c"), ("transfer-encoding", "chunked"),
                        ("x-hop", "1"), ("x-stays", "2"), ("te", "trailers"),
                    ])
                ),
                .end(nil),
            ],
            []
        ),
        (
            "repeated fields keep their order",
            [
                .head(Self.head([("host", "a"), ("x-b", "1"), ("x-a", "2"), ("x-b", "3")])), .end(nil),
            ], []
        ),
        (
            "a POST with one body part",
            [
                .head(Self.head(.POST, [("host", "example.com"), ("content-length", "5")])), Self.body("hello"),
                .end(nil),
            ], []
        ),
        (
            "a body in three parts",
            [
                .head(Self.head(.PUT, [("host", "example.com")])), Self.body("a"), Self.body("bb"), Self.body("ccc"),
                .end(nil),
            ], []
        ),
        (
            "a flush after the head",
            [
                .head(Self.head(.POST, [("host", "example.com")])), Self.body("late"), .end(nil),
            ], [0]
        ),
        (
            "a flush after every part",
            [
                .head(Self.head(.POST, [("host", "example.com")])), Self.body("x"), Self.body("y"), .end(nil),
            ], [0, 1, 2]
        ),
        (
            "trailers after the head",
            [
                .head(Self.head(.POST, [("host", "example.com")])), .end(["X-Checksum": "abc", "Connection": "close"]),
            ], []
        ),
        (
            "trailers after a body",
            [
                .head(Self.head(.POST, [("host", "example.com")])), Self.body("data"), .end(["x-checksum": "abc"]),
            ], []
        ),
        (
            "an end on its own after a flush",
            [
                .head(Self.head(.POST, [("host", "example.com")])), Self.body("data"), .end(nil),
            ], [1]
        ),
    ]

    @Test(arguments: Self.requests.indices)
    func aRequestGoesOutAsNIOHTTP2sCodecSentIt(index: Int) throws {
        let request = Self.requests[index]
        let ours = try Self.frames(
            through: HTTP2StreamCodec(sensitiveNames: [], host: "example.com"),
            request.parts,
            flushAfter: request.flushAfter
        )
        let theirs = try Self.frames(
            through: HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https),
            request.parts,
            flushAfter: request.flushAfter
        )
        #expect(ours.frames == theirs.frames, "\(request.name)")
        #expect(ours.promises == theirs.promises, "\(request.name)")
        #expect(!ours.frames.isEmpty)
    }

    /// NIOHTTP2's codec compared a `Connection` field's tokens with the lower-cased names as written, so a token in
    /// capitals left its field in the request; any spelling names the field (RFC 9110 field names are
    /// case-insensitive).
    @Test func aConnectionTokenInCapitalsStillRemovesItsField() throws {
        let ours = try Self.frames(
            through: HTTP2StreamCodec(sensitiveNames: [], host: "example.com"),
            [.head(Self.head([("host", "example.com"), ("Connection", "X-Hop"), ("x-hop", "1")])), .end(nil)]
        )
        #expect(ours.frames == ["HEADERS end=true :path=/items?q=1 :method=GET :scheme=https :authority=example.com"])
    }

    // MARK: The same response parts as NIOHTTP2's codec

    static func parts(
        through handler: any ChannelHandler,
        method: HTTPMethod,
        _ payloads: [HTTP2Frame.FramePayload]
    ) throws -> [HTTPClientResponsePart] {
        let channel = EmbeddedChannel(handler: handler)
        try channel.writeOutbound(HTTPClientRequestPart.head(Self.head(method, [("host", "example.com")])))
        try channel.writeOutbound(HTTPClientRequestPart.end(nil))
        for payload in payloads { try channel.writeInbound(payload) }
        var parts: [HTTPClientResponsePart] = []
        while let part = try channel.readInbound(as: HTTPClientResponsePart.self) { parts.append(part) }
        _ = try? channel.finish()
        return parts
    }

    static func headers(_ fields: [(String, String)], end: Bool = false) -> HTTP2Frame.FramePayload {
        .headers(.init(headers: HPACKHeaders(fields), endStream: end))
    }

    static func data(_ text: String, end: Bool = false) -> HTTP2Frame.FramePayload {
        .data(.init(data: .byteBuffer(ByteBuffer(string: text)), endStream: end))
    }

    static let responses: [(name: String, method: HTTPMethod, payloads: [HTTP2Frame.FramePayload])] = [
        (
            "a body in two parts", .GET,
            [
                Self.headers([(":status", "200"), ("content-type", "text/plain")]), Self.data("hel"),
                Self.data("lo", end: true),
            ]
        ),
        (
            "a length given", .GET,
            [
                Self.headers([(":status", "200"), ("content-length", "2")]), Self.data("ok", end: true),
            ]
        ),
        ("no body: the HEADERS end the stream", .GET, [Self.headers([(":status", "404")], end: true)]),
        ("an empty DATA ends it", .GET, [Self.headers([(":status", "200")]), Self.data("", end: true)]),
        (
            "informational heads first", .POST,
            [
                Self.headers([(":status", "100")]), Self.headers([(":status", "103"), ("link", "</a.css>")]),
                Self.headers([(":status", "201"), ("location", "/items/1")], end: true),
            ]
        ),
        (
            "trailers", .GET,
            [
                Self.headers([(":status", "200")]), Self.data("body"),
                Self.headers([("x-checksum", "abc")], end: true),
            ]
        ),
        ("a HEAD", .HEAD, [Self.headers([(":status", "200"), ("etag", "\"1\"")], end: true)]),
        ("204 and 304 get no length", .GET, [Self.headers([(":status", "204")], end: true)]),
        ("304", .GET, [Self.headers([(":status", "304")], end: true)]),
        (
            "frames without an HTTP/1 counterpart pass by", .GET,
            [
                Self.headers([(":status", "200")]), .windowUpdate(windowSizeIncrement: 10), Self.data("x", end: true),
            ]
        ),
    ]

    @Test(arguments: Self.responses.indices)
    func aResponseReadsAsNIOHTTP2sCodecReadIt(index: Int) throws {
        let response = Self.responses[index]
        let ours = try Self.parts(
            through: HTTP2StreamCodec(sensitiveNames: [], host: "example.com"),
            method: response.method,
            response.payloads
        )
        // Informational heads stop at Bulwark's codec (see its documentation); NIOHTTP2's passed them on.
        let theirs = try Self.parts(
            through: HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https),
            method: response.method,
            response.payloads
        ).filter { part in
            guard case .head(let head) = part else { return true }
            return head.status.code >= 200
        }
        #expect(ours == theirs, "\(response.name)")
        #expect(!ours.isEmpty)
        for case .head(let head) in ours { #expect(head.version == .http2) }
    }

    // MARK: Refusals

    /// What the codec does with `payloads` after a GET went out: the parts it passed on and the error it raised.
    static func refusal(
        _ payloads: [HTTP2Frame.FramePayload]
    ) throws -> (parts: [HTTPClientResponsePart], error: BulwarkError?, closed: Bool) {
        let channel = EmbeddedChannel(handler: HTTP2StreamCodec(sensitiveNames: [], host: "example.com"))
        try channel.connect(to: .init(ipAddress: "127.0.0.1", port: 443)).wait()
        try channel.writeOutbound(HTTPClientRequestPart.head(Self.head([("host", "example.com")])))
        try channel.writeOutbound(HTTPClientRequestPart.end(nil))
        var refusal: BulwarkError?
        for payload in payloads {
            // After the refusal the channel is closed, and writing to it throws what EmbeddedChannel throws.
            do { try channel.writeInbound(payload) } catch { refusal = refusal ?? (error as? BulwarkError) }
        }
        var parts: [HTTPClientResponsePart] = []
        while let part = try channel.readInbound(as: HTTPClientResponsePart.self) { parts.append(part) }
        let closed = !channel.isActive
        _ = try? channel.finish()
        return (parts, refusal, closed)
    }

    @Test func bodyBytesBeforeTheHeadAreAnInvalidResponse() throws {
        let outcome = try Self.refusal([Self.data("smuggled"), Self.headers([(":status", "200")], end: true)])
        #expect(outcome.parts.isEmpty)
        #expect(outcome.error?.code == .invalidResponse)
        #expect(outcome.closed)
    }

    @Test func aHeaderBlockAfterTheEndIsAnInvalidResponse() throws {
        let outcome = try Self.refusal([
            Self.headers([(":status", "200")], end: true), Self.headers([("x-late", "1")], end: true),
        ])
        #expect(outcome.parts.count == 2)
        #expect(outcome.error?.code == .invalidResponse)
        #expect(String(describing: outcome.error).contains("after the response's end"))
    }

    @Test func aResponseWithoutAStatusIsAnInvalidResponse() throws {
        let outcome = try Self.refusal([Self.headers([("content-length", "0")], end: true)])
        #expect(outcome.parts.isEmpty)
        #expect(outcome.error?.code == .invalidResponse)
        #expect(String(describing: outcome.error).contains("without a status"))
    }

    @Test(arguments: [[("accept", "*/*")], [("host", "a.example"), ("Host", "b.example")]])
    func aHeadWithoutOneHostIsRefusedBeforeAnyFrame(fields: [(String, String)]) throws {
        let channel = EmbeddedChannel(handler: HTTP2StreamCodec(sensitiveNames: [], host: "example.com"))
        let promise = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(HTTPClientRequestPart.head(Self.head(fields)), promise: promise)
        #expect(throws: BulwarkError.self) { try promise.futureResult.wait() }
        #expect(throws: BulwarkError.self) { try channel.throwIfErrorCaught() }
        #expect(try channel.readOutbound(as: HTTP2Frame.FramePayload.self) == nil)
        _ = try? channel.finish()
    }

    @Test func asciiLowercasingCopiesOnlyWhenItMust() {
        #expect(HTTP2StreamCodec.asciiLowercased("X-Trace-ID") == "x-trace-id")
        #expect(HTTP2StreamCodec.asciiLowercased("already-lower") == "already-lower")
        #expect(HTTP2StreamCodec.asciiLowercased("\u{212A}eep-Alive") == "\u{212A}eep-alive")
        #expect(!HTTP2StreamCodec.isConnectionSpecific(HTTP2StreamCodec.asciiLowercased("\u{212A}eep-Alive")))
    }
}

/// Findings of the attack review of the codec (helper-21), each a failing test first (notes/i43-h2codec-before.log).
@Suite("The HTTP/2 stream codec under attack")
struct HTTP2StreamCodecHardeningTests {
    typealias Codec = HTTP2StreamCodecTests

    /// HTTP/2 has no 101 (RFC 9113 section 8.6); the exchange would have taken it for a final head whose body never
    /// ends.
    @Test func a101IsAnInvalidResponse() throws {
        let outcome = try Codec.refusal([Codec.headers([(":status", "101")], end: true)])
        #expect(outcome.parts.isEmpty)
        #expect(outcome.error?.code == .invalidResponse)
    }

    /// A status below 100 is no status (RFC 9110 section 15); NIOHTTP2 took it for a final one, the codec for an
    /// informational one.
    @Test(arguments: ["000", "050", "099"])
    func aStatusBelow100IsAnInvalidResponse(status: String) throws {
        let outcome = try Codec.refusal([Codec.headers([(":status", status)], end: true)])
        #expect(outcome.parts.isEmpty)
        #expect(outcome.error?.code == .invalidResponse)
    }

    /// An informational head that ends the stream is malformed (RFC 9113 section 8.1): nothing may follow it.
    @Test func anInformationalHeadThatEndsTheStreamIsAnInvalidResponse() throws {
        let outcome = try Codec.refusal([
            Codec.headers([(":status", "103")], end: true), Codec.headers([(":status", "200")], end: true),
        ])
        #expect(outcome.parts.isEmpty)
        #expect(outcome.error?.code == .invalidResponse)
    }

    /// Trailers end the stream (RFC 9113 section 8.1); a header block after the body that does not is malformed, and
    /// the exchange must not take the response for ended while the stream goes on.
    @Test func trailersThatDoNotEndTheStreamAreAnInvalidResponse() throws {
        let outcome = try Codec.refusal([
            Codec.headers([(":status", "200")]), Codec.data("body"), Codec.headers([("x-checksum", "abc")]),
        ])
        #expect(outcome.parts.count == 2)
        #expect(outcome.error?.code == .invalidResponse)
    }

    /// A field HTTP/2 cannot carry is refused before any frame, naming the field and never showing its value (NIOHTTP2
    /// refused it later, with the value in its error).
    @Test(arguments: [
        ("Authorization", "Bearer s3cret\r\nx: 1"), ("x-token", "s3cret\u{0}"), ("x-token", "s3cret\n"),
        ("bad name", "s3cret"), (":path", "/s3cret"), ("", "s3cret"),
    ])
    func aFieldHTTP2CannotCarryIsRefusedWithoutItsValue(name: String, value: String) throws {
        let error = try Self.refusal(of: Codec.head([("host", "example.com"), (name, value)]))
        #expect(!String(describing: error).contains("s3cret"))
        #expect(!String(reflecting: error).contains("s3cret"))
    }

    /// Writes `head` and flushes: records an issue when any frame went out or its write did not fail with a
    /// `BulwarkError`, and returns that error.
    static func refusal(of head: HTTPRequestHead) throws -> BulwarkError? {
        let channel = EmbeddedChannel(handler: HTTP2StreamCodec(sensitiveNames: Codec.sensitive, host: "example.com"))
        defer { _ = try? channel.finish() }
        let promise = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(HTTPClientRequestPart.head(head), promise: promise)
        #expect(try channel.readOutbound(as: HTTP2Frame.FramePayload.self) == nil)
        do {
            try promise.futureResult.wait()
            Issue.record("the head was sent")
            return nil
        } catch let error as BulwarkError {
            return error
        }
    }

    /// A payload still held when the stream goes away without an error has its promise failed, not leaked.
    @Test func aHeldWriteIsFailedWhenTheStreamCloses() throws {
        let channel = EmbeddedChannel(handler: HTTP2StreamCodec(sensitiveNames: [], host: "example.com"))
        try channel.connect(to: .init(ipAddress: "127.0.0.1", port: 443)).wait()
        let promise = channel.eventLoop.makePromise(of: Void.self)
        channel.write(HTTPClientRequestPart.head(Codec.head([("host", "example.com")])), promise: promise)
        var outcome: Result<Void, any Error>?
        promise.futureResult.whenComplete { outcome = $0 }
        _ = try? channel.finish()
        #expect(outcome != nil)
        if case .success = outcome { Issue.record("a write that never went out succeeded") }
    }

    // MARK: The second review (helper-22)

    /// Heads NIOHTTP2 refuses with the values in its error (a CONNECT's whole header block, a Host with a line break,
    /// a TE other than "trailers"): refused before any frame, the value never shown.
    @Test(arguments: [
        (HTTPMethod.CONNECT, [("host", "example.com"), ("authorization", "Bearer s3cret")]),
        (.GET, [("host", "example.com\r\nx: s3cret")]),
        (.GET, [("host", "exa mple.com"), ("x-a", "s3cret")]),
        (.GET, [("host", "example.com"), ("te", "s3cret")]),
    ])
    func aHeadNIOHTTP2RefusesIsRefusedFirst(method: HTTPMethod, fields: [(String, String)]) throws {
        let error = try Self.refusal(of: Codec.head(method, fields))
        #expect(!String(reflecting: error).contains("s3cret"))
    }

    /// An empty target would go out as an empty `:path`, which RFC 9113 section 8.3.1 forbids (NIOHTTP2 refused it
    /// while its checks of sent blocks were on; the codec is now the only check).
    @Test func anEmptyTargetIsRefusedBeforeAnyFrame() throws {
        var head = Codec.head([("host", "example.com")])
        head.uri = ""
        let error = try Self.refusal(of: head)
        #expect(error?.code == .invalidRequest)
    }

    /// A CONNECT spelled as a raw method (as `BulwarkRequest(method:)` accepts one) is a CONNECT too (helper-23 asked;
    /// NIOHTTP1's methods compare by their names, so it already was).
    @Test func aRawConnectIsRefusedBeforeAnyFrame() throws {
        let error = try Self.refusal(of: Codec.head(.RAW(value: "CONNECT"), [("host", "example.com")]))
        #expect(error?.code == .invalidRequest)
    }

    /// A field name that is not a token is not shown either: a caller who glued "Authorization: Bearer …" into a name
    /// would see the secret in the error.
    @Test func aNameThatIsNotATokenIsNotShown() throws {
        let error = try Self.refusal(of: Codec.head([("host", "example.com"), ("Authorization: Bearer s3cret", "x")]))
        #expect(!String(reflecting: error).contains("s3cret"))
    }

    /// A request part before its head (or after a refused one) has its promise failed, not dropped.
    @Test func aBodyBeforeTheHeadHasItsPromiseCompleted() throws {
        let channel = EmbeddedChannel(handler: HTTP2StreamCodec(sensitiveNames: [], host: "example.com"))
        try channel.connect(to: .init(ipAddress: "127.0.0.1", port: 443)).wait()
        let early = channel.eventLoop.makePromise(of: Void.self)
        var outcome: Result<Void, any Error>?
        early.futureResult.whenComplete { outcome = $0 }
        channel.write(Codec.body("early"), promise: early)
        channel.write(HTTPClientRequestPart.head(Codec.head([("host", "example.com")])), promise: nil)
        _ = try? channel.finish()
        #expect(outcome != nil)
        if case .success = outcome { Issue.record("a body before its head was accepted") }
    }

    /// An informational head's Content-Encoding turned NIO's decompressor on for the final response (which it never
    /// turns off before an end, and HTTP/2's informational heads have none), while the exchange read that response as
    /// not compressed: its body was inflated past `maximumSize`. Informational heads no longer reach the decompressor.
    @Test func anInformationalCodingDoesNotInflateTheFinalBody() throws {
        // The stream's handlers as HTTP2Connection.addStreamHandlers adds them, the exchange handler left out so that
        // what reaches it can be read.
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(HTTP2StreamCodec(sensitiveNames: [], host: "example.com"))
        try channel.pipeline.syncOperations.addHandler(NIOHTTPResponseDecompressor(limit: .ratio(1000)))
        try channel.writeOutbound(HTTPClientRequestPart.head(Codec.head([("host", "example.com")])))
        try channel.writeOutbound(HTTPClientRequestPart.end(nil))
        // gzip of 4,096 zero bytes.
        let gzip: [UInt8] = [
            0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0x02, 0x03, 0xed, 0xc1, 0x01, 0x0d, 0, 0, 0, 0xc2, 0xa0, 0xf7, 0x4f, 0x6d,
            0x0f, 0x07, 0x14, 0, 0, 0, 0xf0, 0x6e, 0x11, 0, 0x1c, 0xc7, 0, 0x10, 0, 0,
        ]
        try channel.writeInbound(Codec.headers([(":status", "103"), ("content-encoding", "gzip")]))
        try channel.writeInbound(Codec.headers([(":status", "200")]))
        try channel.writeInbound(
            HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(bytes: gzip)), endStream: true))
        )
        var heads: [HTTPResponseStatus] = []
        var bodyBytes = 0
        while let part = try channel.readInbound(as: HTTPClientResponsePart.self) {
            switch part {
            case .head(let head): heads.append(head.status)
            case .body(let buffer): bodyBytes += buffer.readableBytes
            case .end: break
            }
        }
        // The final response has no Content-Encoding: its body arrives as sent.
        #expect(heads == [.ok])
        #expect(bodyBytes == gzip.count)
        _ = try? channel.finish()
    }
}
