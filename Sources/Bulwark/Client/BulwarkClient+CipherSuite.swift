import NIOSSL

extension BulwarkClient.TLSOptions {
    /// A TLS 1.2 cipher suite, by its IANA name. Only suites BoringSSL implements can be named, so a configuration
    /// cannot hold a cipher list BoringSSL would refuse (NIOSSL stops the process on such a list rather than throw).
    /// TLS 1.3 suites are fixed by BoringSSL and not configurable.
    public struct CipherSuite: Sendable, Hashable, CustomStringConvertible {
        /// The suite's IANA number.
        public let code: UInt16
        /// The suite's IANA name (`TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256`).
        public let name: String

        private init(_ code: UInt16, _ name: String) {
            self.code = code
            self.name = name
        }

        /// The suite's IANA name.
        public var description: String { self.name }

        var niotlsCipher: NIOTLSCipher { NIOTLSCipher(rawValue: self.code) }

        /// `TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256`.
        public static let ecdheECDSAWithAES128GCMSHA256 = Self(0xC02B, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256")
        /// `TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384`.
        public static let ecdheECDSAWithAES256GCMSHA384 = Self(0xC02C, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384")
        /// `TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256`.
        public static let ecdheECDSAWithChaCha20Poly1305SHA256 = Self(
            0xCCA9,
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
        )
        /// `TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`.
        public static let ecdheRSAWithAES128GCMSHA256 = Self(0xC02F, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
        /// `TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`.
        public static let ecdheRSAWithAES256GCMSHA384 = Self(0xC030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384")
        /// `TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256`.
        public static let ecdheRSAWithChaCha20Poly1305SHA256 = Self(
            0xCCA8,
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
        )
        /// `TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA`.
        ///
        /// > Warning: The CBC suites (this one and the three after it) MAC, then encrypt: they have a history of
        /// > padding-oracle and timing attacks (Lucky Thirteen). Offer them only to old servers that need them.
        public static let ecdheECDSAWithAES128CBCSHA = Self(0xC009, "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA")
        /// `TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA`.
        public static let ecdheECDSAWithAES256CBCSHA = Self(0xC00A, "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA")
        /// `TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA`.
        public static let ecdheRSAWithAES128CBCSHA = Self(0xC013, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA")
        /// `TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA`.
        public static let ecdheRSAWithAES256CBCSHA = Self(0xC014, "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA")

        /// The forward-secret AEAD suites: what a modern server offers.
        public static let modern: [CipherSuite] = [
            .ecdheECDSAWithAES128GCMSHA256, .ecdheRSAWithAES128GCMSHA256, .ecdheECDSAWithAES256GCMSHA384,
            .ecdheRSAWithAES256GCMSHA384, .ecdheECDSAWithChaCha20Poly1305SHA256, .ecdheRSAWithChaCha20Poly1305SHA256,
        ]
    }
}
