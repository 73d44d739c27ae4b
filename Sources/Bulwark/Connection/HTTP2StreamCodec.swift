import BulwarkPolicy
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// One HTTP/2 stream's exchange as HTTP/1 parts: the request's head, body and end become `HEADERS` and `DATA`
/// payloads, and the server's payloads become the response's head, body and end for ``HTTPExchangeHandler``.
///
/// In place of NIOHTTP2's `HTTP2FramePayloadToHTTP1ClientCodec` and a handler of Bulwark's own in front of it (one
/// handler fewer to make, link and remove on every request, and the head converted once, straight into the form it
/// goes out in). What it does that the codec did, and how it differs:
/// - The request's head: `:path`, `:method`, `:scheme` (`https`) and `:authority` (the `Host` field, which is
///   required and must be single), then the other fields with lower-case names, without the fields that only mean
///   something to one HTTP/1.1 connection (`Connection` and the fields it names, `Keep-Alive`, `Proxy-Connection`,
///   `Transfer-Encoding`, `Upgrade`; RFC 9113 section 8.2.2), names lower-cased byte by byte.
/// - A head HTTP/2 cannot carry is refused before any frame, with `invalid_response` and a detail that shows no
///   field value (NIOHTTP2 refused such heads later, with the values in its error): no Host or two, a CONNECT, an
///   empty target, a method, target or Host with a space or control character, a field name that is not a token
///   (RFC 9110; so ASCII, and never a `:` pseudo-field), a value with NUL, CR or LF, a TE other than "trailers"
///   (which goes out spelled so, whatever its case and spaces); and a body or end written before the head.
/// - Credential fields go out never indexed (RFC 7541 section 7.1.3): the codec makes every field indexable, so an
///   `Authorization` or `Cookie` value would enter the connection's HPACK dynamic table on both ends, where later
///   requests compress against it (the CRIME family of attacks guesses secrets from compressed sizes), and an
///   intermediary would be told it may index it too.
/// - The last payload written is held until the request's end or a flush, so that the end rides on it
///   (`END_STREAM` on the `HEADERS` of a request without a body, or on its last `DATA`).
/// - The response's `:status` must be exactly three ASCII digits, and single (RFC 9110: `status-code = 3DIGIT`):
///   the codec parsed it with `Int(_:radix:)`, which accepts a sign and any length, and NIOHTTP1 then converted the
///   value to `UInt`, so a `:status` of `-10` trapped the process (found by the `http` fuzz target, issue 23).
///   Anything else ends the exchange with `invalid_response`, as a header block after the trailers or body bytes
///   before the head do (NIOHTTP2's stream state machine refuses both first; the codec would have trapped).
/// - A received header block is checked here alone (NIOHTTP2's checks of header blocks are off for Bulwark's
///   connections, since the codec checks what it sends and reads every received block anyway, in one pass): one
///   `:status` first and no other pseudo-field (none in trailers), names that are lower-case tokens, no
///   connection-specific field, no NUL, CR or LF in a value (RFC 9113 sections 8.2 and 8.3); anything else is
///   `invalid_response`, with no field value in its text but a bad status's first 16 characters, and no name but
///   one of the five connection-specific ones (NIOHTTP2 reset the stream, and the exchange read that as the server
///   ending it).
/// - Informational heads (1xx) go no further (the exchange ignores them, and their `Content-Encoding` would switch
///   NIO's decompressor on for the final response); 101, a status below 100, a 1xx that ends the stream and trailers
///   that do not are `invalid_response`. A final response whose length is not given gets
///   `content-length: 0` (when the `HEADERS` end the stream) or `transfer-encoding: chunked` as the codec added them
///   (not after HEAD or CONNECT, nor for 204 and 304), so a response reads the same over both protocols.
final class HTTP2StreamCodec: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTP2Frame.FramePayload

    /// Lower-case names of the request fields that are never indexed.
    let sensitiveNames: Set<String>
    /// Bit `n` set when a name of `sensitiveNames` is `n` bytes long (63 for any longer name): a field whose length
    /// has no bit is not looked up, so a request without credentials hashes no field name.
    private let sensitiveLengths: UInt64
    private let host: String
    /// The request's method, once its head was written: a response to HEAD or CONNECT has no body to frame.
    private var requestMethod: HTTPMethod?
    private var pending: (payload: HTTP2Frame.FramePayload, promise: EventLoopPromise<Void>?)?
    private var response = ResponseState.awaitingHead
    private var refused = false
    /// Whether any header block of the response came (an informational one counts): the server processed the request.
    private var answered = false
    /// The connection's usage, where ``HTTP2GoAwayHandler`` keeps the last stream the server's GOAWAY said it
    /// processes (nil without a connection, in tests).
    private let usage: NIOLockedValueBox<HTTP2Connection.Usage>?

    private enum ResponseState {
        /// No final response head yet (informational ones may have come).
        case awaitingHead
        case body
        /// The stream's end or the trailers arrived.
        case ended
    }

    init(sensitiveNames: Set<String>, host: String, usage: NIOLockedValueBox<HTTP2Connection.Usage>? = nil) {
        self.sensitiveNames = sensitiveNames
        self.sensitiveLengths = sensitiveNames.reduce(0) { $0 | Self.lengthBit($1) }
        self.host = host
        self.usage = usage
    }

    private static func lengthBit(_ name: String) -> UInt64 {
        1 << UInt64(min(name.utf8.count, 63))
    }

    /// Whether `name` (lower-case) is one of ``sensitiveNames``.
    func isSensitive(_ name: String) -> Bool {
        self.sensitiveLengths & Self.lengthBit(name) != 0 && self.sensitiveNames.contains(name)
    }

    // MARK: Outgoing: the request

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch self.unwrapOutboundIn(data) {
        case .head(let head):
            guard self.requestMethod == nil else {
                self.refuseWrite("a second request head on one HTTP/2 stream", promise: promise, context: context)
                return
            }
            if let usage = self.usage, usage.withLockedValue({ $0.goAwayLastStreamID }) != nil {
                // The server's GOAWAY came before this stream opened: NIOHTTP2 would refuse its HEADERS and fail only
                // their write, and the exchange would wait for its read timeout. The request goes out on no stream.
                let error = Self.notSentAfterGoAway(host: self.host)
                promise?.fail(error)
                context.fireErrorCaught(error)
                return
            }
            let headers: HPACKHeaders
            do {
                headers = try self.requestHeaders(head)
            } catch {
                promise?.fail(error)
                context.fireErrorCaught(error)
                return
            }
            self.requestMethod = head.method
            self.pending = (.headers(.init(headers: headers)), self.watchingHeaders(promise, context: context))
        case .body(let body):
            guard self.requestMethod != nil else {
                self.refuseWrite("a request body before its head", promise: promise, context: context)
                return
            }
            let held = self.pending
            self.pending = (.data(.init(data: body)), promise)
            if let held { context.write(self.wrapOutboundOut(held.payload), promise: held.promise) }
        case .end(let trailers):
            guard self.requestMethod != nil else {
                self.refuseWrite("a request's end before its head", promise: promise, context: context)
                return
            }
            let trailerPayload: HTTP2Frame.FramePayload?
            do {
                trailerPayload = try trailers.map { .headers(.init(headers: try self.fields(of: $0), endStream: true)) }
            } catch {
                promise?.fail(error)
                context.fireErrorCaught(error)
                return
            }
            let held = self.pending
            self.pending = nil
            switch (held, trailerPayload) {
            case (.none, .none):
                let end = HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true))
                context.write(self.wrapOutboundOut(end), promise: promise)
            case (.none, .some(let trailerPayload)):
                context.write(self.wrapOutboundOut(trailerPayload), promise: promise)
            case (.some(var held), .none):
                switch held.payload {
                case .headers(var headers):
                    headers.endStream = true
                    held.payload = .headers(headers)
                case .data(var data):
                    data.endStream = true
                    held.payload = .data(data)
                default:
                    break
                }
                if let promise {
                    if let first = held.promise {
                        first.futureResult.cascade(to: promise)
                    } else {
                        held.promise = promise
                    }
                }
                context.write(self.wrapOutboundOut(held.payload), promise: held.promise)
            case (.some(let held), .some(let trailerPayload)):
                context.write(self.wrapOutboundOut(held.payload), promise: held.promise)
                context.write(self.wrapOutboundOut(trailerPayload), promise: promise)
            }
        }
    }

    func flush(context: ChannelHandlerContext) {
        if let held = self.pending {
            self.pending = nil
            context.write(self.wrapOutboundOut(held.payload), promise: held.promise)
        }
        context.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.failPending()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.failPending()
    }

    /// A payload still held when the stream went away never goes out: its write fails.
    private func failPending() {
        guard let held = self.pending else { return }
        self.pending = nil
        held.promise?.fail(
            BulwarkError(
                .remoteConnectionClosed,
                host: self.host,
                detail: "the HTTP/2 stream closed before the request went out"
            )
        )
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let error: any Error = self.unprocessed(error, context: context) ?? error
        if let held = self.pending {
            self.pending = nil
            held.promise?.fail(error)
        }
        context.fireErrorCaught(error)
    }

    /// The HEADERS' write promise (`promise`, or one of the codec's own), watched: NIOHTTP2 holds a new stream's HEADERS
    /// while the server's limit of concurrent streams is reached, and when the server's GOAWAY comes meanwhile it fails
    /// only their write once they are let go (`CreatedStreamAfterGoaway`, or `IOOnClosedConnection` once the GOAWAY's
    /// streams are done; raised on the connection), so the exchange waited for its read timeout (helper-28). Both are
    /// refusals of NIOHTTP2's state machine, before any byte of the frame is made: the stream is told that its request
    /// was not sent. (A failure of the socket's write is neither: bytes of the frame may have left.)
    private func watchingHeaders(
        _ promise: EventLoopPromise<Void>?,
        context: ChannelHandlerContext
    ) -> EventLoopPromise<Void> {
        let watched = promise ?? context.eventLoop.makePromise()
        let host = self.host
        watched.futureResult.assumeIsolated().whenFailure { error in
            guard error is NIOHTTP2Errors.CreatedStreamAfterGoaway || error is NIOHTTP2Errors.IOOnClosedConnection
            else { return }
            context.fireErrorCaught(Self.notSentAfterGoAway(host: host))
        }
        return watched
    }

    /// A request that went out on no stream, as the server's GOAWAY came first.
    static func notSentAfterGoAway(host: String) -> BulwarkError {
        BulwarkError(
            .remoteConnectionClosed,
            host: host,
            detail: "the server is closing the HTTP/2 connection (GOAWAY); the request was not sent",
            unprocessed: true
        )
    }

    /// The stream's end, when the server did not process its request (RFC 9113 sections 6.8 and 8.7): it refused the
    /// stream (REFUSED_STREAM), or the stream is above the last one its GOAWAY names (NIOHTTP2 closes those with
    /// CANCEL), and no response header block came. Such a request may be sent again whatever its method; nil for
    /// every other error. A connection's second refused stream drains it, as in OkHttp: the requests sent again go to
    /// a new connection.
    private func unprocessed(_ error: any Error, context: ChannelHandlerContext) -> BulwarkError? {
        guard !self.answered, let closed = error as? NIOHTTP2Errors.StreamClosed else { return nil }
        let refused = closed.errorCode == .refusedStream
        if refused {
            let close = self.usage?.withLockedValue { usage in
                usage.refusedStreams += 1
                return usage.refusedStreams >= 2 && usage.drain()
            }
            if close == true { context.channel.parent?.close(promise: nil) }
        } else {
            guard let last = self.usage?.withLockedValue({ $0.goAwayLastStreamID }), closed.streamID > last else {
                return nil
            }
        }
        return BulwarkError(
            .remoteConnectionClosed,
            host: self.host,
            detail: refused
                ? "the server refused the HTTP/2 stream before processing the request (REFUSED_STREAM)"
                : "the server is closing the HTTP/2 connection (GOAWAY) and did not process the request",
            unprocessed: true
        )
    }

    private func refuseWrite(_ detail: String, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        let error = Self.unsendable(detail, host: self.host)
        promise?.fail(error)
        context.fireErrorCaught(error)
    }

    /// A request head HTTP/2 cannot carry: `invalid_request`, as on HTTP/1.1 (`HTTP1RequestHeadCheck`); the detail
    /// says what it was.
    static func unsendable(_ detail: String, host: String) -> BulwarkError {
        BulwarkError(.invalidRequest, host: host, detail: "\(detail), which HTTP/2 cannot send")
    }

    /// The request head as HTTP/2 fields: the four pseudo-fields, then the head's fields without `Host` and the
    /// connection-specific ones, names lower-cased, credentials never indexed.
    func requestHeaders(_ head: HTTPRequestHead) throws -> HPACKHeaders {
        var authority: String?
        for (name, value) in head.headers where Self.isHost(name) {
            guard authority == nil else {
                throw Self.unsendable("the request has two Host fields", host: self.host)
            }
            authority = value
        }
        guard let authority else {
            throw Self.unsendable("the request has no Host field", host: self.host)
        }
        // NIOHTTP2 refuses these too, later, with the values (a CONNECT's whole block) in its error.
        guard head.method != .CONNECT else {
            throw Self.unsendable("the request's method is CONNECT", host: self.host)
        }
        guard !head.uri.isEmpty else {
            throw Self.unsendable("the request's target is empty", host: self.host)
        }
        guard Self.isPseudoFieldValue(head.method.rawValue), Self.isPseudoFieldValue(head.uri) else {
            throw Self.unsendable("the request's method or target has a space or a control character", host: self.host)
        }
        guard !authority.isEmpty, Self.isPseudoFieldValue(authority) else {
            throw Self.unsendable(
                "the request's Host field is empty or has a space or a control character",
                host: self.host
            )
        }
        var headers = HPACKHeaders()
        headers.reserveCapacity(head.headers.count + 3)
        headers.add(name: ":path", value: head.uri)
        headers.add(name: ":method", value: head.method.rawValue)
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: authority)
        try self.appendFields(of: head.headers, to: &headers, skippingHost: true)
        return headers
    }

    /// Trailer fields as HTTP/2 fields (the same rules as the head's, `Host` included as any other field).
    private func fields(of trailers: HTTPHeaders) throws -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(trailers.count)
        try self.appendFields(of: trailers, to: &headers, skippingHost: false)
        return headers
    }

    private func appendFields(of fields: HTTPHeaders, to headers: inout HPACKHeaders, skippingHost: Bool) throws {
        let connectionTokens = Self.connectionTokens(fields)
        for (name, value) in fields {
            if skippingHost, Self.isHost(name) { continue }
            guard HTTPToken.isToken(name) else {
                // Not shown: a name that is not a token may be a whole "Name: value" line, credential included.
                throw Self.unsendable(
                    "the request has a field whose name is not a token (\(name.utf8.count) bytes)",
                    host: self.host
                )
            }
            guard Self.isSendableValue(value) else {
                // The value is never shown: it may be a credential.
                throw Self.unsendable(
                    "the request's field \(name.shownAsFieldName) has a line break or NUL in its value",
                    host: self.host
                )
            }
            let lowered = Self.asciiLowercased(name)
            if Self.isConnectionSpecific(lowered) || connectionTokens.contains(lowered) { continue }
            if lowered == "te" {
                guard Self.isTrailers(value) else {
                    throw Self.unsendable("the request's TE field is not \"trailers\"", host: self.host)
                }
                // As RFC 9113 section 8.2.2 spells it: servers (NIOHTTP2's, Go's) take no other spelling.
                headers.add(name: lowered, value: "trailers")
                continue
            }
            headers.add(name: lowered, value: value, indexing: self.isSensitive(lowered) ? .neverIndexed : .indexable)
        }
    }

    /// RFC 9113 section 8.2.2: the only TE an HTTP/2 request may carry is "trailers".
    static func isTrailers(_ value: String) -> Bool {
        let trimmed = value.trimmingASCIISpaces()
        return trimmed.utf8.count == 8 && Self.asciiLowercased(trimmed) == "trailers"
    }

    /// A pseudo-field's value (`:method`, `:path`, `:authority`) has no space, no control character and no DEL: as
    /// NIOHTTP2 checks them, since `:path` becomes an HTTP/1.1 request line on a server that translates.
    static func isPseudoFieldValue(_ value: String) -> Bool {
        !value.utf8.contains { $0 <= 0x20 || $0 == 0x7F }
    }

    /// RFC 9113 section 8.2.1: a field value must not hold NUL, LF or CR.
    static func isSendableValue(_ value: String) -> Bool {
        !value.utf8.contains { $0 == 0 || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }
    }

    /// The field names a `Connection` field lists, lower-cased (RFC 9110 section 7.6.1): they belong to the
    /// HTTP/1.1 connection and are not sent on.
    private static func connectionTokens(_ fields: HTTPHeaders) -> [String] {
        var tokens: [String] = []
        for (name, value) in fields where name.utf8.count == 10 && Self.asciiLowercased(name) == "connection" {
            for token in value.split(separator: ",") {
                let trimmed = String(token).trimmingASCIISpaces()
                if !trimmed.isEmpty { tokens.append(Self.asciiLowercased(trimmed)) }
            }
        }
        return tokens
    }

    private static func isHost(_ name: String) -> Bool {
        name.utf8.count == 4 && Self.asciiLowercased(name) == "host"
    }

    /// RFC 9113 section 8.2.2: fields an HTTP/2 message must not carry.
    static func isConnectionSpecific(_ lowered: String) -> Bool {
        switch lowered.utf8.count {
        case 7: return lowered == "upgrade"
        case 10: return lowered == "connection" || lowered == "keep-alive"
        case 16: return lowered == "proxy-connection"
        case 17: return lowered == "transfer-encoding"
        default: return false
        }
    }

    /// `name` with ASCII upper-case letters lower-cased; the same string when it has none (no copy).
    static func asciiLowercased(_ name: String) -> String {
        guard name.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else { return name }
        return String(
            decoding: name.utf8.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 },
            as: UTF8.self
        )
    }

    // MARK: Incoming: the response

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !self.refused else { return }
        switch self.unwrapInboundIn(data) {
        case .headers(let payload):
            self.answered = true
            self.received(payload, context: context)
        case .data(let payload):
            guard case .body = self.response, case .byteBuffer(let buffer) = payload.data else {
                self.refuse("the server sent body bytes outside a response's body", context: context)
                return
            }
            guard payload.endStream else {
                context.fireChannelRead(self.wrapInboundOut(.body(buffer)))
                return
            }
            self.response = .ended
            if buffer.readableBytes > 0 { context.fireChannelRead(self.wrapInboundOut(.body(buffer))) }
            context.fireChannelRead(self.wrapInboundOut(.end(nil)))
        case .alternativeService, .rstStream, .priority, .windowUpdate, .settings, .pushPromise, .ping, .goAway,
            .origin:
            // No HTTP/1 counterpart; a stream's end by RST_STREAM reaches the exchange as the stream's error.
            break
        }
    }

    private func received(_ payload: HTTP2Frame.FramePayload.Headers, context: ChannelHandlerContext) {
        switch self.response {
        case .awaitingHead:
            let code: Int
            let fields: HTTPHeaders
            let declaresLength: Bool
            switch Self.read(payload.headers, isTrailers: false) {
            case .refused(let detail):
                self.refuse(detail, context: context)
                return
            case .fields(.none, _, _):
                self.refuse("the server sent an HTTP/2 response without a status", context: context)
                return
            case .fields(.some(let status), let regular, let declared):
                (code, fields, declaresLength) = (status, regular, declared)
            }
            guard code >= 100 else {
                self.refuse("the server sent the HTTP/2 status \(code), below 100", context: context)
                return
            }
            guard code != 101 else {
                self.refuse("the server sent 101 Switching Protocols, which HTTP/2 does not have", context: context)
                return
            }
            guard code >= 200 else {
                // Informational: the final head is still to come, so it cannot end the stream. It goes no further:
                // the exchange ignores it, and NIO's decompressor would take its Content-Encoding for the final
                // response's (it forgets a coding only at a response's end, which an HTTP/2 1xx head lacks), so a
                // body sent as it is would be inflated while the exchange counts it as not compressed.
                guard !payload.endStream else {
                    self.refuse("the server ended the HTTP/2 stream with an informational (1xx) head", context: context)
                    return
                }
                return
            }
            var head = HTTPResponseHead(version: .http2, status: HTTPResponseStatus(statusCode: code), headers: fields)
            if code != 204, code != 304, self.requestMethod != .HEAD, self.requestMethod != .CONNECT, !declaresLength {
                if payload.endStream {
                    head.headers.add(name: "content-length", value: "0")
                } else {
                    head.headers.add(name: "transfer-encoding", value: "chunked")
                }
            }
            self.response = payload.endStream ? .ended : .body
            context.fireChannelRead(self.wrapInboundOut(.head(head)))
            if payload.endStream { context.fireChannelRead(self.wrapInboundOut(.end(nil))) }
        case .body:
            guard payload.endStream else {
                self.refuse("the server sent trailers that do not end the HTTP/2 stream", context: context)
                return
            }
            switch Self.read(payload.headers, isTrailers: true) {
            case .refused(let detail):
                self.refuse(detail, context: context)
            case .fields(_, let trailers, _):
                self.response = .ended
                context.fireChannelRead(self.wrapInboundOut(.end(trailers)))
            }
        case .ended:
            self.refuse("the server sent a header block after the response's end", context: context)
        }
    }

    private func refuse(_ detail: String, context: ChannelHandlerContext) {
        self.refused = true
        context.fireErrorCaught(BulwarkError(.invalidResponse, host: self.host, detail: detail))
        context.close(promise: nil)
    }

    /// A received header block, read in one pass.
    enum ReceivedBlock: Equatable {
        /// The block as HTTP/2 allows it: its `:status` (nil when it has none, as trailers), its other fields, and
        /// whether one of them is `content-length`.
        case fields(status: Int?, HTTPHeaders, declaresLength: Bool)
        /// Why it is refused; the detail shows no field value but a bad status's first 16 characters, and no name
        /// but one of the five connection-specific ones.
        case refused(String)
    }

    /// Reads a response's header block (or, `isTrailers`, its trailers) as RFC 9113 allows it, in one pass that makes
    /// no string for a block that passes. NIOHTTP2 checks no received block for Bulwark (its checks are off, see
    /// `Connector.http2ConnectionConfiguration`): a block ran them and then this codec's own walks, three passes
    /// where one does. Refused: a pseudo-field other than one `:status` of three digits, or after a regular field, or
    /// in trailers (section 8.3); a name that is not a lower-case token (sections 8.2 and 8.2.1; so never empty); a
    /// connection-specific field (section 8.2.2); a value with NUL, CR or LF (section 8.2.1).
    static func read(_ block: HPACKHeaders, isTrailers: Bool) -> ReceivedBlock {
        var status: Int?
        var declaresLength = false
        var fields = HTTPHeaders()
        fields.reserveCapacity(block.count)
        for (name, value, _) in block {
            if name.utf8.first == UInt8(ascii: ":") {
                guard !isTrailers else { return .refused("the server sent a pseudo-field in HTTP/2 trailers") }
                guard fields.isEmpty else {
                    return .refused("the server sent an HTTP/2 pseudo-field after a regular field")
                }
                guard name == ":status" else {
                    return .refused("the server sent an HTTP/2 pseudo-field a response cannot have")
                }
                guard status == nil else { return .refused("the server sent two HTTP/2 statuses") }
                guard Self.isThreeDigits(value) else {
                    let shown = String(value.unicodeScalars.prefix(16)).debugDescription
                    return .refused("the server sent an HTTP/2 status that is not three digits (\(shown))")
                }
                status = value.utf8.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
                continue
            }
            guard HTTPToken.isLowerCaseToken(name) else {
                // Not shown: a malformed name may be a whole "Set-Cookie: …" line.
                return .refused("the server sent an HTTP/2 field whose name is not a lower-case token")
            }
            guard !Self.isConnectionSpecific(name) else {
                return .refused("the server sent the connection-specific field \"\(name)\", which HTTP/2 forbids")
            }
            guard Self.isSendableValue(value) else {
                return .refused("the server sent an HTTP/2 field value with NUL, CR or LF")
            }
            if name.utf8.count == 14, name == "content-length" { declaresLength = true }
            fields.add(name: name, value: value)
        }
        return .fields(status: status, fields, declaresLength: declaresLength)
    }

    static func isThreeDigits(_ text: String) -> Bool {
        let bytes = text.utf8
        return bytes.count == 3 && bytes.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
