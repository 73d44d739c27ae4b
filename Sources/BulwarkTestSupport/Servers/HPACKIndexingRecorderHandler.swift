import NIOCore
import NIOHTTP2

/// Records, for each `HEADERS` payload an HTTP/2 stream receives, which fields the client sent never indexed.
/// Sits first in the stream's pipeline, before the HTTP/1 codec, which drops that information.
final class HPACKIndexingRecorderHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTP2Frame.FramePayload

    private let recorder: ServerRecorder

    init(recorder: ServerRecorder) {
        self.recorder = recorder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .headers(let payload) = self.unwrapInboundIn(data) {
            self.recorder.http2HeadersReceived(payload.headers.map { ($0.name, $0.indexable == .neverIndexed) })
        }
        context.fireChannelRead(data)
    }
}
