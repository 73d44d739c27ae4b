import BulwarkPolicy
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import X509

/// What a connection learned about the server in its handshake.
public struct ServerTrustInfo: Sendable {
    /// The chain the server presented, leaf first.
    public var presentedChain: [Certificate]
    /// The verified chain and any notices; nil for plain HTTP.
    public var trustedChain: TrustedChain?
    /// The negotiated application protocol (`h2`, `http/1.1`).
    public var applicationProtocol: String
    /// Whether the server sent a CertificateRequest during the handshake (asked for a client certificate).
    var certificateRequested = false
}

/// An HTTP/1.1 connection: one exchange at a time over a channel whose last handler is an `HTTPExchangeHandler`.
final class HTTP1Connection: Sendable {
    let channel: any Channel
    let handler: NIOLoopBound<HTTPExchangeHandler>
    let trust: ServerTrustInfo
    let id: Int
    /// The oldest sign-out epoch whose credentials went over this connection; see ``ConnectionPool/signOut()``.
    let credentialEpoch = NIOLockedValueBox<Int?>(nil)

    init(channel: any Channel, handler: NIOLoopBound<HTTPExchangeHandler>, trust: ServerTrustInfo, id: Int) {
        self.channel = channel
        self.handler = handler
        self.trust = trust
        self.id = id
    }
}

/// An HTTP/2 connection: each exchange opens a stream with its own `HTTPExchangeHandler`.
final class HTTP2Connection: Sendable {
    let channel: any Channel
    let multiplexer: NIOLoopBound<NIOHTTP2Handler.StreamMultiplexer>
    let trust: ServerTrustInfo
    let host: String
    let decompression: BulwarkClient.Decompression?
    let idleRead: TimeAmount
    let id: Int
    /// The oldest sign-out epoch whose credentials went over this connection; see ``ConnectionPool/signOut()``.
    let credentialEpoch = NIOLockedValueBox<Int?>(nil)
    /// Why the connection failed, once that is known, for its streams' requests to fail with (they only see it close):
    /// the server's refusal of the client certificate (``ClientCertificateRejectionRecorder``), or bytes it sent that
    /// the client cannot read (``HTTP2ConnectionErrorHandler``).
    let failure: NIOLockedValueBox<BulwarkError?>
    /// Requests holding this connection, and whether it drains (closes once the last of them ends): see ``drain()``.
    /// Shared with ``HTTP2GoAwayHandler``, which drains the connection when the server sends GOAWAY.
    let usage: NIOLockedValueBox<Usage>

    /// Requests holding a connection, and whether it drains: the pool hands it out no more, and it closes once the
    /// last of them ends.
    struct Usage: Sendable {
        var leases = 0
        var draining = false
        /// The last stream the server's GOAWAY said it processes: the streams above it were not processed.
        var goAwayLastStreamID: HTTP2StreamID?
        /// Streams the server refused (REFUSED_STREAM): the second drains the connection (``HTTP2StreamCodec``).
        var refusedStreams = 0

        /// Drains the connection; returns whether to close it now (no request holds it).
        mutating func drain() -> Bool {
            self.draining = true
            return self.leases <= 0
        }
    }

    init(
        channel: any Channel,
        multiplexer: NIOLoopBound<NIOHTTP2Handler.StreamMultiplexer>,
        trust: ServerTrustInfo,
        host: String,
        decompression: BulwarkClient.Decompression?,
        idleRead: TimeAmount,
        id: Int,
        failure: NIOLockedValueBox<BulwarkError?> = NIOLockedValueBox(nil),
        usage: NIOLockedValueBox<Usage> = NIOLockedValueBox(Usage())
    ) {
        self.failure = failure
        self.usage = usage
        self.channel = channel
        self.multiplexer = multiplexer
        self.trust = trust
        self.host = host
        self.decompression = decompression
        self.idleRead = idleRead
        self.id = id
    }

    /// A request was handed this connection (by the pool, under its lock): it ends with ``leaseEnded()``, which
    /// ``openStream(sensitiveHeaderNames:)`` calls when the stream closes or cannot be opened.
    func leaseTaken() {
        self.usage.withLockedValue { $0.leases += 1 }
    }

    /// A request handed this connection is done with it (its stream closed, or it never opened one).
    func leaseEnded() {
        let close = self.usage.withLockedValue { usage in
            usage.leases -= 1
            return usage.draining && usage.leases == 0
        }
        if close { self.channel.close(promise: nil) }
    }

    /// Closes the connection once the requests holding it are done (at once if none is): the pool no longer hands
    /// it out (its client identity was replaced), and no stream running on it fails.
    func drain() {
        if self.usage.withLockedValue({ $0.drain() }) { self.channel.close(promise: nil) }
    }

    /// Whether the pool may hand the connection out: open, and not draining (its client identity was replaced, or
    /// the server sent GOAWAY).
    var isOpen: Bool {
        self.channel.isActive && !self.usage.withLockedValue { $0.draining }
    }

    /// Opens a stream ready for one exchange, whose headers in `sensitiveHeaderNames` (lower-case) are sent never
    /// indexed (see ``HTTP2StreamCodec``), and hands it to `start`, whose value the future completes with. Call on the
    /// connection's event loop; `start` runs there, and the future completes there, failed only with a
    /// ``BulwarkError``. The lease the request holds (``leaseTaken()``) ends when the stream closes, or at once if it
    /// cannot be opened.
    func openStream<Started: Sendable>(
        sensitiveHeaderNames: Set<String>,
        start: @escaping @Sendable (any Channel, NIOLoopBound<HTTPExchangeHandler>) -> Started
    ) -> EventLoopFuture<Started> {
        // Two promises per stream: the stream's, completed by NIOHTTP2 once the stream is active (or failed), and the
        // one returned, completed with what `start` made (no `map` of it: one future and callback fewer per request).
        // The closures capture little (the connection, the promises): each captured value is retained and released
        // once per request.
        let eventLoop = self.channel.eventLoop
        let opened = eventLoop.makePromise(of: Started.self)
        let streamPromise = eventLoop.makePromise(of: (any Channel).self)
        self.multiplexer.value.createStreamChannel(promise: streamPromise) { stream in
            self.configure(
                stream,
                sensitiveHeaderNames: sensitiveHeaderNames,
                active: streamPromise,
                opened: opened,
                start: start
            )
        }
        streamPromise.futureResult.whenFailure { error in
            self.leaseEnded()
            opened.fail(self.replacingWithFailure(HTTPExchangeHandler.map(error, host: self.host)))
        }
        return opened.futureResult
    }

    /// Adds the stream's handlers; once the stream is active (`active` succeeded), ends the lease when it closes and
    /// succeeds `opened` with what `start` makes of it.
    private func configure<Started: Sendable>(
        _ stream: any Channel,
        sensitiveHeaderNames: Set<String>,
        active: EventLoopPromise<any Channel>,
        opened: EventLoopPromise<Started>,
        start: @escaping @Sendable (any Channel, NIOLoopBound<HTTPExchangeHandler>) -> Started
    ) -> EventLoopFuture<Void> {
        let handler: NIOLoopBound<HTTPExchangeHandler>
        do {
            handler = NIOLoopBound(
                try Self.addStreamHandlers(
                    to: stream.pipeline.syncOperations,
                    sensitiveHeaderNames: sensitiveHeaderNames,
                    host: self.host,
                    usage: self.usage,
                    decompression: self.decompression,
                    idleRead: self.idleRead
                ),
                eventLoop: stream.eventLoop
            )
        } catch {
            return stream.eventLoop.makeFailedFuture(error)
        }
        active.futureResult.whenSuccess { stream in
            stream.closeFuture.whenComplete { _ in self.leaseEnded() }
            opened.succeed(start(stream, handler))
        }
        return stream.eventLoop.makeSucceededVoidFuture()
    }

    /// `error`, or why the connection failed when that is known (``failure``).
    func replacingWithFailure(_ error: any Error) -> any Error {
        self.failure.withLockedValue { $0 } ?? error
    }

    /// The handlers of one HTTP/2 stream, from the frames to the exchange handler it returns.
    static func addStreamHandlers(
        to sync: ChannelPipeline.SynchronousOperations,
        sensitiveHeaderNames: Set<String>,
        host: String,
        usage: NIOLockedValueBox<Usage>?,
        decompression: BulwarkClient.Decompression?,
        idleRead: TimeAmount
    ) throws -> HTTPExchangeHandler {
        try sync.addHandler(HTTP2StreamCodec(sensitiveNames: sensitiveHeaderNames, host: host, usage: usage))
        return try Connector.addResponseHandlers(
            to: sync,
            host: host,
            decompression: decompression,
            idleRead: idleRead
        )
    }
}

/// A connection of either protocol.
enum PooledConnection: Sendable {
    case http1(HTTP1Connection)
    case http2(HTTP2Connection)

    var channel: any Channel {
        switch self {
        case .http1(let connection): return connection.channel
        case .http2(let connection): return connection.channel
        }
    }

    var trust: ServerTrustInfo {
        switch self {
        case .http1(let connection): return connection.trust
        case .http2(let connection): return connection.trust
        }
    }

    private var credentialEpochBox: NIOLockedValueBox<Int?> {
        switch self {
        case .http1(let connection): return connection.credentialEpoch
        case .http2(let connection): return connection.credentialEpoch
        }
    }

    /// Records that a request with credentials made in sign-out epoch `epoch` goes over this connection.
    func markCarriedCredentials(epoch: Int) {
        self.credentialEpochBox.withLockedValue { $0 = min($0 ?? epoch, epoch) }
    }

    /// Whether credentials of a session that ended before `epoch` went over this connection.
    func carriedCredentials(before epoch: Int) -> Bool {
        self.credentialEpochBox.withLockedValue { $0.map { $0 < epoch } ?? false }
    }
}
