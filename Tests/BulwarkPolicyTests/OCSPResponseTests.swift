import BulwarkTestHelpers
import BulwarkTestSupport
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

@testable import BulwarkPolicy

@Suite("OCSP responses: parsing and verifying")
struct OCSPResponseTests {
    static let now = CRLAuthority.now
    let authority: CRLAuthority
    let leaf: Certificate
    let request: OCSPRequest

    init() throws {
        self.authority = try CRLAuthority(name: "Bulwark OCSP Test CA")
        self.leaf = try self.authority.issue(serial: 0x2001)
        self.request = try OCSPRequest(certificate: self.leaf, issuer: self.authority.certificate)
    }

    /// A response from the issuer about the leaf, echoing the request's nonce, current at ``now``.
    func builder(
        _ status: OCSPResponseBuilder.CertificateStatus = .good,
        change: (inout OCSPResponseBuilder) throws -> Void = { _ in }
    ) throws -> OCSPResponseBuilder {
        let single = try OCSPResponseBuilder.Single(
            certificate: self.leaf,
            issuer: self.authority.certificate,
            status: status,
            thisUpdate: Self.now - 3_600,
            nextUpdate: Self.now + 86_400
        )
        var builder = OCSPResponseBuilder(
            responder: .name(of: self.authority.certificate),
            producedAt: Self.now - 60,
            responses: [single]
        )
        builder.nonce = self.request.nonce
        try change(&builder)
        return builder
    }

    func bytes(
        _ status: OCSPResponseBuilder.CertificateStatus = .good,
        key: P256.Signing.PrivateKey? = nil,
        change: (inout OCSPResponseBuilder) throws -> Void = { _ in }
    ) throws -> [UInt8] {
        try self.builder(status, change: change).der(signedWith: key ?? self.authority.key)
    }

    func verify(
        _ bytes: [UInt8],
        request: OCSPRequest? = nil,
        at time: Date = OCSPResponseTests.now
    ) throws(RevocationError) -> RevocationStatus {
        let response = try OCSPResponse(derEncoded: bytes)
        return try response.status(
            for: request ?? self.request,
            certificate: self.leaf,
            issuer: self.authority.certificate,
            at: time
        )
    }

    /// The error's code, after checking it has words; nil when `body` did not throw.
    func code(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as RevocationError {
            #expect(!error.description.isEmpty)
            return error.code
        } catch {
            Issue.record("an untyped error: \(error)")
            return "untyped"
        }
    }

    func error(_ body: () throws -> Void) -> RevocationError? {
        do {
            try body()
            return nil
        } catch {
            return error as? RevocationError
        }
    }

    /// A delegated responder: its key and its certificate, issued by `issuerKey` under the test CA's name.
    func delegate(
        ocspSigning: Bool = true,
        issuerKey: P256.Signing.PrivateKey? = nil,
        notValidAfter: Date = OCSPResponseTests.now + 86_400 * 30
    ) throws -> (P256.Signing.PrivateKey, Certificate) {
        let key = P256.Signing.PrivateKey()
        let certificate = try OCSPResponseBuilder.responderCertificate(
            key: key,
            issuer: self.authority.certificate,
            issuerKey: issuerKey ?? self.authority.key,
            ocspSigning: ocspSigning,
            notValidBefore: Self.now - 86_400,
            notValidAfter: notValidAfter
        )
        return (key, certificate)
    }

    // MARK: - Statuses

    @Test func aGoodAnswerFromTheIssuerIsGood() throws {
        let response = try OCSPResponse(derEncoded: try self.bytes())
        #expect(response.responseStatus == .successful)
        #expect(response.producedAt == Self.now - 60)
        #expect(response.responses.count == 1)
        #expect(response.nonce == self.request.nonce)
        #expect(response.signatureAlgorithm == .ecdsaWithSHA256)
        let status = try self.verify(try self.bytes())
        #expect(status.code == "good")
        #expect(status.method == .ocsp)
        #expect(status.method.description == "OCSP")
        #expect(status.thisUpdate == Self.now - 3_600)
        #expect(status.nextUpdate == Self.now + 86_400)
        #expect(status.source.contains("Bulwark OCSP Test CA"))
        #expect(status.description.contains("OCSP"), "\(status)")
    }

    @Test func aRevokedAnswerCarriesItsTimeAndReason() throws {
        let status = try self.verify(try self.bytes(.revoked(Self.now - 7_200, reason: 1)))
        #expect(status.isRevoked)
        #expect(status.revocation?.revocationDate == Self.now - 7_200)
        #expect(status.revocation?.reason == .keyCompromise)
        #expect(status.revocation?.serialNumber == self.leaf.serialNumber)
        #expect(status.description.contains("key compromise"), "\(status)")
        let unexplained = try self.verify(try self.bytes(.revoked(Self.now - 7_200, reason: nil)))
        #expect(unexplained.isRevoked)
        #expect(unexplained.revocation?.reason == nil)
    }

    @Test func anUnknownAnswerThrowsNamingTheResponder() throws {
        let refusal = self.error { _ = try self.verify(try self.bytes(.unknown)) }
        #expect(refusal?.code == "unknown_to_responder")
        #expect(refusal?.description.contains("Bulwark OCSP Test CA") == true, "\(String(describing: refusal))")
    }

    @Test(arguments: [
        (1, "malformedRequest"), (2, "internalError"), (3, "tryLater"), (5, "sigRequired"), (6, "unauthorized"),
    ])
    func aResponderErrorStatusIsNamed(status: Int, name: String) throws {
        let response = try OCSPResponse(derEncoded: OCSPResponseBuilder.failure(status))
        #expect(response.responseStatus.rawValue == status)
        #expect(response.responseStatus.description == name)
        #expect(response.responses.isEmpty)
        let refusal = self.error {
            _ = try response.status(for: self.request, certificate: self.leaf, issuer: self.authority.certificate)
        }
        #expect(refusal?.code == "responder_error")
        #expect(refusal?.description.contains(name) == true, "\(String(describing: refusal))")
    }

    @Test func anUndefinedResponseStatusOrAFailureWithABodyIsMalformed() throws {
        #expect(self.code { _ = try OCSPResponse(derEncoded: OCSPResponseBuilder.failure(4)) } == "malformed")
        #expect(self.code { _ = try OCSPResponse(derEncoded: OCSPResponseBuilder.failure(7)) } == "malformed")
        var bytes = try self.bytes()
        // The status ENUMERATED follows the outer header (30 82 xx xx 0A 01 00 for a response over 255 bytes).
        let index = bytes[1] == 0x82 ? 4 : bytes[1] == 0x81 ? 3 : 2
        #expect(bytes[index] == 0x0A)
        bytes[index + 2] = 3
        #expect(self.code { _ = try OCSPResponse(derEncoded: bytes) } == "malformed")
    }

    @Test func aResponseTypeOtherThanBasicIsUnsupported() throws {
        let bytes = try self.bytes { $0.responseType = [1, 3, 6, 1, 5, 5, 7, 48, 1, 99] }
        #expect(self.code { _ = try OCSPResponse(derEncoded: bytes) } == "unsupported")
    }

    @Test func aResponseAboutAnotherCertificateHasNoMatch() throws {
        let other = try self.authority.issue(serial: 0x2002)
        let bytes = try self.bytes {
            $0.responses = [
                try .init(
                    certificate: other,
                    issuer: self.authority.certificate,
                    status: .good,
                    thisUpdate: Self.now - 60,
                    nextUpdate: Self.now + 3_600
                )
            ]
        }
        #expect(self.code { _ = try self.verify(bytes) } == "no_matching_response")
        // Same serial, another hash of the issuer's key: no match either.
        let otherKey = try self.bytes { $0.responses[0].issuerKeyHash[0] ^= 1 }
        #expect(self.code { _ = try self.verify(otherKey) } == "no_matching_response")
        // A response listing the leaf among others is fine.
        let several = try self.bytes {
            $0.responses.insert(
                try .init(
                    certificate: other,
                    issuer: self.authority.certificate,
                    status: .revoked(Self.now - 60, reason: nil),
                    thisUpdate: Self.now - 60,
                    nextUpdate: Self.now + 3_600
                ),
                at: 0
            )
        }
        #expect(try self.verify(several).code == "good")
    }

    @Test func aRequestForAnotherCertificateIsRefused() throws {
        let other = try self.authority.issue(serial: 0x2003)
        let response = try OCSPResponse(derEncoded: try self.bytes())
        let refusal = self.error {
            _ = try response.status(for: self.request, certificate: other, issuer: self.authority.certificate)
        }
        #expect(refusal?.code == "request_mismatch")
    }

    // MARK: - Signers

    @Test func aResponseSignedWithAnotherKeyIsRefused() throws {
        let bytes = try self.bytes(key: P256.Signing.PrivateKey())
        let refusal = self.error { _ = try self.verify(bytes) }
        #expect(refusal?.code == "bad_signature")
        #expect(refusal?.description.contains("OCSP response") == true, "\(String(describing: refusal))")
    }

    @Test func theIssuerMayBeNamedByKey() throws {
        let bytes = try self.bytes { $0.responderID = .key(of: self.authority.certificate) }
        let response = try OCSPResponse(derEncoded: bytes)
        #expect(response.responderID == .byKey(OCSPResponseBuilder.keyHash(of: self.authority.certificate)))
        let status = try self.verify(bytes)
        #expect(status.code == "good")
        #expect(status.source == "the OCSP responder of CN=Bulwark OCSP Test CA")
    }

    @Test func aDelegatedResponderWithOCSPSigningIsAccepted() throws {
        let (key, certificate) = try self.delegate()
        for responder in [OCSPResponseBuilder.ResponderID.name(of: certificate), .key(of: certificate)] {
            let bytes = try self.bytes(key: key) {
                $0.responderID = responder
                $0.certificates = [certificate]
            }
            let status = try self.verify(bytes)
            #expect(status.code == "good")
            #expect(status.source == "CN=Bulwark OCSP Responder")
        }
        let revoked = try self.bytes(.revoked(Self.now - 10, reason: 4), key: key) {
            $0.responderID = .name(of: certificate)
            $0.certificates = [certificate]
        }
        #expect(try self.verify(revoked).revocation?.reason == .superseded)
    }

    @Test func aDelegatedResponderWithoutOCSPSigningIsRefused() throws {
        let (key, certificate) = try self.delegate(ocspSigning: false)
        let bytes = try self.bytes(key: key) {
            $0.responderID = .name(of: certificate)
            $0.certificates = [certificate]
        }
        let refusal = self.error { _ = try self.verify(bytes) }
        #expect(refusal?.code == "unauthorized_responder")
        #expect(refusal?.description.contains("OCSPSigning") == true, "\(String(describing: refusal))")
    }

    @Test func aDelegatedResponderNotSignedByTheIssuerIsRefused() throws {
        // Certified under the issuer's name, but by another key.
        let (key, certificate) = try self.delegate(issuerKey: P256.Signing.PrivateKey())
        let bytes = try self.bytes(key: key) {
            $0.responderID = .name(of: certificate)
            $0.certificates = [certificate]
        }
        let refusal = self.error { _ = try self.verify(bytes) }
        #expect(refusal?.code == "unauthorized_responder")
        #expect(refusal?.description.contains("issuer's key") == true, "\(String(describing: refusal))")
        // Certified by another CA altogether.
        let other = try CRLAuthority(name: "Another OCSP CA")
        let foreignKey = P256.Signing.PrivateKey()
        let foreign = try OCSPResponseBuilder.responderCertificate(
            key: foreignKey,
            issuer: other.certificate,
            issuerKey: other.key,
            notValidBefore: Self.now - 60,
            notValidAfter: Self.now + 3_600
        )
        let foreignBytes = try self.bytes(key: foreignKey) {
            $0.responderID = .name(of: foreign)
            $0.certificates = [foreign]
        }
        #expect(self.code { _ = try self.verify(foreignBytes) } == "unauthorized_responder")
    }

    @Test func anExpiredDelegatedResponderIsRefused() throws {
        let (key, certificate) = try self.delegate(notValidAfter: Self.now - 3_600)
        let bytes = try self.bytes(key: key) {
            $0.responderID = .name(of: certificate)
            $0.certificates = [certificate]
        }
        #expect(self.code { _ = try self.verify(bytes) } == "unauthorized_responder")
    }

    @Test func aResponderWithoutACertificateIsRefused() throws {
        let (key, certificate) = try self.delegate()
        let bytes = try self.bytes(key: key) { $0.responderID = .name(of: certificate) }
        #expect(self.code { _ = try self.verify(bytes) } == "unauthorized_responder")
        // A delegate's certificate but the response signed by the issuer's key: the signature does not verify.
        let mixed = try self.bytes {
            $0.responderID = .name(of: certificate)
            $0.certificates = [certificate]
        }
        #expect(self.code { _ = try self.verify(mixed) } == "bad_signature")
    }

    @Test func sha1AndUnknownSignatureAlgorithmsAreRefused() throws {
        for algorithm: ASN1ObjectIdentifier in [[1, 2, 840, 113_549, 1, 1, 5], [1, 2, 840, 10045, 4, 1]] {
            let bytes = try self.bytes { $0.algorithm = algorithm }
            #expect(self.code { _ = try OCSPResponse(derEncoded: bytes) } == "weak_signature")
        }
        let sha384 = try self.bytes { $0.algorithm = [1, 2, 840, 10045, 4, 3, 3] }
        #expect(self.code { _ = try self.verify(sha384) } == "bad_signature")
    }

    // MARK: - Nonce

    @Test func anEchoedNonceOrNoNonceIsAcceptedAndAnotherNonceRefused() throws {
        #expect(try self.verify(try self.bytes()).code == "good")
        let none = try self.bytes { $0.nonce = nil }
        #expect(try OCSPResponse(derEncoded: none).nonce == nil)
        #expect(try self.verify(none).code == "good")
        let other = try self.bytes { $0.nonce = (0..<32).map { UInt8($0) } }
        let refusal = self.error { _ = try self.verify(other) }
        #expect(refusal?.code == "nonce_mismatch")
        // A request sent without a nonce accepts any nonce.
        let plain = try OCSPRequest(certificate: self.leaf, issuer: self.authority.certificate, nonce: false)
        #expect(try self.verify(other, request: plain).code == "good")
    }

    // MARK: - Times

    @Test func timesAreCheckedWithTheClockSkewAllowance() throws {
        let bytes = try self.bytes()
        let thisUpdate = Self.now - 3_600
        let nextUpdate = Self.now + 86_400
        #expect(throws: Never.self) { _ = try self.verify(bytes, at: nextUpdate + 299) }
        #expect(self.code { _ = try self.verify(bytes, at: nextUpdate + 301) } == "stale")
        let producedAt = Self.now - 60
        #expect(throws: Never.self) { _ = try self.verify(bytes, at: producedAt - 299) }
        #expect(self.code { _ = try self.verify(bytes, at: producedAt - 301) } == "not_yet_valid")
        #expect(thisUpdate < producedAt)
        let future = try self.bytes { $0.responses[0].thisUpdate = Self.now + 301 }
        #expect(self.code { _ = try self.verify(future) } == "not_yet_valid")
        let soon = try self.bytes { $0.responses[0].thisUpdate = Self.now + 299 }
        #expect(try self.verify(soon).code == "good")
        let produced = try self.bytes { $0.producedAt = Self.now + 600 }
        #expect(self.code { _ = try self.verify(produced) } == "not_yet_valid")
        let past = try self.bytes { $0.responses[0].nextUpdate = Self.now - 301 }
        let stale = self.error { _ = try self.verify(past) }
        #expect(stale?.code == "stale")
        #expect(stale?.description.contains("OCSP response") == true)
        let undated = try self.bytes { $0.responses[0].nextUpdate = nil }
        #expect(self.code { _ = try self.verify(undated) } == "missing_next_update")
    }

    // MARK: - Extensions

    @Test func unknownCriticalExtensionsAreRefusedAndUnknownOthersIgnored() throws {
        let unknown: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 99_999, 2]
        let critical = Certificate.Extension(oid: unknown, critical: true, value: [0x05, 0x00])
        let tolerated = Certificate.Extension(oid: unknown, critical: false, value: [0x05, 0x00])
        #expect(
            self.code { _ = try self.verify(try self.bytes { $0.extensions.append(critical) }) }
                == "unknown_critical_extension"
        )
        #expect(
            self.code { _ = try self.verify(try self.bytes { $0.responses[0].extensions.append(critical) }) }
                == "unknown_critical_extension"
        )
        #expect(try self.verify(try self.bytes { $0.extensions.append(tolerated) }).code == "good")
        #expect(try self.verify(try self.bytes { $0.responses[0].extensions.append(tolerated) }).code == "good")
        let twice = try self.bytes { $0.extensions = [tolerated, tolerated] }
        #expect(self.code { _ = try OCSPResponse(derEncoded: twice) } == "malformed")
    }

    // MARK: - Robustness

    @Test func aResponseOverTheSizeLimitIsRefusedBeforeParsing() throws {
        let bytes = try self.bytes()
        let error = #expect(throws: RevocationError.self) {
            _ = try OCSPResponse(derEncoded: bytes, maximumSize: bytes.count - 1)
        }
        #expect(error?.code == "too_large")
        #expect(throws: Never.self) { _ = try OCSPResponse(derEncoded: bytes, maximumSize: bytes.count) }
        #expect(OCSPResponse.defaultMaximumSize == 1 << 20)
        let huge = [UInt8](repeating: 0x30, count: OCSPResponse.defaultMaximumSize + 1)
        #expect(self.code { _ = try OCSPResponse(derEncoded: huge) } == "too_large")
    }

    @Test func garbageIsATypedError() {
        var generator = SeededGenerator(seed: 6960)
        for length in [0, 1, 2, 5, 16, 300] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(self.code { _ = try OCSPResponse(derEncoded: bytes) } == "malformed")
        }
    }

    /// Every truncation of a valid response throws; every single-byte change either throws or, for a byte the
    /// signature does not cover and that does not matter, gives the same status. No change of a signed byte is
    /// accepted.
    @Test(arguments: [false, true])
    func everyTruncationAndByteFlipIsRefusedOrHarmless(delegated: Bool) throws {
        let (delegateKey, delegateCertificate) = try self.delegate()
        let bytes = try self.bytes(.revoked(Self.now - 600, reason: 1), key: delegated ? delegateKey : nil) {
            if delegated {
                $0.responderID = .name(of: delegateCertificate)
                $0.certificates = [delegateCertificate]
            }
        }
        let original = try self.verify(bytes)
        #expect(original.isRevoked)
        let response = try OCSPResponse(derEncoded: bytes)
        let signed = try #require(Self.range(of: response.signedBytes, in: bytes))
        for length in 0..<bytes.count {
            #expect(self.code { _ = try OCSPResponse(derEncoded: Array(bytes[..<length])) } != nil)
        }
        var generator = SeededGenerator(seed: 18)
        var harmless = 0
        for index in bytes.indices {
            var flipped = bytes
            flipped[index] ^= UInt8.random(in: 1...255, using: &generator)
            var status: RevocationStatus?
            let outcome = self.code { status = try self.verify(flipped) }
            if outcome == nil {
                harmless += 1
                #expect(!signed.contains(index), "a response changed at signed byte \(index) was accepted")
                #expect(status == original, "a response changed at byte \(index) gave \(String(describing: status))")
            }
        }
        #expect(harmless < bytes.count / 10)
    }

    static func range(of needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
        guard needle.count <= haystack.count else { return nil }
        for start in 0...(haystack.count - needle.count) where Array(haystack[start..<start + needle.count]) == needle {
            return start..<start + needle.count
        }
        return nil
    }

    // MARK: - Revocation lists report their method and times too

    @Test func aRevocationListStatusSaysCRLAndItsTimes() throws {
        var builder = self.authority.builder()
        builder.entries = []
        let list = try CertificateRevocationList(derEncoded: builder.der(signedWith: self.authority.key))
        let status = try list.status(of: self.leaf, issuer: self.authority.certificate, at: Self.now)
        #expect(status.method == .crl)
        #expect(status.method.description == "CRL")
        #expect(status.thisUpdate == list.thisUpdate)
        #expect(status.nextUpdate == list.nextUpdate)
        #expect(RevocationStatus.good(issuer: "x").method == .crl)
    }
}
