import BulwarkPolicy
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// Whether the server sent a CertificateRequest during one handshake: set by the certificate callback of the TLS
/// context lent to that handshake (see ``Connector/HandshakeContexts``), read once the handshake has completed.
final class CertificateRequestSignal: Sendable {
    private let seen = NIOLockedValueBox(false)

    init() {}

    /// Whether the server asked for a client certificate.
    var wasSeen: Bool { self.seen.withLockedValue { $0 } }

    func record() { self.seen.withLockedValue { $0 = true } }

    func reset() { self.seen.withLockedValue { $0 = false } }
}

extension Connector {
    /// The TLS contexts of this client's handshakes, each lent to one handshake at a time.
    ///
    /// A context's certificate callback is the only place that learns that a server sent a CertificateRequest
    /// (BoringSSL calls it then, and only then), and NIOSSL does not tell it which connection asked: so a context is
    /// lent to one handshake at a time, and its callback sets that handshake's ``CertificateRequestSignal``. nginx's
    /// page refusing a client certificate is read as that refusal only from a connection whose server asked (issue 39).
    ///
    /// A context goes back when its handshake has completed: its callback cannot fire again for that connection
    /// (NIOSSL's clients refuse renegotiation, and BoringSSL's clients do no post-handshake authentication); and when
    /// the connection failed before any TLS byte (no handshake ran on it). The context of a failed handshake is not
    /// lent again. Contexts are kept by kind: without a client certificate
    /// (named hosts), per identity and host (the context holds the identity's chain and key; BoringSSL takes a
    /// reference to the key object, it does not copy the key), and per IP-address host without a certificate (such a
    /// connection sends no SNI name, so its callback is the only place that knows the host for the withheld event).
    /// At most ``idlePerKind`` idle contexts of a kind are kept, and ``capacity`` kinds (a new kind takes the place
    /// of another's idle contexts). So a client making one connection at a time uses one context of a kind, and one
    /// making 32 at once, at most 32.
    final class HandshakeContexts: Sendable {
        enum Kind: Hashable, Sendable {
            case withoutCertificate
            case identity(ClientIdentity, host: String)
            case address(String)
        }

        /// A context lent to one handshake, with the signal its certificate callback sets.
        struct Lent: Sendable {
            let kind: Kind
            let context: NIOSSLContext
            let certificateRequest: CertificateRequestSignal
        }

        static let capacity = 256
        static let idlePerKind = 32

        private struct State {
            var idle: [Kind: [Lent]] = [:]
            /// The identities in use since the last ``forget(except:)``, nil before any: a context of another
            /// identity is not taken back, whenever it was lent, so a handshake under way (or a connection chosen)
            /// before a rotation cannot bring a forgotten identity's key back.
            var current: Set<ClientIdentity>?
        }

        private let state = NIOLockedValueBox(State())

        init() {}

        /// An idle context of `kind`, or a new one from `make`, given the signal its callback must set.
        func lend(_ kind: Kind, make: (CertificateRequestSignal) throws -> NIOSSLContext) rethrows -> Lent {
            let idle = self.state.withLockedValue { state -> Lent? in
                guard var contexts = state.idle[kind], let lent = contexts.popLast() else { return nil }
                state.idle[kind] = contexts.isEmpty ? nil : contexts
                return lent
            }
            if let idle { return idle }
            let signal = CertificateRequestSignal()
            return Lent(kind: kind, context: try make(signal), certificateRequest: signal)
        }

        /// Takes back a context whose handshake has completed (or never began), to lend it again. Beyond
        /// ``capacity`` kinds, the idle contexts of another kind are forgotten to make room.
        func giveBack(_ lent: Lent) {
            lent.certificateRequest.reset()
            self.state.withLockedValue { state in
                if case .identity(let identity, _) = lent.kind, let current = state.current,
                    !current.contains(identity)
                {
                    return
                }
                var contexts = state.idle[lent.kind] ?? []
                guard contexts.count < Self.idlePerKind else { return }
                if contexts.isEmpty, state.idle.count >= Self.capacity, let other = state.idle.keys.first {
                    state.idle[other] = nil
                }
                contexts.append(lent)
                state.idle[lent.kind] = contexts
            }
        }

        /// Forgets the contexts of identities not in `current`, and takes none of theirs back from now on:
        /// connections still open keep theirs, and the key object is freed (and zeroized by BoringSSL's allocator)
        /// when the last of them is gone.
        func forget(except current: Set<ClientIdentity>) {
            self.state.withLockedValue { state in
                state.current = current
                state.idle = state.idle.filter { kind, _ in
                    guard case .identity(let identity, _) = kind else { return true }
                    return current.contains(identity)
                }
            }
        }

        /// The number of identity and host pairs with an idle context.
        var identityCount: Int {
            self.state.withLockedValue { state in
                state.idle.keys.count { if case .identity = $0 { true } else { false } }
            }
        }
    }

    /// The TLS context of handshakes with `host` (nil: any named host, told by its SNI name): `settings`' TLS
    /// options, `identity`'s chain and key when one is offered, and a certificate callback (called by BoringSSL only
    /// when the server sends a CertificateRequest) that sets `signal` and reports the certificate as sent, or as
    /// withheld.
    ///
    /// - Throws: NIOSSL's error when it refuses the options or the identity.
    static func handshakeContext(
        settings: ConnectionSettings,
        host: String?,
        identity: ClientIdentity?,
        signal: CertificateRequestSignal
    ) throws -> NIOSSLContext {
        let monitor = settings.eventMonitor
        var tls = Self.tlsConfiguration(settings.tls)
        if let identity {
            tls.certificateChain = identity.material.chain.map { .certificate($0) }
            tls.privateKey = .privateKey(identity.material.privateKey)
            // The chain and key are already in the context, so nothing changes.
            tls.sslContextCallback = { values, promise in
                signal.record()
                monitor.record(Self.clientCertificateSentEvent(identity, host: host ?? values.serverHostname ?? ""))
                promise.succeed(.noChanges)
            }
        } else {
            let withholding = Self.withholdingCallback(monitor: monitor, address: host)
            tls.sslContextCallback = { values, promise in
                signal.record()
                withholding(values, promise)
            }
        }
        return try NIOSSLContext(configuration: tls)
    }

    /// A context lent to one handshake with `host`, offering `identity` if the server asks for a certificate.
    ///
    /// - Throws: ``BulwarkError`` with ``BulwarkError/Code/invalidConfiguration`` when the TLS library refuses the
    ///   identity or the options (both checked earlier, so not expected).
    func lendContext(host: String, sendsServerName: Bool, identity: ClientIdentity?) throws -> HandshakeContexts.Lent {
        let kind: HandshakeContexts.Kind =
            if let identity { .identity(identity, host: host) } else if sendsServerName {
                .withoutCertificate
            } else { .address(host) }
        let settings = self.settings
        do {
            return try self.handshakeContexts.lend(kind) { signal in
                let named: String? = identity != nil || !sendsServerName ? host : nil
                return try Self.handshakeContext(settings: settings, host: named, identity: identity, signal: signal)
            }
        } catch {
            let what = identity.map { "clientIdentities: the TLS library refused the identity \"\($0.subject)\"" }
            throw BulwarkError.invalidConfiguration(
                what ?? "the TLS library refused the TLS options for \(host)",
                underlying: String(reflecting: error)
            )
        }
    }

    /// The certificate callback of a context without a client certificate: it reports `client_certificate_withheld`
    /// and changes nothing, so the handshake goes on without a certificate and the server decides. The host is
    /// `address` for an IP-address host's own context, otherwise the SNI name.
    static func withholdingCallback(monitor: any EventMonitor, address: String? = nil) -> NIOSSLContextCallback {
        { values, promise in
            monitor.record(Self.clientCertificateWithheldEvent(host: address ?? values.serverHostname))
            promise.succeed(.noChanges)
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
