import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP2

/// Drains an HTTP/2 connection whose server sent GOAWAY, in its pipeline after NIOHTTP2's handler (which passes the
/// connection's own frames on).
///
/// A server sends GOAWAY when it stops taking streams on a connection (RFC 9113 section 6.8): after a number of
/// requests (nginx's `keepalive_requests`), on reload or shutdown. It finishes the streams up to the one it names and
/// may keep the connection open meanwhile, and NIOHTTP2 refuses every stream opened after it. So the connection
/// drains (``HTTP2Connection/Usage``): the pool hands it out no more, the requests after the GOAWAY open a new
/// connection, and it closes once the last request holding it ends, at once if none does. The last stream the GOAWAY
/// names is kept there too: NIOHTTP2 closes the streams above it with CANCEL, and ``HTTP2StreamCodec`` tells their
/// requests that the server did not process them.
final class HTTP2GoAwayHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame

    let usage: NIOLockedValueBox<HTTP2Connection.Usage>

    init(usage: NIOLockedValueBox<HTTP2Connection.Usage>) {
        self.usage = usage
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .goAway(let lastStreamID, _, _) = self.unwrapInboundIn(data).payload {
            let close = self.usage.withLockedValue { usage in
                usage.goAwayLastStreamID = lastStreamID
                return usage.drain()
            }
            if close { context.close(promise: nil) }
        }
        context.fireChannelRead(data)
    }
}
