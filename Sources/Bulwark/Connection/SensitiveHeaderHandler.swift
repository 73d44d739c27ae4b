import NIOCore
import NIOHPACK
import NIOHTTP2

/// Marks credential headers of outgoing HTTP/2 requests as never indexed (RFC 7541 section 7.1.3).
///
/// `HTTP2FramePayloadToHTTP1ClientCodec` makes every header indexable, so without this handler an `Authorization` or
/// `Cookie` value would enter the connection's HPACK dynamic table on both ends: it would stay there for later
/// requests to compress against (the CRIME family of attacks guesses secrets from compressed sizes), and an
/// intermediary would be told it may index it too. Never-indexed fields are sent literally and must stay literal on
/// every hop.
///
/// Sits between the stream channel and the codec, so it sees the `HEADERS` payloads the codec makes.
final class SensitiveHeaderHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    /// Lower-case names of the headers that are never indexed.
    let names: Set<String>
    /// Bit `n` set when a name of `names` is `n` bytes long (63 for any longer name): a header whose length has no bit
    /// is not looked up, so a request without credentials hashes no header name.
    private let lengths: UInt64

    init(names: Set<String>) {
        self.names = names
        self.lengths = names.reduce(0) { $0 | Self.lengthBit($1) }
    }

    private static func lengthBit(_ name: String) -> UInt64 {
        1 << UInt64(min(name.utf8.count, 63))
    }

    /// Whether `name` is one of ``names``.
    func isSensitive(_ name: String) -> Bool {
        self.lengths & Self.lengthBit(name) != 0 && self.names.contains(name)
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
}
