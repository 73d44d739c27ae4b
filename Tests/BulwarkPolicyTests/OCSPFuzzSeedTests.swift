import BulwarkTestSupport
import Crypto
import Foundation
import Testing
import X509

@testable import BulwarkPolicy

/// The seeds of the `ocsp` fuzz target (Fuzz/Corpus/ocsp), built with the fixed keys and names of
/// Fuzz/Sources/BulwarkFuzzPolicy/OCSPTarget.swift: the committed seeds and freshly built ones must verify as the
/// target expects (so a change of the verifier cannot leave the fuzzer starting from inputs it refuses). With
/// `BULWARK_WRITE_OCSP_SEEDS` naming a directory, the fresh seeds are also written there:
/// `BULWARK_WRITE_OCSP_SEEDS=Fuzz/Corpus/ocsp swift test --skip-build --filter OCSPFuzzSeedTests`.
@Suite("OCSP fuzz seeds")
struct OCSPFuzzSeedTests {
    /// Fuzz/Corpus/ocsp in this checkout.
    static let committedSeeds = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // BulwarkPolicyTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()
        .appending(path: "Fuzz/Corpus/ocsp")

    static let time = Date(timeIntervalSince1970: 1_800_000_000)

    static func key(_ name: String) throws -> P256.Signing.PrivateKey {
        try P256.Signing.PrivateKey(rawRepresentation: SHA256.hash(data: Array(name.utf8)))
    }

    static func certificate(
        name: String,
        serial: Certificate.SerialNumber,
        key: P256.Signing.PublicKey
    ) throws
        -> Certificate
    {
        try Certificate(
            version: .v3,
            serialNumber: serial,
            publicKey: .init(key),
            notValidBefore: Self.time - 86_400 * 365,
            notValidAfter: Self.time + 86_400 * 365,
            issuer: try DistinguishedName { CommonName("Bulwark Fuzz OCSP CA") },
            subject: try DistinguishedName { CommonName(name) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: Certificate.Extensions(),
            issuerPrivateKey: .init(try Self.key("bulwark fuzz ocsp ca"))
        )
    }

    @Test func theSeedsVerifyAsTheTargetExpects() throws {
        let caKey = try Self.key("bulwark fuzz ocsp ca")
        let authority = try Self.certificate(name: "Bulwark Fuzz OCSP CA", serial: 1, key: caKey.publicKey)
        let good = try Self.certificate(name: "good.bulwark.test", serial: 0x3001, key: try Self.key("good").publicKey)
        let revoked = try Self.certificate(
            name: "revoked.bulwark.test",
            serial: 0x3002,
            key: try Self.key("rev").publicKey
        )
        let responderKey = try Self.key("bulwark fuzz ocsp responder")
        let responder = try OCSPResponseBuilder.responderCertificate(
            name: "Bulwark Fuzz OCSP Responder",
            key: responderKey,
            issuer: authority,
            issuerKey: caKey,
            notValidBefore: Self.time - 86_400 * 365,
            notValidAfter: Self.time + 86_400 * 365
        )
        let nonce = [UInt8](repeating: 0x4E, count: 32)
        func single(
            _ certificate: Certificate,
            _ status: OCSPResponseBuilder.CertificateStatus
        ) throws
            -> OCSPResponseBuilder.Single
        {
            try .init(
                certificate: certificate,
                issuer: authority,
                status: status,
                thisUpdate: Self.time - 3_600,
                nextUpdate: Self.time + 86_400 * 7
            )
        }
        func builder(_ responses: [OCSPResponseBuilder.Single]) -> OCSPResponseBuilder {
            var builder = OCSPResponseBuilder(
                responder: .name(of: authority),
                producedAt: Self.time - 60,
                responses: responses
            )
            builder.nonce = nonce
            return builder
        }
        var seeds: [String: [UInt8]] = [:]
        seeds["good-by-name"] = try builder([try single(good, .good)]).der(signedWith: caKey)
        var byKey = builder([try single(revoked, .revoked(Self.time - 7_200, reason: 1)), try single(good, .good)])
        byKey.responderID = .key(of: authority)
        seeds["revoked-by-key"] = try byKey.der(signedWith: caKey)
        var delegated = builder([try single(good, .good)])
        delegated.responderID = .name(of: responder)
        delegated.certificates = [responder]
        delegated.nonce = nil
        seeds["delegated-good"] = try delegated.der(signedWith: responderKey)
        seeds["unknown"] = try builder([try single(revoked, .unknown)]).der(signedWith: caKey)
        seeds["try-later"] = OCSPResponseBuilder.failure(3)
        if let path = ProcessInfo.processInfo.environment["BULWARK_WRITE_OCSP_SEEDS"] {
            let directory = URL(fileURLWithPath: path)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for (name, bytes) in seeds {
                try Data(bytes).write(to: directory.appending(path: name))
            }
        }
        // Fresh and committed seeds verify as the fuzz target expects.
        let time = Self.time
        let request = try OCSPRequest(
            certificateID: try OCSPCertificateID(certificate: good, issuer: authority),
            nonce: nonce
        )
        let revokedRequest = try OCSPRequest(
            certificateID: try OCSPCertificateID(certificate: revoked, issuer: authority),
            nonce: nonce
        )
        var committed: [String: [UInt8]] = [:]
        for name in seeds.keys.sorted() {
            committed[name] = try [UInt8](Data(contentsOf: Self.committedSeeds.appending(path: name)))
        }
        for (origin, set) in [("fresh", seeds), ("committed", committed)] {
            for name in ["good-by-name", "revoked-by-key", "delegated-good"] {
                let status = try OCSPResponse(derEncoded: set[name]!)
                    .status(for: request, certificate: good, issuer: authority, at: time)
                #expect(status.code == "good", "\(origin) \(name)")
            }
            let revokedStatus = try OCSPResponse(derEncoded: set["revoked-by-key"]!)
                .status(for: revokedRequest, certificate: revoked, issuer: authority, at: time)
            #expect(revokedStatus.code == "revoked", "\(origin)")
            let unknown = #expect(throws: RevocationError.self) {
                _ = try OCSPResponse(derEncoded: set["unknown"]!)
                    .status(for: revokedRequest, certificate: revoked, issuer: authority, at: time)
            }
            #expect(unknown?.code == "unknown_to_responder", "\(origin)")
            let later = #expect(throws: RevocationError.self) {
                _ = try OCSPResponse(derEncoded: set["try-later"]!)
                    .status(for: request, certificate: good, issuer: authority, at: time)
            }
            #expect(later?.code == "responder_error", "\(origin)")
        }
    }
}
