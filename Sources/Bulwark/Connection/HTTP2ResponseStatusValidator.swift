import NIOCore
import NIOHPACK
import NIOHTTP2

/// Refuses an HTTP/2 response whose `:status` is not exactly three ASCII digits, before NIOHTTP2's HTTP/1 codec reads
/// it.
///
/// The codec parses the status with `Int(_:radix:)`, which accepts a sign and any length, and NIOHTTP1 then converts
/// the value to `UInt`: a `:status` of `-10` traps the process (found by the `http` fuzz target, issue 23). RFC 9110
/// defines `status-code = 3DIGIT`; anything else ends the exchange with `invalid_response`. Header blocks without
/// `:status` (trailers) pass untouched.
final class HTTP2ResponseStatusValidator: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTP2Frame.FramePayload

    private let host: String
    private var refused = false

    init(host: String) {
        self.host = host
    }

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
