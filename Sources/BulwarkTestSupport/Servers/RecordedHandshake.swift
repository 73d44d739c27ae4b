import NIOSSL

/// A TLS handshake a test server completed.
public struct RecordedHandshake: Sendable, Hashable {
    /// The ALPN protocol agreed on (`h2`, `http/1.1`), or nil when the client offered none the server accepts.
    public let applicationProtocol: String?
    /// The TLS version negotiated.
    public let tlsVersion: TLSVersion?
    /// Which connection: 1 for the server's first accepted connection, and so on.
    public let connectionID: Int

    /// A recorded handshake (public so tests can build expectations).
    public init(applicationProtocol: String?, tlsVersion: TLSVersion?, connectionID: Int) {
        self.applicationProtocol = applicationProtocol
        self.tlsVersion = tlsVersion
        self.connectionID = connectionID
    }
}
