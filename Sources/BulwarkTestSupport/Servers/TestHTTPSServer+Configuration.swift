import NIOSSL
import X509

extension TestHTTPSServer {
    /// What a test server presents and how it behaves.
    public struct Configuration: Sendable {
        /// The certificates presented, leaf first.
        public var chain: [Certificate]
        /// The leaf's private key.
        public var privateKey: Certificate.PrivateKey
        /// ALPN protocols the server accepts, in its order of preference. `h2` serves HTTP/2, anything else
        /// (or no ALPN at all) HTTP/1.1. Empty disables ALPN.
        public var alpn: [String]
        /// The lowest TLS version accepted.
        public var minimumTLSVersion: TLSVersion
        /// The highest TLS version accepted; nil for the highest BoringSSL knows (TLS 1.3).
        public var maximumTLSVersion: TLSVersion?
        /// How the server misbehaves, if at all.
        public var behavior: Behavior
        /// The port to listen on; 0 picks a free one.
        public var port: Int
        /// Whether ``TestHTTPSServer/requests`` keeps every request. Turn off for long benchmark runs; the counters
        /// still count.
        public var recordsRequests: Bool = true
        /// Whether the server requires a client certificate (it trusts none, so every client's handshake fails with a
        /// TLS alert from the server).
        public var requiresClientCertificate: Bool = false
        /// The CAs whose client certificates the server accepts when ``requiresClientCertificate`` is set; empty
        /// accepts none.
        public var clientCertificateRoots: [Certificate] = []

        /// A server presenting `chain` (leaf first) with the leaf's `privateKey`.
        public init(
            chain: [Certificate],
            privateKey: Certificate.PrivateKey,
            alpn: [String] = ["h2", "http/1.1"],
            minimumTLSVersion: TLSVersion = .tlsv12,
            maximumTLSVersion: TLSVersion? = nil,
            behavior: Behavior = .normal,
            port: Int = 0
        ) {
            self.chain = chain
            self.privateKey = privateKey
            self.alpn = alpn
            self.minimumTLSVersion = minimumTLSVersion
            self.maximumTLSVersion = maximumTLSVersion
            self.behavior = behavior
            self.port = port
        }

        /// A server presenting `chain.presentedChain` with the leaf's key.
        public init(
            chain: TestChain,
            alpn: [String] = ["h2", "http/1.1"],
            minimumTLSVersion: TLSVersion = .tlsv12,
            maximumTLSVersion: TLSVersion? = nil,
            behavior: Behavior = .normal,
            port: Int = 0
        ) {
            self.init(
                chain: chain.presentedChain,
                privateKey: chain.leaf.privateKey,
                alpn: alpn,
                minimumTLSVersion: minimumTLSVersion,
                maximumTLSVersion: maximumTLSVersion,
                behavior: behavior,
                port: port
            )
        }
    }
}
