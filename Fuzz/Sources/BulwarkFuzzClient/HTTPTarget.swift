import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTP2

@testable import Bulwark

/// The client's response pipeline, fed a server's bytes: the HTTP/1.1 connection's handlers
/// (`Connector.addHTTP1Handlers`) or the HTTP/2 connection's (`Connector.addHTTP2Handlers`, then a stream from
/// `HTTP2Connection.openStream`), on an `EmbeddedChannel`. One request is written, the input arrives as
/// the server's bytes in chunks, and the connection ends (the server closes, the read timeout or the request's
/// deadline passes). The body is read as a caller would, or abandoned after its first part (a response that came whole
/// with its head is read whole).
///
/// Oracle: the request ends in a response whose body ends, or in a ``BulwarkError`` with a known code whose
/// description carries no Swift type name and no credential; nothing is left pending after the close (a hang); the
/// connection is given back exactly once, and as reusable only after a complete keep-alive response; a complete body
/// with one plain `Content-Length` has that many bytes. LeakSanitizer checks that nothing outlives the exchange.
///
/// Input: a configuration byte (bit 0: HTTP/2; bit 1: decompression; bit 2: tight decompression limits; bits 3–4:
/// how it ends; bit 5: abandon the body after its first part; bits 6–7: GET, HEAD, POST with a body, or GET with
/// `Connection: close`), a chunk-size byte (0: everything at once), then the server's bytes. For HTTP/2 those follow
/// a fixed server preface (an empty SETTINGS frame and the ACK of the client's), so they start at the frames for
/// stream 1, the request's.
enum HTTPTarget {
    static let host = "fuzz.example"
    /// Sent in `Authorization`: it must never appear in an error's description.
    static let secret = "fuzz-secret-7f3a"
    /// The server's connection preface: an empty SETTINGS frame, then the ACK of the client's SETTINGS.
    static let serverPreface: [UInt8] = [0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0]

    enum Ending {
        /// The server closes the connection.
        case close
        /// The server goes silent: the read timeout fires.
        case readTimeout
        /// The request's deadline passes.
        case deadline
    }

    struct Scenario {
        let http2: Bool
        let decompression: BulwarkClient.Decompression?
        let ending: Ending
        let abandonBody: Bool
        let head: HTTPRequestHead
        let body: ByteBuffer?
        let chunk: Int

        init(_ input: inout FuzzInput) {
            let flags = input.byte()
            self.http2 = flags & 1 != 0
            if flags & 2 == 0 {
                self.decompression = nil
            } else if flags & 4 == 0 {
                self.decompression = BulwarkClient.Decompression()
            } else {
                self.decompression = BulwarkClient.Decompression(maximumRatio: 4, maximumSize: 1024)
            }
            self.ending = [Ending.close, .readTimeout, .deadline, .close][Int(flags >> 3) & 3]
            self.abandonBody = flags & 32 != 0
            let request = Int(flags >> 6)
            var head = HTTPRequestHead(
                version: .http1_1,
                method: [.GET, .HEAD, .POST, .GET][request],
                uri: "/fuzz?q=1"
            )
            head.headers.add(name: "host", value: HTTPTarget.host)
            head.headers.add(name: "authorization", value: "Bearer \(HTTPTarget.secret)")
            if self.decompression != nil { head.headers.add(name: "accept-encoding", value: "gzip, deflate") }
            if request == 2 {
                head.headers.add(name: "content-length", value: "5")
                self.body = ByteBuffer(string: "hello")
            } else {
                self.body = nil
            }
            if request == 3 && !self.http2 { head.headers.add(name: "connection", value: "close") }
            self.head = head
            let chunk = Int(input.byte())
            self.chunk = chunk == 0 ? .max : chunk
        }

        /// The read timeout: short enough to fire when the harness moves the clock, otherwise out of reach.
        var idleRead: TimeAmount { self.ending == .readTimeout ? .microseconds(1) : .hours(1) }
    }

    static func run(_ original: FuzzInput) {
        var input = original
        let scenario = Scenario(&input)
        let server = Array(input.rest)
        let harness = Harness(scenario)
        harness.start()
        let preface = scenario.http2 ? Self.serverPreface : []
        if !preface.isEmpty { harness.feed(preface[...]) }
        harness.openExchange()
        var offset = 0
        while offset < server.count && harness.channel.isActive {
            let end = server.count - offset > scenario.chunk ? offset + scenario.chunk : server.count
            harness.feed(server[offset..<end])
            offset = end
        }
        harness.end()
        harness.check()
    }
}

/// What one exchange came to. Touched only on the fuzz thread (the event loop's and the body reader's).
final class ExchangeOutcome: @unchecked Sendable {
    enum BodyEnd {
        case finished
        case failed(any Error)
        case abandoned
    }

    var stream: Result<(any Channel, NIOLoopBound<HTTPExchangeHandler>), any Error>?
    var head: Result<HTTPResponseHead, any Error>?
    var bodyBytes = 0
    var bodyEnd: BodyEnd?
    var completions: [Bool] = []
}

/// One connection and one exchange on an `EmbeddedChannel`, driven from the fuzz thread.
final class Harness {
    let scenario: HTTPTarget.Scenario
    let channel = EmbeddedChannel()
    let executor = InlineExecutor()
    let outcome = ExchangeOutcome()
    private var http1: HTTPExchangeHandler?
    private var http2: HTTP2Connection?

    init(_ scenario: HTTPTarget.Scenario) {
        self.scenario = scenario
    }

    /// Builds the connection's pipeline as `Connector` does and connects the channel (the client's HTTP/2 preface
    /// and SETTINGS go out).
    func start() {
        let host = HTTPTarget.host
        do {
            let sync = self.channel.pipeline.syncOperations
            if self.scenario.http2 {
                let (multiplexer, failure, usage) = try Connector.addHTTP2Handlers(to: sync, host: host, port: 443)
                self.http2 = HTTP2Connection(
                    channel: self.channel,
                    multiplexer: NIOLoopBound(multiplexer, eventLoop: self.channel.eventLoop),
                    trust: ServerTrustInfo(presentedChain: [], trustedChain: nil, applicationProtocol: "h2"),
                    host: host,
                    decompression: self.scenario.decompression,
                    idleRead: self.scenario.idleRead,
                    id: 1,
                    failure: failure,
                    usage: usage
                )
            } else {
                self.http1 = try Connector.addHTTP1Handlers(
                    to: sync,
                    host: host,
                    decompression: self.scenario.decompression,
                    idleRead: self.scenario.idleRead
                )
            }
            try self.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        } catch {
            violated("the pipeline is set up", String(reflecting: error))
        }
        self.settle()
    }

    /// Starts the exchange as `BulwarkClient` does: on the connection, or on a new HTTP/2 stream that is closed
    /// when the exchange ends.
    func openExchange() {
        if let http1 {
            self.begin(on: http1) { _ in }
            return
        }
        guard let http2 else { return }
        let outcome = self.outcome
        http2.openStream(sensitiveHeaderNames: ["authorization"]) { stream, handler in (stream, handler) }
            .whenComplete { result in outcome.stream = result }
        self.settle()
        guard case .success((let stream, let handler)) = self.outcome.stream else { return }
        // As BulwarkClient: the stream closes when its exchange ends.
        self.begin(on: handler.value) { _ in stream.close(promise: nil) }
        self.settle()
    }

    private func begin(on handler: HTTPExchangeHandler, onComplete: @escaping (Bool) -> Void) {
        let outcome = self.outcome
        let executor = self.executor
        let abandon = self.scenario.abandonBody
        let promise = self.channel.eventLoop.makePromise(of: (HTTPResponseHead, ResponseBodyContent).self)
        let exchange = Exchange(
            host: HTTPTarget.host,
            headPromise: promise,
            requestKeepAlive: self.scenario.head.isKeepAlive
        ) { reusable in
            outcome.completions.append(reusable)
            onComplete(reusable)
        }
        let deadline: NIODeadline? = self.scenario.ending == .deadline ? .now() + .microseconds(1) : nil
        promise.futureResult.whenComplete { result in
            switch result {
            case .success((let head, .stream(let body))):
                outcome.head = .success(head)
                Task(executorPreference: executor) { await Self.read(body, into: outcome, abandon: abandon) }
            case .success((let head, .whole(let body))):
                // The whole response came in the read that brought its head: the caller has all of it at once (so the
                // body's own checks below apply, whether or not the scenario abandons it).
                outcome.head = .success(head)
                outcome.bodyBytes += body?.readableBytes ?? 0
                outcome.bodyEnd = .finished
            case .failure(let error):
                outcome.head = .failure(error)
            }
        }
        handler.start(
            exchange,
            head: self.scenario.head,
            body: self.scenario.body,
            endsRequest: true,
            deadline: deadline
        )
    }

    /// Reads the body as a caller would, or drops it after the first part.
    private static func read(_ body: ResponseBodyProducer, into outcome: ExchangeOutcome, abandon: Bool) async {
        let iterator = body.makeAsyncIterator()
        do {
            while let part = try await iterator.next() {
                outcome.bodyBytes += part.readableBytes
                if abandon {
                    outcome.bodyEnd = .abandoned
                    return
                }
            }
            outcome.bodyEnd = .finished
        } catch {
            outcome.bodyEnd = .failed(error)
        }
    }

    /// The server's bytes arrive.
    func feed(_ bytes: ArraySlice<UInt8>) {
        // An error that reaches the end of the pipeline is dropped there, as on a real connection.
        _ = try? self.channel.writeInbound(self.channel.allocator.buffer(bytes: bytes))
        self.settle()
    }

    /// Runs what the loop and the body reader have queued until neither has anything left; the client's writes
    /// are dropped (nobody reads them).
    func settle() {
        repeat {
            self.channel.embeddedEventLoop.run()
            while (try? self.channel.readOutbound(as: Any.self)) != nil {}
        } while self.executor.drain()
    }

    /// The connection ends as the scenario says: the timers get their time, then the channel closes.
    func end() {
        if self.scenario.ending != .close {
            // Real deadlines: the loop's clock jumps to now, so the timer set 1 µs after its exchange started fires
            // (its handler compares with the real clock, which has moved on). Three times: a body reader that held
            // the body back catches up between them.
            for _ in 0..<3 {
                self.channel.embeddedEventLoop.advanceTime(to: .now())
                self.settle()
            }
        }
        _ = try? self.channel.finish(acceptAlreadyClosed: true)
        self.settle()
    }

    // MARK: Oracle

    func check() {
        let scenario = self.scenario
        if case .failure(let error) = self.outcome.stream {
            // The stream could not open: the request fails before it starts, with a typed error.
            Self.checkTyped(error, "opening the stream")
            return
        }
        guard let head = self.outcome.head else {
            violated("the request ends (a hang)", "no response head and no error after the connection closed")
        }
        var response: HTTPResponseHead?
        switch head {
        case .failure(let error):
            Self.checkTyped(error, "the response")
        case .success(let delivered):
            response = delivered
            guard let bodyEnd = self.outcome.bodyEnd else {
                violated("the body ends (a hang)", "a \(delivered.status.code) response's body is still open")
            }
            if case .failed(let error) = bodyEnd { Self.checkTyped(error, "the body") }
        }
        guard self.outcome.completions.count == 1 else {
            violated("the connection is given back once", "given back \(self.outcome.completions.count) times")
        }
        trace("\(scenario.http2 ? "h2" : "h1") \(head) body \(self.outcome.bodyBytes) \(self.outcome.bodyEnd as Any)")
        if case .abandoned = self.outcome.bodyEnd {
            // The caller dropped the body after its first part. The connection may still be given back reusable:
            // the handler reads on, and whether the response ended before the close is the handler's business, not
            // the caller's (the input may hold the whole response in one read). Only the keep-alive rules apply.
            if self.outcome.completions[0], let response,
                !scenario.head.isKeepAlive || !response.isKeepAlive || response.status == .switchingProtocols
            {
                violated("only a keep-alive exchange gives its connection back", "\(scenario.head) \(response)")
            }
            return
        }
        guard let response, case .finished = self.outcome.bodyEnd else {
            if self.outcome.completions[0] {
                violated("a failed exchange leaves the connection unusable", "reusable after \(head)")
            }
            return
        }
        if self.outcome.completions[0] {
            if !scenario.head.isKeepAlive || !response.isKeepAlive || response.status == .switchingProtocols {
                violated("only a keep-alive exchange gives its connection back", "\(scenario.head) \(response)")
            }
        }
        // A body framed by one plain Content-Length has exactly that many bytes.
        let lengths = response.headers[canonicalForm: "content-length"]
        let code = response.status.code
        if lengths.count == 1, let length = Int(lengths[0]), lengths[0].utf8.allSatisfy({ (48...57).contains($0) }),
            !response.headers.contains(name: "transfer-encoding"),
            !response.headers.contains(name: "content-encoding"),
            scenario.head.method != .HEAD, code >= 200, code != 204, code != 304,
            self.outcome.bodyBytes != length
        {
            violated("a complete body has its Content-Length", "\(self.outcome.bodyBytes) bytes, \(response)")
        }
    }

    /// The kinds of failure a server's bytes may cause.
    static let expectedCodes: [BulwarkError.Code] = [
        .invalidResponse, .remoteConnectionClosed, .decompressionLimitExceeded, .readTimeout, .deadlineExceeded,
        .cancelled,
    ]

    static func checkTyped(_ error: any Error, _ what: String) {
        guard let error = error as? BulwarkError else {
            violated("\(what) fails with a BulwarkError", String(reflecting: error))
        }
        guard Self.expectedCodes.contains(error.code) else {
            violated("\(what) fails with an expected code", error.debugDescription)
        }
        let text = error.description
        for leak in [HTTPTarget.secret, "NIO", "Error(", "Errors.", ".swift", "HTTPParserError"]
        where text.contains(leak) {
            violated("an error's description names no type, path or credential", text)
        }
        trace("error: \(error.debugDescription)")
    }
}
