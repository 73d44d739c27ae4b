import NIOConcurrencyHelpers
import NIOCore

/// Remembers a server's alert about the client certificate on an HTTP/2 connection.
///
/// In TLS 1.3 the server checks the client's certificate after the client has finished its handshake, so a refusal
/// arrives as an alert once the connection is in use. On HTTP/1.1 the exchange handler sees that error itself; on
/// HTTP/2 the streams only see their connection close, so this handler, last in the connection's pipeline, keeps the
/// ``BulwarkError/Code/clientCertificateRejected`` error for the streams' requests to fail with instead.
final class ClientCertificateRejectionRecorder: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    let host: String
    /// `host:port`, as the error names the server.
    let authority: String
    /// The rejection, once the server sent it.
    let rejection: NIOLockedValueBox<BulwarkError?>

    init(host: String, port: Int, rejection: NIOLockedValueBox<BulwarkError?>) {
        self.host = host
        self.authority = HandshakeFailure.authority(host: host, port: port)
        self.rejection = rejection
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // An HTTPS proxy's alert, already named as the proxy's (ProxyTLSAlertHandler): kept for the streams too.
        if let error = error as? BulwarkError, error.code == .proxyHandshakeFailed {
            self.rejection.withLockedValue { $0 = $0 ?? error }
        } else if let alert = HandshakeFailure.clientCertificateAlert(in: error) {
            let rejection = HandshakeFailure.clientCertificateRejected(
                host: self.host,
                authority: self.authority,
                alert: alert,
                underlying: String(reflecting: error)
            )
            self.rejection.withLockedValue { $0 = $0 ?? rejection }
        }
        context.fireErrorCaught(error)
    }
}
