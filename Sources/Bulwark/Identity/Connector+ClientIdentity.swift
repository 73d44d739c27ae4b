import BulwarkPolicy
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

extension Connector {
    /// The TLS contexts that offer a client certificate, one per identity and host, made on first use.
    ///
    /// A context holds the identity's chain and key (BoringSSL takes a reference to the key object, it does not copy
    /// the key) and a certificate callback that BoringSSL calls only when the server sends a CertificateRequest: that
    /// callback reports the `client_certificate_sent` event, for the host the context was made for (an IP-address
    /// host has no SNI name to tell it by). At most ``capacity`` contexts are kept; beyond that each connection makes
    /// its own.
    final class IdentityContexts: Sendable {
        struct Key: Hashable {
            var identity: ClientIdentity
            var host: String
        }

        static let capacity = 256
        private let contexts = NIOLockedValueBox<[Key: NIOSSLContext]>([:])
        /// The contexts without a client certificate for IP-address hosts, by address: such a connection sends no
        /// SNI name, so its context's callback is the only place that knows the host for the withheld event.
        private let addressContexts = NIOLockedValueBox<[String: NIOSSLContext]>([:])

        init() {}

        /// Forgets the contexts of identities not in `current`: connections still open keep theirs, and the key
        /// object is freed (and zeroized by BoringSSL's allocator) when the last of them is gone.
        func forget(except current: Set<ClientIdentity>) {
            self.contexts.withLockedValue { contexts in
                contexts = contexts.filter { current.contains($0.key.identity) }
            }
        }

        /// The number of contexts kept.
        var count: Int { self.contexts.withLockedValue { $0.count } }

        func withholdingContext(address: String, make: () throws -> NIOSSLContext) throws -> NIOSSLContext {
            if let context = self.addressContexts.withLockedValue({ $0[address] }) { return context }
            let context = try make()
            return self.addressContexts.withLockedValue { contexts in
                if let existing = contexts[address] { return existing }
                if contexts.count < Self.capacity { contexts[address] = context }
                return context
            }
        }

        func context(for key: Key, make: () throws -> NIOSSLContext) throws -> NIOSSLContext {
            if let context = self.contexts.withLockedValue({ $0[key] }) { return context }
            let context = try make()
            return self.contexts.withLockedValue { contexts in
                if let existing = contexts[key] { return existing }
                if contexts.count < Self.capacity { contexts[key] = context }
                return context
            }
        }
    }

    /// The TLS context for connections to `host` that offer `identity`: the client's TLS options, the identity's
    /// chain and key, and the callback that reports the certificate when a server asks for it.
    ///
    /// - Throws: ``BulwarkError`` with ``BulwarkError/Code/invalidConfiguration`` when the TLS library refuses the
    ///   identity (checked when it was loaded, so not expected).
    func sslContext(for identity: ClientIdentity, host: String) throws -> NIOSSLContext {
        let key = IdentityContexts.Key(identity: identity, host: host)
        let options = self.settings.tls
        let monitor = self.settings.eventMonitor
        do {
            return try self.identityContexts.context(for: key) {
                var tls = Self.tlsConfiguration(options)
                tls.certificateChain = identity.material.chain.map { .certificate($0) }
                tls.privateKey = .privateKey(identity.material.privateKey)
                // Called by BoringSSL only when the server sent a CertificateRequest; the chain and key are already
                // in the context, so nothing changes.
                tls.sslContextCallback = { _, promise in
                    monitor.record(Self.clientCertificateSentEvent(identity, host: host))
                    promise.succeed(.noChanges)
                }
                return try NIOSSLContext(configuration: tls)
            }
        } catch {
            throw BulwarkError.invalidConfiguration(
                "clientIdentities: the TLS library refused the identity \"\(identity.subject)\"",
                underlying: String(reflecting: error)
            )
        }
    }

    /// The certificate callback of the context without a client certificate: BoringSSL calls it only when a server
    /// sends a CertificateRequest; it reports `client_certificate_withheld` and changes nothing, so the handshake goes
    /// on without a certificate and the server decides. The host is `address` for an IP-address host's own context
    /// (see ``withholdingContext(address:)``), otherwise the SNI name.
    static func withholdingCallback(monitor: any EventMonitor, address: String? = nil) -> NIOSSLContextCallback {
        { values, promise in
            monitor.record(Self.clientCertificateWithheldEvent(host: address ?? values.serverHostname))
            promise.succeed(.noChanges)
        }
    }

    /// The TLS context for connections to the IP-address host `address` that offer no client certificate: the
    /// client's TLS options, with a callback that names the address when a server asks for a certificate (a
    /// connection to an address sends no SNI name to name it by).
    ///
    /// - Throws: ``BulwarkError`` with ``BulwarkError/Code/invalidConfiguration`` when the TLS library refuses the
    ///   options (checked when the client was made, so not expected).
    func withholdingContext(address: String) throws -> NIOSSLContext {
        let options = self.settings.tls
        let monitor = self.settings.eventMonitor
        do {
            return try self.identityContexts.withholdingContext(address: address) {
                var tls = Self.tlsConfiguration(options)
                tls.sslContextCallback = Self.withholdingCallback(monitor: monitor, address: address)
                return try NIOSSLContext(configuration: tls)
            }
        } catch {
            throw BulwarkError.invalidConfiguration(
                "the TLS library refused the TLS options for \(address)",
                underlying: String(reflecting: error)
            )
        }
    }

    /// `client_certificate_withheld`: a server asked for a client certificate and no identity is selected for it.
    static func clientCertificateWithheldEvent(host: String?) -> SecurityEvent {
        SecurityEvent(
            kind: .clientCertificateWithheld,
            host: host,
            message: "the server asked for a client certificate; none is selected for this host, so none was sent"
        )
    }

    /// `client_certificate_sent`: the host, the certificate's subject and fingerprint; never the key.
    static func clientCertificateSentEvent(_ identity: ClientIdentity, host: String) -> SecurityEvent {
        SecurityEvent(
            kind: .clientCertificateSent,
            host: host,
            message: "the server asked for a client certificate; sent \"\(identity.subject)\" "
                + "(sha256 \(identity.fingerprint))",
            details: [.certificate: .text(identity.subject), .fingerprint: .text(identity.fingerprint)]
        )
    }
}
