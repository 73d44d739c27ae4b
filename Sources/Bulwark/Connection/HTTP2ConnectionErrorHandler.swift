import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2

/// Closes an HTTP/2 connection whose server sent bytes the client cannot read, last in its pipeline.
///
/// NIOHTTP2 answers a connection error with a GOAWAY and passes the error on; closing the connection is left to its
/// user, and RFC 9113 section 5.4.1 says the endpoint MUST close it. Nothing did: against a server that kept the
/// connection open, a request on it waited for its read timeout. The errors reach this pipeline unwrapped, a stream's
/// as well as the connection's, and NIOHTTP2 raises several of them for frames the client sends too (a request's own
/// content-length, a stream created after the server's GOAWAY, a window update for a stream that ended), so only the
/// errors of reading received bytes close it: a header block the HPACK decoder refused (the two ends' compression
/// state is lost with it) and a frame that could not be parsed. Every other error is passed on, as before.
///
/// Their reason is kept in `failure` (unless one is there already, such as the client-certificate rejection that
/// ``ClientCertificateRejectionRecorder`` keeps) as an `invalid_response` for the connection's streams to fail with:
/// they only see the connection close.
final class HTTP2ConnectionErrorHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    let host: String
    let failure: NIOLockedValueBox<BulwarkError?>

    init(host: String, failure: NIOLockedValueBox<BulwarkError?>) {
        self.host = host
        self.failure = failure
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let what = Self.unreadable(error) else {
            context.fireErrorCaught(error)
            return
        }
        let failure = BulwarkError(
            .invalidResponse,
            host: self.host,
            detail: "the server sent \(what); the HTTP/2 connection was closed"
        )
        self.failure.withLockedValue { $0 = $0 ?? failure }
        context.close(promise: nil)
    }

    /// What the server sent, for an error of reading its bytes; nil for any other. Never the error's values: an HPACK
    /// error may hold a field's bytes.
    static func unreadable(_ error: any Error) -> String? {
        switch error {
        case is NIOHPACKErrors.MaxHeaderListSizeViolation, is NIOHTTP2Errors.ExcessivelyLargeHeaderBlock:
            return "a header block larger than the client allows"
        case is any NIOHPACKError:
            return "a header block the client cannot decode"
        case is NIOHTTP2Errors.UnableToParseFrame:
            return "a frame the client cannot parse"
        case is NIOHTTP2Errors.ExcessiveContinuationFrames:
            return "a header block in too many CONTINUATION frames"
        default:
            return nil
        }
    }
}
