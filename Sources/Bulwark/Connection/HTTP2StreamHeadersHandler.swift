import NIOCore
import NIOHPACK
import NIOHTTP2

/// The header blocks of one HTTP/2 stream, both ways, in one handler: credential headers of the request go out never
/// indexed, and a response whose `:status` is not exactly three ASCII digits is refused before NIOHTTP2's HTTP/1 codec
/// reads it.
///
/// Sits between the stream channel and the codec (`HTTP2FramePayloadToHTTP1ClientCodec`), so it sees the `HEADERS`
/// payloads the codec makes and those the server sends. One handler rather than two: every handler of a stream is
/// made, linked into the pipeline and removed again for each request, and both checks look only at header blocks.
///
/// - Outgoing (RFC 7541 section 7.1.3): the codec makes every header indexable, so without this an `Authorization` or
///   `Cookie` value would enter the connection's HPACK dynamic table on both ends: it would stay there for later
///   requests to compress against (the CRIME family of attacks guesses secrets from compressed sizes), and an
///   intermediary would be told it may index it too. Never-indexed fields are sent literally and must stay literal on
///   every hop.
/// - Incoming: the codec parses the status with `Int(_:radix:)`, which accepts a sign and any length, and NIOHTTP1
///   then converts the value to `UInt`: a `:status` of `-10` traps the process (found by the `http` fuzz target,
///   issue 23). RFC 9110 defines `status-code = 3DIGIT`; anything else ends the exchange with `invalid_response`.
///   Header blocks without `:status` (trailers) pass untouched.
final class HTTP2StreamHeadersHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    /// Lower-case names of the request headers that are never indexed.
    let sensitiveNames: Set<String>
    /// Bit `n` set when a name of `sensitiveNames` is `n` bytes long (63 for any longer name): a header whose length
    /// has no bit is not looked up, so a request without credentials hashes no header name.
    private let sensitiveLengths: UInt64
    private let host: String
    private var refused = false

    init(sensitiveNames: Set<String>, host: String) {
        self.sensitiveNames = sensitiveNames
        self.sensitiveLengths = sensitiveNames.reduce(0) { $0 | Self.lengthBit($1) }
        self.host = host
    }

    // MARK: Outgoing: credential headers never indexed

    private static func lengthBit(_ name: String) -> UInt64 {
        1 << UInt64(min(name.utf8.count, 63))
    }

    /// Whether `name` is one of ``sensitiveNames``.
    func isSensitive(_ name: String) -> Bool {
        self.sensitiveLengths & Self.lengthBit(name) != 0 && self.sensitiveNames.contains(name)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .headers(var payload) = self.unwrapOutboundIn(data),
            payload.headers.contains(where: { self.isSensitive($0.name) })
        else {
            context.write(data, promise: promise)
            return
        }
        var headers = HPACKHeaders()
        headers.reserveCapacity(payload.headers.count)
        for (name, value, indexing) in payload.headers {
            headers.add(name: name, value: value, indexing: self.isSensitive(name) ? .neverIndexed : indexing)
        }
        payload.headers = headers
        context.write(self.wrapOutboundOut(.headers(payload)), promise: promise)
    }

    // MARK: Incoming: a three-digit status

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !self.refused else { return }
        if case .headers(let headers) = self.unwrapInboundIn(data), let status = Self.invalidStatus(in: headers.headers)
        {
            self.refused = true
            let shown = String(status.unicodeScalars.prefix(16)).debugDescription
            context.fireErrorCaught(
                BulwarkError(
                    .invalidResponse,
                    host: self.host,
                    detail: "the server sent an HTTP/2 status that is not three digits (\(shown))"
                )
            )
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }

    /// The first `:status` value of `headers` when they are refused (a value that is not three digits, or more than
    /// one `:status`); nil when they pass (one three-digit status, or none). No array or string is made for a head
    /// that passes: this runs on every response.
    static func invalidStatus(in headers: HPACKHeaders) -> String? {
        var first: String?
        for (name, value, _) in headers where name == ":status" {
            guard first == nil else { return first }
            guard Self.isThreeDigits(value) else { return value }
            first = value
        }
        return nil
    }

    static func isThreeDigits(_ text: String) -> Bool {
        let bytes = text.utf8
        return bytes.count == 3 && bytes.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
