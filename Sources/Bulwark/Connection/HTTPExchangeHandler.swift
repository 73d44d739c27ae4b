import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOHTTPCompression
import NIOSSL

/// The body of one response as NIO produces it: backpressured, so a slow reader stops the socket reads.
typealias ResponseBodyProducer = NIOThrowingAsyncSequenceProducer<
    ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, ResponseBodyDelegate
>

/// A response's body as the exchange hands it out with the head: a stream, or the whole body when the response ended
/// in the read that brought its head (nil when it has none).
enum ResponseBodyContent {
    case stream(ResponseBodyProducer)
    case whole(ByteBuffer?)
}

/// Tells the exchange handler, on its event loop, that the body's reader wants more or went away. The news names the
/// response it is about: it arrives one event-loop task later, when the connection may already serve the next
/// exchange, whose body it must not end or read for.
struct ResponseBodyDelegate: NIOAsyncSequenceProducerDelegate {
    let handler: NIOLoopBound<HTTPExchangeHandler>
    /// The handler's count of response bodies when this one started.
    let body: Int

    func produceMore() {
        self.handler.eventLoop.execute { self.handler.value.produceMore(body: self.body) }
    }

    func didTerminate() {
        self.handler.eventLoop.execute { self.handler.value.consumerTerminated(body: self.body) }
    }
}

/// One request/response exchange in flight on a channel.
final class Exchange {
    let host: String
    let headPromise: EventLoopPromise<(HTTPResponseHead, ResponseBodyContent)>
    let requestKeepAlive: Bool
    /// Called once on the event loop when the exchange ends: `true` when the connection can serve another request.
    let onComplete: (Bool) -> Void
    /// An HTTP/2 connection's record of the server refusing the client certificate: the error a head fails with
    /// once it is there (the stream itself only saw its connection close).
    let connectionFailure: NIOLockedValueBox<BulwarkError?>?
    var deadlineTask: Scheduled<Void>?

    init(
        host: String,
        headPromise: EventLoopPromise<(HTTPResponseHead, ResponseBodyContent)>,
        requestKeepAlive: Bool,
        connectionFailure: NIOLockedValueBox<BulwarkError?>? = nil,
        onComplete: @escaping (Bool) -> Void
    ) {
        self.host = host
        self.headPromise = headPromise
        self.requestKeepAlive = requestKeepAlive
        self.connectionFailure = connectionFailure
        self.onComplete = onComplete
    }

    /// Fails the head with `error`, or with why the HTTP/2 connection failed when that is known.
    func failHead(_ error: any Error) {
        self.headPromise.fail(self.connectionFailure?.withLockedValue { $0 } ?? error)
    }
}

/// Runs HTTP exchanges on one channel (an HTTP/1.1 connection, or one HTTP/2 stream), one at a time: writes the
/// request, hands out the response head and a backpressured body, and turns every failure into a
/// ``BulwarkError``. Every decision is ``HTTPExchangeStateMachine``'s; this handler carries the decisions out on the
/// channel's event loop (writes, reads, the read timer, the head promise, the body stream).
final class HTTPExchangeHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    private var machine: HTTPExchangeStateMachine
    /// The exchange in flight, and its body stream once the head is out.
    private var exchange: Exchange?
    private var source: ResponseBodyProducer.Source?
    /// The final response head, held until the end of the read that brought it, and the body bytes read after it
    /// (see ``HTTPExchangeStateMachine/headDelivered``).
    private var heldHead: HTTPResponseHead?
    private var heldBody: ByteBuffer?
    /// Response bodies handed out on this channel: the current one's number, which its reader's news must carry.
    private var bodies = 0
    private var context: ChannelHandlerContext?
    /// The read timer: a scheduled callback, which allocates nothing (a `scheduleTask` timer allocates its promise and
    /// three closures, about 300 bytes that every idle pooled connection kept until the timer lapsed).
    private var readTimer: NIOScheduledCallback?
    /// The writer of the streamed request body being sent, told when the channel can take more and when the exchange
    /// fails.
    private var bodyWriter: RequestBodyWriter?
    /// How many exchanges this handler started: the number of the last one, which names it to a body's writer and to
    /// a late cancellation. A number, never reused, rather than an object compared by address (a freed exchange's
    /// address may be the next one's).
    private(set) var exchangeNumber: UInt64 = 0
    private var host: String { self.machine.host }
    /// The server's port, for errors that name `host:port`; nil on connections that do not know it.
    private let port: Int?

    /// Whether this handler checks each request head before writing it (`HTTP1RequestHeadCheck`): on an HTTP/1.1
    /// connection, whose pipeline has no other check. On an HTTP/2 stream the stream codec checks it.
    private let checksRequestHeads: Bool

    init(
        host: String,
        port: Int? = nil,
        idleRead: TimeAmount,
        maximumInflatedSize: Int = .max,
        checksRequestHeads: Bool = false
    ) {
        self.port = port
        self.checksRequestHeads = checksRequestHeads
        self.machine = HTTPExchangeStateMachine(
            host: host,
            idleRead: idleRead,
            maximumInflatedSize: maximumInflatedSize
        )
    }

    /// Whether no exchange is under way and none failed: the last one ended with the whole response, after the whole
    /// request was written. Read on the event loop (an exchange's completion reads it).
    var isIdle: Bool {
        if case .idle = self.machine.state { return true }
        return false
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        self.stopReadTimer()
    }

    // MARK: Requests

    /// Starts an exchange and writes the request head and, when it is in memory, the whole body.
    ///
    /// - Returns: Whether the request was written; false when the connection was already closed or the head cannot be
    ///   sent (`invalid_request`; the connection is left as it was), in which case no byte of the request left the
    ///   client.
    @discardableResult
    func start(
        _ exchange: Exchange,
        head: HTTPRequestHead,
        body: ByteBuffer?,
        endsRequest: Bool,
        declaredBodyLength: Int? = nil,
        deadline: NIODeadline?
    ) -> Bool {
        guard let context else {
            var error = BulwarkError(.remoteConnectionClosed, host: self.host, detail: "connection not ready")
            if case .closed(let closedError) = self.machine.state { error = closedError }
            exchange.failHead(error)
            exchange.onComplete(false)
            return false
        }
        if self.checksRequestHeads, let problem = HTTP1RequestHeadCheck.problem(in: head) {
            exchange.failHead(BulwarkError(.invalidRequest, host: self.host, detail: problem))
            exchange.onComplete(self.isIdle)
            return false
        }
        switch self.machine.startExchange(
            requestKeepAlive: exchange.requestKeepAlive,
            requestEnds: endsRequest,
            declaredBodyLength: declaredBodyLength,
            now: context.eventLoop.now
        ) {
        case .refuse(let error):
            exchange.failHead(error)
            exchange.onComplete(false)
            return false
        case .write:
            break
        }
        self.exchange = exchange
        self.exchangeNumber &+= 1
        if self.readTimer == nil {
            self.scheduleReadTimer(at: self.machine.lastActivity + self.machine.idleRead, on: context.eventLoop)
        }
        if let deadline {
            exchange.deadlineTask = context.eventLoop.scheduleTask(deadline: deadline) { [self] in
                self.fail(BulwarkError(.deadlineExceeded, host: self.host))
            }
        }
        context.write(self.wrapOutboundOut(.head(head)), promise: nil)
        if case .closed = self.machine.state {
            // Refused as it was written (an HTTP/2 stream's codec checks it there), which failed the exchange:
            // nothing was flushed, so no byte of it left the client.
            return false
        }
        if let body, body.readableBytes > 0 {
            context.write(self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        if endsRequest {
            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
        } else {
            context.flush()
        }
        return true
    }

    // MARK: Read timer

    /// One timer at most: reads only move the machine's last activity, and the timer, when it fires early, schedules
    /// itself again for the rest of the period (cancelling a NIO timer searches its timer queue, which would cost more
    /// on every read than this). An exchange that ends leaves the timer running: the next exchange on the connection
    /// uses it (a keep-alive request schedules and cancels no timer), and on an idle connection it lapses when it
    /// fires. Failing or closing the channel cancels it.
    private func scheduleReadTimer(at deadline: NIODeadline, on eventLoop: any EventLoop) {
        // Fails only on an event loop that is shutting down, whose channels close: no timer is needed then.
        self.readTimer = try? eventLoop.assumeIsolated().scheduleCallback(at: deadline, handler: self)
    }

    private func stopReadTimer() {
        if let readTimer = self.readTimer {
            self.readTimer = nil
            readTimer.cancel()
        }
    }

    /// Writes one chunk that `writer` handed over, and tells it whether the channel can take more. A chunk that comes
    /// after the exchange failed is dropped, and the writer told why.
    func writeBodyChunk(_ buffer: ByteBuffer, writer: RequestBodyWriter) {
        switch writer.end {
        case .byLength:
            // Only an empty chunk can follow the declared length (a longer body is refused before it is handed over).
            _ = writer.written(buffer.readableBytes, channelWritable: true)
            return
        case .written:
            // After the last chunk the server reads the start of a next request.
            writer.fail(BulwarkError(.requestBodyFailed, host: self.host, detail: "a write came after the body's end"))
            return
        case .open:
            break
        }
        if self.isOver(for: writer) { return }
        guard let context else {
            writer.fail(self.closedError)
            return
        }
        guard self.isInFlight(writer.exchange) else {
            // Its request is not the one being written: the chunk would go out with no head, or into another
            // exchange's body.
            writer.fail(Self.noRequestError(host: self.host))
            return
        }
        self.bodyWriter = writer
        context.write(self.wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        let ended = self.machine.requestBodyWritten(buffer.readableBytes)
        if ended {
            // The declared length is written: the request ends with these bytes (see
            // HTTPExchangeStateMachine.requestBodyWritten(_:)), and the writer's own end writes nothing more.
            self.bodyWriter = nil
            writer.end = .byLength
            context.write(self.wrapOutboundOut(.end(nil)), promise: nil)
        }
        // While chunks handed over after this one are on their way to this event loop, the last of them flushes (or
        // the first after RequestBodyFlow.flushInterval bytes), so that what the producer handed over together leaves
        // in as few socket writes as the channel allows. A body that ended has nothing more to send, so its producer
        // no longer waits for the channel (no news of the channel reaches it any more: it is no longer the body being
        // written).
        let flush = writer.written(buffer.readableBytes, channelWritable: ended || context.channel.isWritable)
        if ended || flush {
            context.flush()
        }
    }

    /// Ends the request body that `writer` streamed; `promise` completes once the end is written.
    func endBody(writer: RequestBodyWriter, promise: EventLoopPromise<Void>) {
        if writer.end != .open {
            // Ended with its last chunk, or already: the connection may serve another exchange by now, which this must
            // not touch.
            promise.succeed(())
            return
        }
        if self.isOver(for: writer) {
            if self.bodyWriter === writer { self.bodyWriter = nil }
            promise.fail(self.closedError)
            return
        }
        guard let context else {
            promise.fail(self.closedError)
            return
        }
        guard self.isInFlight(writer.exchange) else {
            promise.fail(Self.noRequestError(host: self.host))
            return
        }
        self.bodyWriter = nil
        writer.end = .written
        self.machine.requestBodyEnded()
        context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: promise)
    }

    /// Whether exchange `number` (``exchangeNumber`` when it started) is the one in flight on this handler.
    private func isInFlight(_ number: UInt64) -> Bool {
        self.exchange != nil && number == self.exchangeNumber
    }

    private static func noRequestError(host: String) -> BulwarkError {
        BulwarkError(.requestBodyFailed, host: host, detail: "the body's request is not being sent")
    }

    /// Whether the exchange is over, so that nothing more of the body `writer` streams may be written; if so, the writer
    /// is told why: the server answered before the body was all sent (the writer may not have handed a chunk over
    /// when the answer came), or the exchange failed.
    private func isOver(for writer: RequestBodyWriter) -> Bool {
        guard case .closed(let error) = self.machine.state else { return false }
        if self.machine.answeredBeforeRequestEnded {
            writer.serverAnswered(error)
        } else {
            writer.fail(error)
        }
        return true
    }

    /// Why nothing more can be written: the error the exchange failed with, or the connection's close.
    private var closedError: BulwarkError {
        if case .closed(let error) = self.machine.state { return error }
        return BulwarkError(.remoteConnectionClosed, host: self.host)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        self.bodyWriter?.writabilityChanged(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    /// The producer of `writer`'s body failed with `error`: the exchange fails, unless that body had already ended
    /// with its declared length, in which case the request was sent whole and the connection may serve another
    /// exchange by now.
    func failBody(_ error: BulwarkError, writer: RequestBodyWriter) {
        guard writer.end != .byLength, self.isInFlight(writer.exchange) else { return }
        self.fail(error)
    }

    /// Fails exchange `number` (``exchangeNumber`` when it started), if it is still the one in flight: a cancellation
    /// or a shutdown may reach the handler once the connection serves another exchange.
    func fail(_ error: BulwarkError, exchange number: UInt64) {
        guard self.isInFlight(number) else { return }
        self.fail(error)
    }

    /// Fails the exchange in flight (cancellation, deadline, body failure) and closes the channel.
    func fail(_ error: BulwarkError) {
        let action = self.machine.fail(error)
        if case .none = action { return }
        self.stopReadTimer()
        let exchange = self.exchange
        let source = self.source
        let bodyWriter = self.bodyWriter
        self.exchange = nil
        self.source = nil
        self.bodyWriter = nil
        self.heldHead = nil
        self.heldBody = nil
        exchange?.deadlineTask?.cancel()
        bodyWriter?.fail(error)
        switch action {
        case .failHead(let error):
            exchange?.failHead(error)
            exchange?.onComplete(false)
        case .failBody(let error):
            source?.finish(error)
            exchange?.onComplete(false)
        case .close, .none:
            break
        }
        self.context?.close(promise: nil)
    }

    // MARK: Responses

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let now = context.eventLoop.now
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            switch self.machine.receivedHead(head, isCompressed: Self.isCompressed(head), now: now) {
            case .ignore:
                return
            case .fail(let error):
                self.fail(error)
            case .hold:
                self.heldHead = head
                self.heldBody = nil
            }
        case .body(let buffer):
            switch self.machine.receivedBody(count: buffer.readableBytes, now: now) {
            case .ignore:
                return
            case .fail(let error):
                self.fail(error)
            case .hold:
                if var held = self.heldBody {
                    self.heldBody = nil
                    var buffer = buffer
                    held.writeBuffer(&buffer)
                    self.heldBody = held
                } else {
                    self.heldBody = buffer
                }
            case .yield:
                self.yield(buffer)
            }
        case .end:
            let keepAlive: Bool
            var readNow = false
            var bodyRefusal: BulwarkError?
            switch self.machine.receivedEnd(now: now) {
            case .ignore:
                return
            case .complete(let reusable, let read):
                keepAlive = reusable
                readNow = read
            case .completeBeforeRequestEnded(let error):
                keepAlive = false
                bodyRefusal = error
            }
            let exchange = self.exchange
            let source = self.source
            let heldHead = self.heldHead
            let heldBody = self.heldBody
            self.exchange = nil
            self.source = nil
            self.heldHead = nil
            self.heldBody = nil
            // The read timer stays for the next exchange (see scheduleReadTimer(at:on:)).
            exchange?.deadlineTask?.cancel()
            if readNow { context.read() }
            if let bodyRefusal {
                self.stopReadTimer()
                let bodyWriter = self.bodyWriter
                self.bodyWriter = nil
                bodyWriter?.serverAnswered(bodyRefusal)
            }
            // Give the connection back before the reader sees the end, so its next request finds it idle.
            exchange?.onComplete(keepAlive)
            if let heldHead {
                // The whole response arrived in one read: no body stream, and no news from its reader.
                exchange?.headPromise.succeed((heldHead, .whole(heldBody)))
            }
            source?.finish()
            // A connection that still carried the request's body serves no other request.
            if bodyRefusal != nil { context.close(promise: nil) }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if self.machine.readCompleted(), let head = self.heldHead {
            self.heldHead = nil
            self.deliver(head, context: context)
        }
        context.fireChannelReadComplete()
    }

    /// Hands out `head` with a body stream that starts with the bytes held with it.
    private func deliver(_ head: HTTPResponseHead, context: ChannelHandlerContext) {
        guard let exchange = self.exchange else { return }
        // One buffer in flight, as AsyncHTTPClient does: the socket is read again when the reader takes it.
        // A deeper queue (16 buffers before) kept NIOSSL's plaintext buffers referenced, so each decrypt had
        // to allocate fresh ones: in a 256 MiB download that cost page faults and copies (about a quarter
        // more client CPU) and 3 MiB more memory, with no gain in throughput on loopback.
        self.bodies += 1
        let producer = ResponseBodyProducer.makeSequence(
            elementType: ByteBuffer.self,
            backPressureStrategy: .init(lowWatermark: 1, highWatermark: 1),
            finishOnDeinit: false,
            delegate: ResponseBodyDelegate(
                handler: NIOLoopBound(self, eventLoop: context.eventLoop),
                body: self.bodies
            )
        )
        self.source = producer.source
        exchange.headPromise.succeed((head, .stream(producer.sequence)))
        if let held = self.heldBody {
            self.heldBody = nil
            self.yield(held)
        }
    }

    /// Gives body bytes to the body stream and notes whether it wants more.
    private func yield(_ buffer: ByteBuffer) {
        guard let source = self.source else { return }
        switch source.yield(buffer) {
        case .produceMore: self.machine.bodyYielded(wantsMore: true)
        case .stopProducing: self.machine.bodyYielded(wantsMore: false)
        case .dropped: break
        }
    }

    func read(context: ChannelHandlerContext) {
        if self.machine.readRequested() {
            context.read()
        }
    }

    /// The reader of response body number `body` wants more; news of an earlier body is stale.
    func produceMore(body: Int) {
        guard body == self.bodies else { return }
        if self.machine.demandResumed(now: self.context?.eventLoop.now ?? .now()), let context {
            context.read()
        }
    }

    /// The reader of response body number `body` went away: before the end of the body, the rest cannot be skipped
    /// safely, so the connection closes. News of an earlier body, whose exchange is over, changes nothing.
    func consumerTerminated(body: Int) {
        guard body == self.bodies else { return }
        if let error = self.machine.consumerTerminated() {
            self.fail(error)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.fail(Self.map(error, host: self.host, port: self.port))
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.fail(
            BulwarkError(.remoteConnectionClosed, host: self.host, detail: "the server closed the connection")
        )
        context.fireChannelInactive()
    }

    /// Whether the decompressor in front of this handler inflates the response's body.
    static func isCompressed(_ head: HTTPResponseHead) -> Bool {
        // As NIOHTTPResponseDecompressor reads it: the first coding listed.
        let coding = head.headers[canonicalForm: "content-encoding"].first?.lowercased()
        return coding == "gzip" || coding == "deflate"
    }

    /// An HTTP/2 error code by its RFC 9113 name (section 7), or its number when unknown.
    static func http2ErrorName(_ code: HTTP2ErrorCode) -> String {
        let names = [
            "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED",
            "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
        ]
        return names.indices.contains(code.networkCode) ? names[code.networkCode] : "error code \(code.networkCode)"
    }

    /// A byte count in words: `64 MiB`, `1.5 KiB`, `300 bytes`.
    static func sizeText(_ bytes: Int) -> String {
        for (unit, size) in [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] where bytes >= size {
            let value = Double(bytes) / Double(size)
            return value == value.rounded() ? "\(Int(value)) \(unit)" : "\(value) \(unit)"
        }
        return "\(bytes) bytes"
    }

    static func map(_ error: any Error, host: String, port: Int? = nil) -> BulwarkError {
        if let error = error as? BulwarkError { return error }
        if let error = error as? NIOHTTPDecompression.DecompressionError, error == .limit {
            return BulwarkError(.decompressionLimitExceeded, host: host)
        }
        if error is NIOHTTPDecompression.DecompressionError {
            return BulwarkError(.invalidResponse, host: host, detail: "undecodable compressed body")
        }
        if let alert = HandshakeFailure.clientCertificateAlert(in: error) {
            return HandshakeFailure.clientCertificateRejected(
                host: host,
                authority: port.map { HandshakeFailure.authority(host: host, port: $0) } ?? host,
                alert: alert,
                underlying: String(reflecting: error)
            )
        }
        if let error = error as? NIOSSLError, case .uncleanShutdown = error {
            return BulwarkError(.remoteConnectionClosed, host: host, detail: "the server closed TLS uncleanly")
        }
        if let error = error as? HTTPParserError, error == .invalidEOFState {
            return BulwarkError(
                .remoteConnectionClosed,
                host: host,
                detail: "the server closed the connection before the end of the response"
            )
        }
        if let error = error as? HTTPParserError {
            return BulwarkError(
                .invalidResponse,
                host: host,
                detail: "the response is not valid HTTP/1.1: \(error.debugDescription)",
                underlying: String(reflecting: error)
            )
        }
        if let error = error as? NIOHTTP2Errors.StreamClosed {
            // RST_STREAM, or the connection's GOAWAY or close ending the stream: the server went away, the response
            // was not malformed. (A stream the server did not process is told apart by its codec, which knows
            // whether a response came: HTTP2StreamCodec.)
            return BulwarkError(
                .remoteConnectionClosed,
                host: host,
                detail: "the server ended the HTTP/2 stream (\(Self.http2ErrorName(error.errorCode)))"
            )
        }
        if error is NIOHTTP2Errors.IOOnClosedConnection {
            return BulwarkError(.remoteConnectionClosed, host: host, detail: "the HTTP/2 connection was closed")
        }
        if let error = error as? ChannelError {
            return BulwarkError(
                .remoteConnectionClosed,
                host: host,
                detail: "the connection was closed before the response was complete",
                underlying: String(reflecting: error)
            )
        }
        if let error = error as? IOError {
            return BulwarkError(
                .remoteConnectionClosed,
                host: host,
                detail: "the connection broke: \(Connector.words(errno: error.errnoCode))",
                underlying: String(reflecting: error)
            )
        }
        return BulwarkError(
            .invalidResponse,
            host: host,
            detail: "the response could not be read",
            underlying: String(reflecting: error)
        )
    }
}

extension HTTPExchangeHandler: NIOScheduledCallbackHandler {
    /// The read timer fired (see `scheduleReadTimer(at:on:)`).
    func handleScheduledCallback(eventLoop: some EventLoop) {
        self.readTimer = nil
        switch self.machine.readTimerFired(now: eventLoop.now) {
        case .none: break
        case .reschedule(let next): self.scheduleReadTimer(at: next, on: eventLoop)
        case .fail(let error): self.fail(error)
        }
    }
}
