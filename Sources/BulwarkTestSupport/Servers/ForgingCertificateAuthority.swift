import BulwarkPolicy
import NIOSSL
import X509

/// The CA of an intercepting proxy: mints, per requested server name, a leaf under its own root, as
/// Charles or mitmproxy do.
final class ForgingCertificateAuthority: Sendable {
    /// The host forged up front; it is also what a client without SNI gets.
    let defaultChain: TestChain

    private let forged = LockedValue([String: NIOSSLContextConfigurationOverride]())

    /// A CA whose first forged leaf names `host` (as an IP address SAN when `host` is an IP address).
    init(host: String) throws {
        if IPAddress(host) != nil {
            self.defaultChain = try TestChain.make(.ipAddressSAN, host: host, ipAddress: host)
        } else {
            self.defaultChain = try TestChain.make(host: host)
        }
    }

    /// The callback NIOSSL calls with each ClientHello's SNI name.
    var contextCallback: NIOSSLContextCallback {
        { [self] values, promise in
            guard let name = values.serverHostname?.lowercased(), !self.presentsByDefault(name) else {
                promise.succeed(.noChanges)
                return
            }
            promise.completeWith(Result { try self.override(for: name) })
        }
    }

    private func presentsByDefault(_ name: String) -> Bool {
        let names = try? self.defaultChain.leaf.certificate.extensions.subjectAlternativeNames
        return names?.contains(.dnsName(name)) ?? false
    }

    private func override(for name: String) throws -> NIOSSLContextConfigurationOverride {
        if let cached = self.forged.withLock({ $0[name] }) {
            return cached
        }
        guard let intermediate = self.defaultChain.intermediate else {
            throw CertificateFactoryError(message: "the forging CA has no intermediate")
        }
        let leaf = try CertificateFactory.issueLeaf(from: intermediate, commonName: name, dnsNames: [name])
        var override = NIOSSLContextConfigurationOverride()
        override.certificateChain = [
            .certificate(try TestHTTPSServer.nioCertificate(leaf.certificate)),
            .certificate(try TestHTTPSServer.nioCertificate(intermediate.certificate)),
        ]
        override.privateKey = .privateKey(try TestHTTPSServer.nioPrivateKey(leaf.privateKey))
        self.forged.withLock { $0[name] = override }
        return override
    }
}
