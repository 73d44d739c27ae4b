import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import Testing

@testable import Bulwark

/// A real NIOHTTP2 connection on both ends, in memory: the client's pipeline as `Connector` builds it (its connection
/// configuration, then Bulwark's stream handlers on each stream), and a server whose own checks of header blocks are
/// off, so that it sends whatever block a test gives it.
final class HTTP2InMemoryPair {
    static let host = "api.bulwark.test"
    let client = EmbeddedChannel()
    let server = EmbeddedChannel()
    let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    /// Why the connection failed, as the connection keeps it for its streams.
    let failure: NIOLockedValueBox<BulwarkError?>
    /// The requests holding the connection and whether it drains, as the connection keeps them.
    let usage: NIOLockedValueBox<HTTP2Connection.Usage>
    let serverFrames = ServerFrames()
    /// Errors the two connection pipelines raised (a stream's error is raised on its connection's pipeline too).
    var errors: [any Error] = []

    /// The frames the server's HTTP/2 handler passed on.
    final class ServerFrames: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTP2Frame
        var received: [HTTP2Frame] = []
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            self.received.append(self.unwrapInboundIn(data))
        }
    }

    /// A value set by a callback and read afterwards, all on this thread (the embedded event loop runs here): the
    /// stream's exchange handler, how the exchange ended (a response body is not `Sendable`).
    final class ThreadBox<Value>: @unchecked Sendable {
        var value: Value
        init(_ value: Value) { self.value = value }
    }

    /// With `serverChecksBlocks`, the server runs NIOHTTP2's checks of the blocks it receives (its default); with
    /// `serverMaximumStreams`, it announces that limit of concurrent streams.
    init(serverChecksBlocks: Bool = false, serverMaximumStreams: Int? = nil) throws {
        (self.multiplexer, self.failure, self.usage) = try Connector.addHTTP2Handlers(
            to: self.client.pipeline.syncOperations,
            host: Self.host,
            port: 443
        )
        try self.server.pipeline.syncOperations.addHandler(
            NIOHTTP2Handler(
                mode: .server,
                initialSettings: nioDefaultSettings
                    + (serverMaximumStreams.map { [HTTP2Setting(parameter: .maxConcurrentStreams, value: $0)] } ?? []),
                headerBlockValidation: serverChecksBlocks ? .enabled : .disabled,
                contentLengthValidation: .disabled
            )
        )
        try self.server.pipeline.syncOperations.addHandler(self.serverFrames)
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: 443)
        try self.client.connect(to: address).wait()
        try self.server.connect(to: address).wait()
        try self.interact()
    }

    /// Moves bytes between the two ends until neither has anything more to send.
    func interact() throws {
        var moved = true
        while moved {
            moved = false
            while let bytes = try self.client.readOutbound(as: ByteBuffer.self) {
                // What a handler raises reaches the end of an embedded pipeline and is thrown here: kept, not thrown.
                do { try self.server.writeInbound(bytes) } catch { self.errors.append(error) }
                moved = true
            }
            while let bytes = try self.server.readOutbound(as: ByteBuffer.self) {
                do { try self.client.writeInbound(bytes) } catch { self.errors.append(error) }
                moved = true
            }
        }
    }

    /// Opens a stream and starts a `method` request on it (its head and end written, the bytes moved); returns where
    /// its outcome will be and whether the exchange handler started it.
    func start(
        method: HTTPMethod = .GET,
        requestFields: [(String, String)] = []
    ) throws -> (outcome: ThreadBox<Result<(HTTPResponseHead, ResponseBodyContent), BulwarkError>?>, started: Bool) {
        let streamPromise = self.client.eventLoop.makePromise(of: (any Channel).self)
        let handlerBox = ThreadBox<HTTPExchangeHandler?>(nil)
        let usage = self.usage
        self.multiplexer.createStreamChannel(promise: streamPromise) { stream in
            stream.eventLoop.makeCompletedFuture {
                let handler = try HTTP2Connection.addStreamHandlers(
                    to: stream.pipeline.syncOperations,
                    sensitiveHeaderNames: [],
                    host: Self.host,
                    usage: usage,
                    decompression: nil,
                    idleRead: .seconds(30)
                )
                handlerBox.value = handler
            }
        }
        self.client.embeddedEventLoop.run()
        _ = try streamPromise.futureResult.wait()
        let handler = try #require(handlerBox.value)
        let promise = self.client.eventLoop.makePromise(of: (HTTPResponseHead, ResponseBodyContent).self)
        let outcome = ThreadBox<Result<(HTTPResponseHead, ResponseBodyContent), BulwarkError>?>(nil)
        promise.futureResult.whenComplete { result in
            outcome.value = result.mapError {
                ($0 as? BulwarkError) ?? BulwarkError(.invalidResponse, host: Self.host, detail: "untyped")
            }
        }
        let exchange = Exchange(
            host: Self.host,
            headPromise: promise,
            requestKeepAlive: true,
            connectionFailure: self.failure
        ) { _ in }
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: "/fields")
        head.headers.add(name: "host", value: Self.host)
        head.headers.add(contentsOf: requestFields)
        let started = handler.start(exchange, head: head, body: nil, endsRequest: true, deadline: nil)
        self.client.embeddedEventLoop.run()
        try self.interact()
        return (outcome, started)
    }

    /// Sends a GET on a new stream, answers it with `blocks` (the last one ends the stream unless `endsStream` is
    /// false; a body of `body` bytes after the first block when given), then with `frames` made for the stream's ID,
    /// and returns how the exchange ended: the head's status and fields, or its error.
    func exchange(
        answering blocks: [[(String, String)]],
        body: String? = nil,
        method: HTTPMethod = .GET,
        requestFields: [(String, String)] = [],
        refusedByClient: Bool = false,
        endsStream: Bool = true,
        then frames: (HTTP2StreamID) -> [HTTP2Frame] = { _ in [] }
    ) throws -> Result<(HTTPResponseHead, ResponseBodyContent), BulwarkError>? {
        let (outcome, started) = try self.start(method: method, requestFields: requestFields)
        // A request the client's NIOHTTP2 refuses never reaches the server: how it ended is all there is.
        if refusedByClient { return outcome.value }
        #expect(started)
        let request = try #require(
            self.serverFrames.received.last { if case .headers = $0.payload { true } else { false } }
        )
        for (index, block) in blocks.enumerated() {
            let last = index == blocks.count - 1 && endsStream
            let headers = HPACKHeaders(block)
            if index == 0, let body {
                try self.server.writeOutbound(
                    HTTP2Frame(streamID: request.streamID, payload: .headers(.init(headers: headers)))
                )
                let data = HTTP2Frame.FramePayload.data(
                    .init(data: .byteBuffer(ByteBuffer(string: body)), endStream: last)
                )
                try self.server.writeOutbound(HTTP2Frame(streamID: request.streamID, payload: data))
            } else {
                try self.server.writeOutbound(
                    HTTP2Frame(streamID: request.streamID, payload: .headers(.init(headers: headers, endStream: last)))
                )
            }
        }
        for frame in frames(request.streamID) { try self.server.writeOutbound(frame) }
        try self.interact()
        self.client.embeddedEventLoop.run()
        try self.interact()
        return outcome.value
    }

    func finish() {
        _ = try? self.client.finish()
        _ = try? self.server.finish()
    }
}

/// A response's header blocks as the client meets them from a server, over a real NIOHTTP2 connection: a block
/// HTTP/2 does not allow ends the exchange with `invalid_response`, whose text never carries a field's value.
@Suite("HTTP/2 response fields: what RFC 9113 forbids is an invalid response")
struct HTTP2ResponseFieldTests {
    /// Set in every refused block's values: it must never reach the error's text.
    static let marker = "MARKER-6a1f"

    /// (An empty name is not here: NIOHTTP2's HPACK decoder refuses it as a connection error, before any check of
    /// fields; see notes/i43-h2fields-review.md.)
    static let refusedHeads: [(String, [(String, String)])] = [
        ("a name with a capital", [(":status", "200"), ("X-Upper", marker)]),
        ("a name that is not a token", [(":status", "200"), ("x upper", marker)]),
        ("Connection", [(":status", "200"), ("connection", "close \(marker)")]),
        ("Transfer-Encoding", [(":status", "200"), ("transfer-encoding", "chunked \(marker)")]),
        ("Keep-Alive", [(":status", "200"), ("keep-alive", "timeout=5 \(marker)")]),
        ("Proxy-Connection", [(":status", "200"), ("proxy-connection", marker)]),
        ("Upgrade", [(":status", "200"), ("upgrade", "h2c \(marker)")]),
        ("a value with CR LF", [(":status", "200"), ("x-a", "a\r\nset-cookie: \(marker)")]),
        ("a value with LF", [(":status", "200"), ("x-a", "a\n\(marker)")]),
        ("a value with NUL", [(":status", "200"), ("x-a", "a\u{0}\(marker)")]),
        ("a pseudo-field after a regular field", [("x-a", marker), (":status", "200")]),
        ("a request's pseudo-field", [(":status", "200"), (":path", "/\(marker)")]),
        ("an unknown pseudo-field", [(":status", "200"), (":marker", marker)]),
        ("an empty pseudo-field name", [(":status", "200"), (":", marker)]),
    ]

    static let refusedTrailers: [(String, [(String, String)])] = [
        ("a status in trailers", [(":status", "200")]),
        ("a pseudo-field in trailers", [(":path", "/\(marker)")]),
        ("a capital in a trailer's name", [("X-Trailer", marker)]),
        ("Connection in trailers", [("connection", "close \(marker)")]),
        ("a trailer's value with CR LF", [("x-trailer", "a\r\n\(marker)")]),
    ]

    @Test(arguments: Self.refusedHeads.indices)
    func aHeadHTTP2DoesNotAllowIsAnInvalidResponse(index: Int) throws {
        let (what, block) = Self.refusedHeads[index]
        let pair = try HTTP2InMemoryPair()
        defer { pair.finish() }
        let outcome = try pair.exchange(answering: [block])
        guard case .failure(let error) = outcome else {
            Issue.record("\(what): \(String(describing: outcome))")
            return
        }
        #expect(error.code == .invalidResponse, "\(what): \(error)")
        #expect(!"\(error)".contains(Self.marker), "\(what): \(error)")
        #expect(!error.debugDescription.contains(Self.marker), "\(what): \(error.debugDescription)")
    }

    /// A header block the client cannot decode (an empty name, which NIOHTTP2's HPACK decoder refuses) is a connection
    /// error: NIOHTTP2 sends GOAWAY, and the client must then close the connection (RFC 9113 section 5.4.1). Before,
    /// nothing closed it: against a server that kept it open the exchange waited for its read timeout (30 s here).
    @Test func aBlockTheClientCannotDecodeClosesTheConnection() throws {
        let pair = try HTTP2InMemoryPair()
        defer { pair.finish() }
        let outcome = try pair.exchange(answering: [[(":status", "200"), ("", Self.marker)]])
        guard case .failure(let error) = outcome else {
            Issue.record("the exchange did not fail: \(String(describing: outcome))")
            return
        }
        #expect(error.code == .invalidResponse, "\(error)")
        #expect("\(error)".contains("HTTP/2"), "\(error)")
        #expect(!"\(error)".contains(Self.marker))
        #expect(!error.debugDescription.contains(Self.marker))
        #expect(!pair.client.isActive, "the connection is still open")
    }

    /// An error that is one stream's, and that NIOHTTP2 raises for what the client sends too, leaves the connection
    /// open for the others (helper-26: the first version closed it on every error): here the client's own request
    /// declares a length its body does not have, which NIOHTTP2 refuses as a stream error.
    @Test func aStreamsOwnErrorLeavesTheConnectionOpen() throws {
        let pair = try HTTP2InMemoryPair()
        defer { pair.finish() }
        let refused = try pair.exchange(answering: [], requestFields: [("content-length", "10")], refusedByClient: true)
        guard case .failure = refused else {
            Issue.record("a request whose length NIOHTTP2 refuses did not fail: \(String(describing: refused))")
            return
        }
        #expect(pair.client.isActive, "one stream's error closed the connection")
        let outcome = try pair.exchange(answering: [[(":status", "204")]])
        guard case .success(let (head, _)) = outcome else {
            Issue.record("the next request failed: \(String(describing: outcome))")
            return
        }
        #expect(head.status == .noContent)
    }

    @Test(arguments: Self.refusedTrailers.indices)
    func trailersHTTP2DoesNotAllowAreAnInvalidResponse(index: Int) async throws {
        let (what, block) = Self.refusedTrailers[index]
        let pair = try HTTP2InMemoryPair()
        defer { pair.finish() }
        // The head is handed over first (its body is streamed); the refused trailers end the body with the error.
        let outcome = try pair.exchange(answering: [[(":status", "200")], block], body: "hello")
        guard case .success(let (_, content)) = outcome else {
            Issue.record("\(what): the head was not delivered: \(String(describing: outcome))")
            return
        }
        let error = await Self.bodyError(content)
        #expect(error?.code == .invalidResponse, "\(what): \(String(describing: error))")
        #expect(!"\(String(describing: error))".contains(Self.marker), "\(what)")
        #expect(!(error?.debugDescription.contains(Self.marker) ?? false), "\(what)")
    }

    /// How a response's body ended: nil when it ended well, its error otherwise.
    static func bodyError(_ content: ResponseBodyContent) async -> BulwarkError? {
        guard case .stream(let producer) = content else { return nil }
        do {
            for try await _ in producer {}
            return nil
        } catch {
            return (error as? BulwarkError) ?? BulwarkError(.invalidResponse, host: "untyped", detail: "untyped")
        }
    }

    @Test func wellFormedTrailersAreDelivered() async throws {
        let pair = try HTTP2InMemoryPair()
        defer { pair.finish() }
        let outcome = try pair.exchange(answering: [[(":status", "200")], [("x-trailer", "1")]], body: "hello")
        guard case .success(let (head, content)) = outcome else {
            Issue.record("\(String(describing: outcome))")
            return
        }
        #expect(head.status == .ok)
        let error = await Self.bodyError(content)
        #expect(error == nil, "\(String(describing: error))")
    }

    /// The other direction: NIOHTTP2 no longer checks what the client sends, so a server that does (NIOHTTP2's
    /// default) must accept every head the codec lets through, whatever fields the caller gave.
    @Test(arguments: [
        [("Accept", "*/*"), ("X-Mixed-Case", "1"), ("user-agent", "bulwark")],
        [("Connection", "keep-alive, X-Hop"), ("x-hop", "1"), ("Keep-Alive", "timeout=5"), ("Upgrade", "h2c")],
        [("Transfer-Encoding", "chunked"), ("Proxy-Connection", "keep-alive"), ("TE", "trailers")],
        [("Authorization", "Bearer abc"), ("Cookie", "a=b"), ("x-empty", "")],
        // NIOHTTP2 takes no TE but the exact "trailers" (helper-23).
        [("TE", "Trailers")], [("te", " trailers ")],
    ])
    func everyHeadTheCodecSendsPassesNIOHTTP2sChecks(fields: [(String, String)]) throws {
        let pair = try HTTP2InMemoryPair(serverChecksBlocks: true)
        defer { pair.finish() }
        let outcome = try pair.exchange(answering: [[(":status", "204")]], requestFields: fields)
        guard case .success = outcome else {
            Issue.record("\(fields): \(String(describing: outcome))")
            return
        }
        #expect(pair.errors.isEmpty, "\(pair.errors)")
        let resets = pair.serverFrames.received.filter { if case .rstStream = $0.payload { true } else { false } }
        #expect(resets.isEmpty, "\(resets)")
    }

    /// A response to a HEAD spelled as a raw method has no body to frame either (helper-23).
    @Test func aResponseToARawHEADGetsNoChunkedMarker() throws {
        let pair = try HTTP2InMemoryPair()
        defer { pair.finish() }
        let outcome = try pair.exchange(answering: [[(":status", "200")]], method: .RAW(value: "HEAD"))
        guard case .success(let (head, _)) = outcome else {
            Issue.record("\(String(describing: outcome))")
            return
        }
        #expect(!head.headers.contains(name: "transfer-encoding"), "\(head)")
    }

    @Test func aWellFormedResponseIsDelivered() throws {
        let pair = try HTTP2InMemoryPair()
        defer { pair.finish() }
        let outcome = try pair.exchange(
            answering: [[(":status", "200"), ("content-type", "text/plain"), ("x-ok", "1"), ("te", "gzip")]]
        )
        guard case .success(let (head, _)) = outcome else {
            Issue.record("\(String(describing: outcome))")
            return
        }
        #expect(head.status == .ok)
        #expect(head.headers["content-type"] == ["text/plain"])
    }
}
