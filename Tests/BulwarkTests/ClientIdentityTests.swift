import BulwarkPolicy
import BulwarkTestSupport
import Crypto
import Foundation
import NIOCore
import Testing
import X509
import _CryptoExtras

@testable import Bulwark

/// Client certificates made in process: a CA and a leaf for client authentication.
enum ClientCertificates {
    static func leaf(
        _ ca: TestIdentity,
        key: TestKeyAlgorithm = .p256,
        usage: [ExtendedKeyUsage.Usage] = [.clientAuth],
        validity: CertificateFactory.Validity = .current,
        commonName: String = "device-42"
    ) throws -> TestIdentity {
        try CertificateFactory.issueLeaf(
            from: ca,
            commonName: commonName,
            dnsNames: [],
            extendedKeyUsage: usage,
            key: key,
            validity: validity
        )
    }

    static func identity(_ leaf: TestIdentity, keyPEM: String? = nil) throws -> ClientIdentity {
        try ClientIdentity.pem(
            certificateChain: Array(leaf.certificatePEM.utf8),
            privateKey: SecretBytes(utf8: keyPEM ?? leaf.privateKeyPEM)
        )
    }

    /// Runs `body`, expecting a ``ClientIdentityError`` of `code`; returns it.
    @discardableResult
    static func expectError(
        _ code: ClientIdentityError.Code,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () throws -> Void
    ) -> ClientIdentityError? {
        do {
            try body()
            Issue.record("expected \(code), but loading succeeded", sourceLocation: sourceLocation)
        } catch let error as ClientIdentityError {
            #expect(error.code == code, "got \(error)", sourceLocation: sourceLocation)
            return error
        } catch {
            Issue.record("expected ClientIdentityError \(code), got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    /// A client certificate with an Ed25519 key, and the key as PKCS#8 PEM (RFC 8410).
    static func ed25519Leaf(_ ca: TestIdentity, commonName: String = "ed25519-device") throws -> (TestIdentity, String)
    {
        let key = Curve25519.Signing.PrivateKey()
        var blueprint = CertificateBlueprint(
            commonName: commonName,
            privateKey: Certificate.PrivateKey(key),
            notBefore: Date() - 3600,
            notAfter: Date() + 86_400
        )
        blueprint.extendedKeyUsage = [.clientAuth]
        let der: [UInt8] =
            [0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]
            + Array(key.rawRepresentation)
        let pem = "-----BEGIN PRIVATE KEY-----\n\(Data(der).base64EncodedString())\n-----END PRIVATE KEY-----\n"
        return (try blueprint.issue(issuer: ca), pem)
    }

    /// The base64 lines of a PEM text (its secret contents, for a key).
    static func base64Lines(_ pem: String) -> [String] {
        pem.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("-----") && $0.count > 8 }
    }
}

@Suite("Client identities: loading, checks, redaction")
struct ClientIdentityTests {
    @Test("a P-256, P-384 or RSA-2048 identity loads from PEM", arguments: TestKeyAlgorithm.allCases)
    func loads(key: TestKeyAlgorithm) throws {
        let ca = try CertificateFactory.makeRoot()
        let leaf = try ClientCertificates.leaf(ca, key: key)
        let identity = try ClientCertificates.identity(leaf)
        #expect(identity.subject == "CN=device-42")
        #expect(identity.fingerprint == ClientCertificateCheck.fingerprint(of: leaf.certificate))
        #expect(identity.certificateChain == [leaf.certificate])
        #expect(identity.leaf == leaf.certificate)
    }

    @Test("PKCS#1 (RSA PRIVATE KEY), PKCS#8 (PRIVATE KEY) and DER keys load")
    func keyFormats() throws {
        let ca = try CertificateFactory.makeRoot()
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        var blueprint = CertificateBlueprint(
            commonName: "rsa-device",
            privateKey: Certificate.PrivateKey(rsa),
            notBefore: Date() - 3600,
            notAfter: Date() + 86_400
        )
        blueprint.extendedKeyUsage = [.clientAuth]
        let leaf = try blueprint.issue(issuer: ca)
        #expect(rsa.pemRepresentation.hasPrefix("-----BEGIN RSA PRIVATE KEY-----"))
        #expect(rsa.pkcs8PEMRepresentation.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        for pem in [rsa.pemRepresentation, rsa.pkcs8PEMRepresentation] {
            let identity = try ClientCertificates.identity(leaf, keyPEM: pem)
            #expect(identity.subject == "CN=rsa-device")
        }
        let der = try ClientIdentity.pem(
            certificateChain: Array(leaf.certificatePEM.utf8),
            privateKey: SecretBytes(Array(rsa.derRepresentation))
        )
        #expect(der.subject == "CN=rsa-device")

        let p256 = P256.Signing.PrivateKey()
        var ecBlueprint = CertificateBlueprint(
            commonName: "ec-device",
            privateKey: Certificate.PrivateKey(p256),
            notBefore: Date() - 3600,
            notAfter: Date() + 86_400
        )
        ecBlueprint.extendedKeyUsage = [.clientAuth]
        let ecLeaf = try ecBlueprint.issue(issuer: ca)
        #expect(p256.pemRepresentation.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let ec = try ClientCertificates.identity(ecLeaf, keyPEM: p256.pemRepresentation)
        #expect(ec.subject == "CN=ec-device")
    }

    @Test("an Ed25519 identity loads from PKCS#8 PEM and DER; a mismatched Ed25519 key is refused")
    func ed25519() throws {
        let ca = try CertificateFactory.makeRoot()
        let (leaf, pem) = try ClientCertificates.ed25519Leaf(ca)
        let identity = try ClientCertificates.identity(leaf, keyPEM: pem)
        #expect(identity.subject == "CN=ed25519-device")
        let body = pem.split(separator: "\n")[1]
        let der = try ClientIdentity.pem(
            certificateChain: Array(leaf.certificatePEM.utf8),
            privateKey: SecretBytes(Array(Data(base64Encoded: String(body))!))
        )
        #expect(der.subject == "CN=ed25519-device")
        let (_, otherPEM) = try ClientCertificates.ed25519Leaf(ca)
        ClientCertificates.expectError(.keyMismatch) {
            _ = try ClientCertificates.identity(leaf, keyPEM: otherPEM)
        }
    }

    @Test("a certificate chain with an intermediate keeps its order, leaf first")
    func chainOrder() throws {
        let ca = try CertificateFactory.makeRoot()
        let intermediate = try CertificateFactory.issueIntermediate(from: ca)
        let leaf = try ClientCertificates.leaf(intermediate)
        let identity = try ClientIdentity.pem(
            certificateChain: Array((leaf.certificatePEM + intermediate.certificatePEM).utf8),
            privateKey: SecretBytes(utf8: leaf.privateKeyPEM)
        )
        #expect(identity.certificateChain == [leaf.certificate, intermediate.certificate])
    }

    @Test("every loading problem is a typed error naming the certificate, never the key")
    func errors() throws {
        let ca = try CertificateFactory.makeRoot()
        let leaf = try ClientCertificates.leaf(ca)
        let other = try ClientCertificates.leaf(ca)
        let mismatch = ClientCertificates.expectError(.keyMismatch) {
            _ = try ClientCertificates.identity(leaf, keyPEM: other.privateKeyPEM)
        }
        #expect(mismatch?.subject == "CN=device-42")
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        ClientCertificates.expectError(.keyMismatch) {
            _ = try ClientCertificates.identity(leaf, keyPEM: rsa.pemRepresentation)
        }
        ClientCertificates.expectError(.expired) {
            _ = try ClientCertificates.identity(try ClientCertificates.leaf(ca, validity: .expired))
        }
        ClientCertificates.expectError(.notYetValid) {
            _ = try ClientCertificates.identity(try ClientCertificates.leaf(ca, validity: .notYetValid))
        }
        ClientCertificates.expectError(.missingClientAuth) {
            _ = try ClientCertificates.identity(try ClientCertificates.leaf(ca, usage: [.serverAuth]))
        }
        ClientCertificates.expectError(.unreadableKey) {
            _ = try ClientCertificates.identity(
                leaf,
                keyPEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
            )
        }
        ClientCertificates.expectError(.passphraseRequired) {
            _ = try ClientCertificates.identity(
                leaf,
                keyPEM: "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"
            )
        }
        ClientCertificates.expectError(.noCertificate) {
            _ = try ClientIdentity.pem(certificateChain: [], privateKey: SecretBytes(utf8: leaf.privateKeyPEM))
        }
        ClientCertificates.expectError(.unreadableCertificate) {
            _ = try ClientIdentity.pem(
                certificateChain: Array("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".utf8),
                privateKey: SecretBytes(utf8: leaf.privateKeyPEM)
            )
        }
        // No error text holds any line of the key.
        do {
            _ = try ClientCertificates.identity(leaf, keyPEM: other.privateKeyPEM)
        } catch {
            for text in [String(describing: error), String(reflecting: error)] {
                for line in ClientCertificates.base64Lines(other.privateKeyPEM) { #expect(!text.contains(line)) }
            }
        }
    }

    @Test("description, debugDescription, dump and Mirror show the subject and fingerprint, never the key")
    func redaction() throws {
        let ca = try CertificateFactory.makeRoot()
        let leaf = try ClientCertificates.leaf(ca, key: .rsa2048)
        let identity = try ClientCertificates.identity(leaf)
        var dumped = ""
        dump(identity, to: &dumped)
        var configuration = BulwarkClient.Configuration(trust: try ServerTrustManager(evaluators: [:]))
        configuration.clientIdentities = try .init(["api.bulwark.test": identity])
        var dumpedConfiguration = ""
        dump(configuration.clientIdentities, to: &dumpedConfiguration)
        let texts = [
            identity.description, identity.debugDescription, "\(identity)", String(reflecting: identity), dumped,
            String(describing: Mirror(reflecting: identity).children.map { "\($0.label ?? ""): \($0.value)" }),
            String(describing: configuration.clientIdentities), dumpedConfiguration,
        ]
        let der = try leaf.privateKey.serializeAsPEM().derBytes
        let keyLines = ClientCertificates.base64Lines(leaf.privateKeyPEM)
        #expect(!keyLines.isEmpty)
        for text in texts {
            for line in keyLines { #expect(!text.contains(line)) }
            #expect(!text.contains(Data(der).base64EncodedString().prefix(40)))
        }
        #expect(identity.description.contains("CN=device-42"))
        #expect(identity.description.contains(identity.fingerprint))
        #expect(identity.description.contains("<redacted>"))
        #expect(dumped.contains("<redacted>"))
    }

    @Test("the array copy handed to the TLS library is zeroed in its own storage")
    func wipingTheCopy() {
        // The release hook is process-wide and owned by the serialized zeroization suite; this checks the helper that
        // wipes Bulwark's one array copy of the key: every array sharing that storage reads zeros afterwards.
        var bytes = Array("-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEG\n".utf8)
        let sharing = bytes
        ClientIdentity.wipe(&bytes)
        #expect(bytes.isEmpty)
        #expect(!sharing.isEmpty)
        #expect(sharing.allSatisfy { $0 == 0 })
    }

    @Test("the most specific pattern selects the identity; other hosts and IP addresses get none")
    func selection() throws {
        let ca = try CertificateFactory.makeRoot()
        let device = try ClientCertificates.identity(try ClientCertificates.leaf(ca, commonName: "device"))
        let service = try ClientCertificates.identity(try ClientCertificates.leaf(ca, commonName: "service"))
        let identities = try BulwarkClient.ClientIdentities([
            "**.bank.example": service,
            "api.bank.example": device,
        ])
        #expect(identities.identity(forHost: "api.bank.example")?.identity == device)
        #expect(identities.identity(forHost: "API.Bank.Example.")?.identity == device)
        #expect(identities.identity(forHost: "www.bank.example")?.identity == service)
        #expect(identities.identity(forHost: "bank.example")?.identity == service)
        #expect(identities.identity(forHost: "bank.example.evil")?.identity == nil)
        #expect(identities.identity(forHost: "127.0.0.1") == nil)
        #expect(BulwarkClient.ClientIdentities().identity(forHost: "api.bank.example") == nil)
        #expect(device != service)
        #expect(device == device)
    }
}
