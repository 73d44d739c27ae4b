import NIOCore
import NIOHTTP1

/// The decisions of one channel's HTTP exchanges as a value: when a request may start, what a response part means,
/// when the socket is read, when the read timer fails the exchange, and what a failure ends. It does no I/O and owns
/// no promise, timer or body stream: each event returns an action that ``HTTPExchangeHandler`` carries out. So the
/// exchange's rules are tested without a channel (``HTTPExchangeStateMachineTests``).
///
/// The read timer: it runs only while an exchange waits for the server, from the moment the request is written, and
/// every read (or the body's reader asking for more) moves the point it counts from. An idle keep-alive connection
/// has no timer, so a connection reused after a long idle period gets the whole read timeout for its next response.
struct HTTPExchangeStateMachine {
    enum State {
        /// No exchange: a request may start.
        case idle
        /// The request is written (or being written); no final response head yet.
        case waitingForHead
        /// A final head arrived; the body streams (the head is handed out at the end of the read that brought it, or
        /// with the whole body: see ``headDelivered``).
        case streaming
        /// The connection failed or was closed; no request may start.
        case closed(BulwarkError)
    }

    private(set) var state: State = .idle
    /// Whether the body's reader wants more (a read of the socket is allowed).
    private(set) var consumerWantsMore = true
    /// A read the channel asked for while the reader held the body back.
    private var readPending = false
    private var requestKeepAlive = false
    /// Whether the request is written to its end: false while a streamed body is still being written.
    private var requestEnded = true
    /// The bytes of a streamed body that its declared length still awaits; nil when the body has no declared length
    /// (``requestBodyWritten(_:)``).
    private var requestBodyRemaining: Int?
    /// Whether the connection closed because the response ended before the request (``receivedEnd(now:)``).
    private(set) var answeredBeforeRequestEnded = false
    private var responseKeepAlive = false
    /// Whether the head of the response in ``State/streaming`` was handed out. Until then it is held, with the body
    /// bytes read after it: a response that ends in the read that brought its head (a short response) is handed out
    /// whole, with no body stream, and so with no news from a body reader to send back to the event loop.
    private(set) var headDelivered = false
    private var isInflated = false
    private var inflatedBytes = 0
    /// When the server was last heard from, or the reader last asked for more, in the current exchange.
    private(set) var lastActivity = NIODeadline.uptimeNanoseconds(0)

    let host: String
    /// The longest silence from the server while an exchange waits for it.
    let idleRead: TimeAmount
    /// The most decompressed bytes one response may produce (`Int.max` without decompression).
    let maximumInflatedSize: Int

    init(host: String, idleRead: TimeAmount, maximumInflatedSize: Int = .max) {
        self.host = host
        self.idleRead = idleRead
        self.maximumInflatedSize = maximumInflatedSize
    }

    // MARK: Requests

    enum StartAction {
        /// Write the request; the read timer counts from now (start it if none runs).
        case write
        /// Fail the exchange at once with this error: no byte of the request leaves the client.
        case refuse(BulwarkError)
    }

    /// A request wants to start at `now`; `requestEnds` is false when its body is streamed after the head (see
    /// ``requestBodyEnded()``), and `declaredBodyLength` is then the length its head declares, if it declares one (see
    /// ``requestBodyWritten(_:)``).
    mutating func startExchange(
        requestKeepAlive: Bool,
        requestEnds: Bool = true,
        declaredBodyLength: Int? = nil,
        now: NIODeadline
    ) -> StartAction {
        switch self.state {
        case .idle:
            self.state = .waitingForHead
            self.requestKeepAlive = requestKeepAlive
            self.requestEnded = requestEnds
            self.requestBodyRemaining = requestEnds ? nil : declaredBodyLength
            self.responseKeepAlive = false
            self.isInflated = false
            self.inflatedBytes = 0
            self.lastActivity = now
            return .write
        case .closed(let error):
            return .refuse(error)
        case .waitingForHead, .streaming:
            return .refuse(BulwarkError(.remoteConnectionClosed, host: self.host, detail: "connection not ready"))
        }
    }

    // MARK: Read timer

    enum TimerAction {
        /// Nothing waits for the server: let the timer go.
        case none
        /// Not expired (heard from since, or the reader holds the body back): schedule the timer again for this time.
        case reschedule(NIODeadline)
        /// The server was silent too long: fail the exchange with this error.
        case fail(BulwarkError)
    }

    /// The read timer fired at `now`.
    func readTimerFired(now: NIODeadline) -> TimerAction {
        let waitingForServer: Bool
        switch self.state {
        case .waitingForHead: waitingForServer = true
        case .streaming: waitingForServer = self.consumerWantsMore
        case .idle, .closed: return .none
        }
        let expiry = self.lastActivity + self.idleRead
        guard waitingForServer, expiry <= now else {
            return .reschedule(waitingForServer ? expiry : now + self.idleRead)
        }
        if case .waitingForHead = self.state {
            return .fail(BulwarkError(.readTimeout, host: self.host, detail: "no response"))
        }
        return .fail(BulwarkError(.readTimeout, host: self.host, detail: "the response body stalled"))
    }

    // MARK: Failure

    enum FailAction {
        /// Fail the response head's promise, end the exchange as not reusable, close the channel.
        case failHead(BulwarkError)
        /// Finish the body with the error, end the exchange as not reusable, close the channel.
        case failBody(BulwarkError)
        /// No exchange was running: close the channel.
        case close
        /// Already closed: nothing to do.
        case none
    }

    /// The exchange (or the idle connection) fails with `error`: cancellation, a deadline, a timeout, the server
    /// closing, a malformed response. The connection never serves another request.
    mutating func fail(_ error: BulwarkError) -> FailAction {
        switch self.state {
        case .closed:
            return .none
        case .waitingForHead:
            self.state = .closed(error)
            return .failHead(error)
        case .streaming:
            self.state = .closed(error)
            return self.headDelivered ? .failBody(error) : .failHead(error)
        case .idle:
            self.state = .closed(error)
            return .close
        }
    }

    // MARK: Responses

    enum HeadAction {
        /// An informational (1xx) head: the final one follows.
        case ignore
        /// Hold the head: it is handed out with a body stream at the end of this read (``readCompleted()``), or with
        /// the whole body when the response ends first (``receivedEnd(now:)``).
        case hold
        /// The head came when none was expected.
        case fail(BulwarkError)
    }

    /// A response head arrived at `now`; `isCompressed` tells whether the decompressor in front inflates its body.
    mutating func receivedHead(_ head: HTTPResponseHead, isCompressed: Bool, now: NIODeadline) -> HeadAction {
        self.lastActivity = now
        guard case .waitingForHead = self.state else {
            return .fail(BulwarkError(.invalidResponse, host: self.host, detail: "unexpected response head"))
        }
        if head.status.code >= 100 && head.status.code < 200 && head.status != .switchingProtocols {
            return .ignore
        }
        // After a 101 the connection speaks another protocol (NIO's decoder stops parsing HTTP on it): it must never
        // serve another request.
        self.responseKeepAlive = self.requestKeepAlive && head.isKeepAlive && head.status != .switchingProtocols
        self.isInflated = self.maximumInflatedSize != .max && isCompressed
        self.inflatedBytes = 0
        self.consumerWantsMore = true
        self.headDelivered = false
        self.state = .streaming
        return .hold
    }

    enum BodyAction {
        /// Give the bytes to the body stream, then report its answer with ``bodyYielded(wantsMore:)``.
        case yield
        /// The head is still held: keep the bytes with it.
        case hold
        /// No body is streaming (the exchange failed): drop the bytes.
        case ignore
        /// The body broke a limit: fail the exchange with this error.
        case fail(BulwarkError)
    }

    /// `count` body bytes arrived at `now`.
    mutating func receivedBody(count: Int, now: NIODeadline) -> BodyAction {
        self.lastActivity = now
        guard case .streaming = self.state else { return .ignore }
        if self.isInflated {
            self.inflatedBytes += count
            if self.inflatedBytes > self.maximumInflatedSize {
                let limit = HTTPExchangeHandler.sizeText(self.maximumInflatedSize)
                return .fail(
                    BulwarkError(
                        .decompressionLimitExceeded,
                        host: self.host,
                        detail: "the response inflates to more than \(limit)"
                    )
                )
            }
        }
        return self.headDelivered ? .yield : .hold
    }

    /// The body stream took a part; `wantsMore` is false when its buffer is full (no more socket reads until the
    /// reader asks).
    mutating func bodyYielded(wantsMore: Bool) {
        self.consumerWantsMore = wantsMore
    }

    enum EndAction: Equatable {
        /// No body is streaming: nothing to do.
        case ignore
        /// The exchange is over: give the connection back (reusable when `keepAlive`) before finishing the body, and
        /// read the socket at once when `readNow` (a read was held back).
        case complete(keepAlive: Bool, readNow: Bool)
        /// The response ended while the request's body was still being written (a server may answer early, e.g. a
        /// 413 from the head alone): the exchange is over and the response stands, but the connection still carries
        /// the body, so it is not reusable and closes; the rest of the body is refused with this error.
        case completeBeforeRequestEnded(BulwarkError)
    }

    /// The response ended at `now`. A head still held is handed out now, with the whole body.
    mutating func receivedEnd(now: NIODeadline) -> EndAction {
        self.lastActivity = now
        guard case .streaming = self.state else { return .ignore }
        if !self.requestEnded {
            let error = BulwarkError(
                .requestBodyFailed,
                host: self.host,
                detail: "the server answered before the whole request body was sent; the rest was not sent"
            )
            self.state = .closed(error)
            self.answeredBeforeRequestEnded = true
            self.readPending = false
            return .completeBeforeRequestEnded(error)
        }
        self.state = .idle
        self.consumerWantsMore = true
        let readNow = self.readPending
        self.readPending = false
        return .complete(keepAlive: self.responseKeepAlive, readNow: readNow)
    }

    /// The streamed request body's end is written now.
    mutating func requestBodyEnded() {
        self.requestEnded = true
    }

    /// `count` bytes of the streamed request body are written now. True when they complete the length the head
    /// declared: the request ends with them (write its end now), since the server, which frames the body by that
    /// length, has the whole request once it has these bytes and may answer at once. Waiting for the producer to say
    /// that it is done would take that answer for one that came before the request ended, and close a connection that
    /// could serve the next request.
    mutating func requestBodyWritten(_ count: Int) -> Bool {
        guard !self.requestEnded, let remaining = self.requestBodyRemaining else { return false }
        self.requestBodyRemaining = remaining - count
        guard remaining - count <= 0 else { return false }
        self.requestEnded = true
        return true
    }

    /// The read that brought response parts is over: true to hand out the held head now, with a body stream that
    /// starts with the bytes held with it.
    mutating func readCompleted() -> Bool {
        guard case .streaming = self.state, !self.headDelivered else { return false }
        self.headDelivered = true
        return true
    }

    // MARK: Demand

    /// The channel wants to read: true to read now, false to hold the read until the reader asks for more.
    mutating func readRequested() -> Bool {
        if self.consumerWantsMore { return true }
        self.readPending = true
        return false
    }

    /// The body's reader asks for more at `now`: true to read the socket now (a read was held back).
    mutating func demandResumed(now: NIODeadline) -> Bool {
        self.consumerWantsMore = true
        self.lastActivity = now
        let readNow = self.readPending
        self.readPending = false
        return readNow
    }

    /// The body's reader went away: the error to fail the exchange with, if a body was streaming (the rest cannot be
    /// skipped safely, so the connection closes).
    func consumerTerminated() -> BulwarkError? {
        guard case .streaming = self.state else { return nil }
        return BulwarkError(.cancelled, host: self.host, detail: "response body abandoned")
    }
}
