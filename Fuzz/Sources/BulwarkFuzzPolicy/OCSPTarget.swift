import Crypto
import Foundation
import X509

@testable import BulwarkPolicy

/// OCSP responses (issue 18's parser and verifier), mutated from responses Bulwark's test builder made
/// (`OCSPResponseBuilder`: good from the issuer by name, revoked from the issuer by key, good from a delegated
/// responder, unknown, tryLater; Fuzz/Corpus/ocsp, written by `OCSPFuzzSeedTests` with the keys below). Input: the
/// DER bytes of a response. Oracles:
/// - parsing ends in a response or a `RevocationError` with a code, never a crash;
/// - parsing is deterministic: the same bytes give the same status, signer, times, answers and signed bytes;
/// - a response that vouches (``OCSPResponse/status(for:certificate:issuer:at:clockSkew:)`` returns) is signed over
///   its `ResponseData`, checked here directly with swift-crypto: by the CA's key, or by the key of a certificate
///   the response carries whose own signature verifies with the CA's key (swift-certificates' check) and which has
///   the extended key usage OCSPSigning: no mutation forges a response;
/// - the returned status is the one the matching answer gives, that answer is current at the time of the check,
///   and an echoed nonce is the request's.
enum OCSPTarget {
    /// When the checks run: the seeds are current then.
    static let time = Date(timeIntervalSince1970: 1_800_000_000)
    /// The CA's key and the delegated responder's (fixed, from their names, so that the seeds can be rebuilt).
    static let caKey = Self.key("bulwark fuzz ocsp ca")
    static let authority = Self.certificate(
        name: "Bulwark Fuzz OCSP CA",
        serial: 1,
        key: caKey.publicKey,
        isCA: true
    )
    static let good = Self.certificate(name: "good.bulwark.test", serial: 0x3001, key: Self.key("good").publicKey)
    static let revoked = Self.certificate(name: "revoked.bulwark.test", serial: 0x3002, key: Self.key("rev").publicKey)
    /// The nonce of the requests; the seeds that carry a nonce echo it.
    static let nonce = [UInt8](repeating: 0x4E, count: 32)

    static func key(_ name: String) -> P256.Signing.PrivateKey {
        try! P256.Signing.PrivateKey(rawRepresentation: SHA256.hash(data: Array(name.utf8)))
    }

    /// A certificate issued by the CA with the given key (the CA's own is self-issued). Only names, serials and
    /// keys matter to OCSP; the certificates' signatures differ from run to run.
    static func certificate(
        name: String,
        serial: Certificate.SerialNumber,
        key: P256.Signing.PublicKey,
        isCA: Bool = false
    ) -> Certificate {
        var extensions = Certificate.Extensions()
        let constraints: BasicConstraints =
            isCA ? .isCertificateAuthority(maxPathLength: nil) : .notCertificateAuthority
        try! extensions.append(Certificate.Extension(constraints, critical: true))
        return try! Certificate(
            version: .v3,
            serialNumber: serial,
            publicKey: .init(key),
            notValidBefore: Self.time - 86_400 * 365,
            notValidAfter: Self.time + 86_400 * 365,
            issuer: try! DistinguishedName { CommonName("Bulwark Fuzz OCSP CA") },
            subject: try! DistinguishedName { CommonName(name) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions,
            issuerPrivateKey: .init(Self.caKey)
        )
    }

    static let requests: [(Certificate, OCSPRequest)] = [Self.good, Self.revoked].map { certificate in
        let identifier = try! OCSPCertificateID(certificate: certificate, issuer: Self.authority)
        return (certificate, try! OCSPRequest(certificateID: identifier, nonce: Self.nonce))
    }

    static func run(_ input: FuzzInput) {
        let bytes = Array(input.rest)
        let response: OCSPResponse
        do {
            response = try OCSPResponse(derEncoded: bytes)
        } catch {
            if error.code.isEmpty { violated("typed error", "an error without a code") }
            return
        }
        guard let again = try? OCSPResponse(derEncoded: bytes), again.responseStatus == response.responseStatus,
            again.responderID == response.responderID, again.producedAt == response.producedAt,
            again.responses == response.responses, again.nonce == response.nonce,
            again.signedBytes == response.signedBytes, again.signature == response.signature,
            again.certificates == response.certificates
        else {
            violated("deterministic parse", "parsing the same bytes twice gave different responses")
        }
        for (certificate, request) in Self.requests {
            let status: RevocationStatus
            do {
                status = try response.status(
                    for: request,
                    certificate: certificate,
                    issuer: Self.authority,
                    at: Self.time
                )
            } catch {
                trace("\(certificate.serialNumber): \(error.code)")
                continue
            }
            trace("\(certificate.serialNumber): \(status)")
            guard Self.signedByAnAuthorizedKey(response) else {
                violated("only a signed response vouches", "a response whose signature does not verify gave \(status)")
            }
            guard let answer = response.responses.first(where: { $0.certificateID == request.certificateID }),
                answer.certificateStatus.code == status.code
            else {
                violated("status follows the answer", "\(status) without a matching answer")
            }
            guard answer.thisUpdate <= Self.time + 300, let nextUpdate = answer.nextUpdate,
                nextUpdate >= Self.time - 300, status.nextUpdate == nextUpdate
            else {
                violated("only a current answer vouches", "\(status) from an answer outside its time")
            }
            if let echoed = response.nonce, echoed != Self.nonce {
                violated("the nonce is checked", "\(status) from a response with another nonce")
            }
        }
    }

    /// Whether the CA, or a responder it certified for OCSP signing, signed the response's data.
    static func signedByAnAuthorizedKey(_ response: OCSPResponse) -> Bool {
        guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: response.signature),
            response.signatureAlgorithm == .ecdsaWithSHA256
        else { return false }
        let digest = SHA256.hash(data: response.signedBytes)
        if Self.caKey.publicKey.isValidSignature(signature, for: digest) { return true }
        return response.certificates.contains { delegate in
            guard Self.authority.publicKey.isValidSignature(delegate.signature, for: delegate),
                let usages = try? delegate.extensions.extendedKeyUsage, usages.contains(.ocspSigning),
                let key = P256.Signing.PublicKey(delegate.publicKey)
            else { return false }
            return key.isValidSignature(signature, for: digest)
        }
    }
}
