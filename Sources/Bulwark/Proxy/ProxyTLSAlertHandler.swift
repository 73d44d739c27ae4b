import NIOCore

/// Between an HTTPS proxy's TLS handler and the origin's: an alert about the client certificate from the proxy's TLS
/// becomes a ``BulwarkError/Code/proxyHandshakeFailed`` error that names the proxy.
///
/// Both TLS layers raise the same kind of error, and an alert such as `certificate required` from the proxy (which
/// checks a client certificate after the client finished its TLS 1.3 handshake) would otherwise read as the origin
/// refusing the client certificate. Errors from the origin's TLS come from below this handler and pass it untouched,
/// as does every other error of the proxy's (an unclean close stays a closed connection).
final class ProxyTLSAlertHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    /// The origin.
    let host: String
    /// The proxy, `host:port`.
    let proxy: String

    init(host: String, proxy: String) {
        self.host = host
        self.proxy = proxy
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let alert = HandshakeFailure.clientCertificateAlert(in: error) else {
            context.fireErrorCaught(error)
            return
        }
        context.fireErrorCaught(
            BulwarkError(
                .proxyHandshakeFailed,
                host: self.host,
                detail: "the HTTPS proxy at \(self.proxy) ended its TLS connection with the alert \"\(alert)\" "
                    + "(about a client certificate for the proxy, which Bulwark does not send; not the origin's answer)",
                underlying: String(reflecting: error)
            )
        )
    }
}
