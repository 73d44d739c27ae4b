import Foundation
import SwiftASN1
import X509

extension OCSPResponse {
    /// Verifies this response for `request`, made for `certificate`, whose issuer is `issuer` (the next certificate
    /// of the verified path), at `time`, and returns the certificate's status.
    ///
    /// The response must be `successful`; signed by the issuer itself, or by a delegated responder whose certificate
    /// (sent in the response) the issuer signed, with the extended key usage `OCSPSigning` and valid at `time`; hold
    /// an answer for the request's certificate; echo the request's nonce if it carries one (a response without a
    /// nonce is accepted: RFC 5019 responders precompute their answers); and be current (`producedAt` and
    /// `thisUpdate` ≤ time ≤ `nextUpdate`, each allowing `clockSkew` seconds; `nextUpdate` is required). An answer
    /// `unknown` throws too: the response then tells nothing reliable about the certificate.
    public func status(
        for request: OCSPRequest,
        certificate: Certificate,
        issuer: Certificate,
        at time: Date = Date(),
        clockSkew: TimeInterval = 300
    ) throws(RevocationError) -> RevocationStatus {
        guard self.responseStatus == .successful, let responderID = self.responderID,
            let producedAt = self.producedAt, let algorithm = self.signatureAlgorithm
        else {
            throw .responderError(status: String(describing: self.responseStatus))
        }
        guard try OCSPCertificateID(certificate: certificate, issuer: issuer) == request.certificateID else {
            throw .requestMismatch
        }
        let source = try self.checkSigner(responderID, algorithm: algorithm, issuer: issuer, at: time, skew: clockSkew)
        let responder = source.hasPrefix("the OCSP responder") ? source : "the OCSP responder \"\(source)\""
        let answers = self.responses.filter { $0.certificateID == request.certificateID }
        // Two answers about one certificate that disagree: a signed "revoked" among them is believed (the responder
        // said it), whatever order they come in; "good" beside "unknown" is neither.
        guard let answer = answers.first(where: { $0.certificateStatus.revocationTime != nil }) ?? answers.first else {
            throw .noMatchingResponse(responder: responder)
        }
        guard
            answer.certificateStatus.revocationTime != nil
                || answers.allSatisfy({ $0.certificateStatus == answer.certificateStatus })
        else {
            throw .malformed("OCSP response", detail: "it holds answers about the certificate that disagree")
        }
        if let sent = request.nonce, let echoed = self.nonce, sent != echoed {
            throw .nonceMismatch
        }
        for issued in [producedAt, answer.thisUpdate] where issued > time + clockSkew {
            throw .notYetValid("OCSP response", thisUpdate: issued, evaluatedAt: time)
        }
        guard let nextUpdate = answer.nextUpdate else { throw .missingNextUpdate("OCSP response") }
        guard time - clockSkew <= nextUpdate else {
            throw .stale("OCSP response", nextUpdate: nextUpdate, evaluatedAt: time)
        }
        let status = answer.certificateStatus
        if let revocationTime = status.revocationTime {
            let entry = CertificateRevocationList.Entry(
                serialNumber: answer.certificateID.serialNumber,
                revocationDate: revocationTime,
                reason: status.reason,
                invalidityDate: nil
            )
            return .revoked(entry, source: source, method: .ocsp, thisUpdate: answer.thisUpdate, nextUpdate: nextUpdate)
        }
        guard status == .good else { throw .unknownToResponder(responder: responder) }
        return .good(source: source, method: .ocsp, thisUpdate: answer.thisUpdate, nextUpdate: nextUpdate)
    }

    /// The algorithms a delegated responder's certificate may be signed with (SHA-1 is refused, as on lists).
    private static let acceptedCertificateAlgorithms: Set<Certificate.SignatureAlgorithm> = [
        .ecdsaWithSHA256, .ecdsaWithSHA384, .ecdsaWithSHA512,
        .sha256WithRSAEncryption, .sha384WithRSAEncryption, .sha512WithRSAEncryption, .ed25519,
    ]

    /// Finds who signed the response (the issuer, or a delegated responder the issuer authorized), checks the
    /// signature, and returns the signer's description.
    private func checkSigner(
        _ responderID: ResponderID,
        algorithm: Certificate.SignatureAlgorithm,
        issuer: Certificate,
        at time: Date,
        skew: TimeInterval
    ) throws(RevocationError) -> String {
        let issuerName = String(describing: issuer.subject)
        let signer: Certificate
        let source: String
        if Self.matches(issuer, responderID) {
            signer = issuer
            source = Self.description(of: responderID, signer: issuer, issuer: issuer)
        } else {
            guard let delegate = self.certificates.first(where: { Self.matches($0, responderID) }) else {
                throw .unauthorizedResponder(
                    responder: responderID.description,
                    issuer: issuerName,
                    detail: "the response carries no certificate of it"
                )
            }
            source = Self.description(of: responderID, signer: delegate, issuer: issuer)
            try Self.checkDelegate(delegate, responder: source, issuer: issuer, at: time, skew: skew)
            signer = delegate
        }
        // From memory when exactly this response was verified with this key before: a cached response is checked in
        // every handshake.
        guard
            SignatureVerificationCache.shared.isValidSignature(
                self.signature,
                for: self.signedBytes,
                signatureAlgorithm: algorithm,
                signer: signer
            )
        else {
            throw .badSignature("OCSP response", signer: String(describing: signer.subject))
        }
        return source
    }

    /// A delegated responder must be certified by the issuer for signing OCSP responses, and valid now.
    private static func checkDelegate(
        _ delegate: Certificate,
        responder: String,
        issuer: Certificate,
        at time: Date,
        skew: TimeInterval
    ) throws(RevocationError) {
        let issuerName = String(describing: issuer.subject)
        func refuse(_ detail: String) -> RevocationError {
            .unauthorizedResponder(responder: responder, issuer: issuerName, detail: detail)
        }
        guard delegate.issuer == issuer.subject else {
            throw refuse("its certificate was issued by \"\(delegate.issuer)\"")
        }
        guard Self.acceptedCertificateAlgorithms.contains(delegate.signatureAlgorithm) else {
            throw refuse("its certificate is signed with \(delegate.signatureAlgorithm), which is not accepted")
        }
        guard SignatureVerificationCache.shared.isValidSignature(of: delegate, issuedBy: issuer) else {
            throw refuse("its certificate's signature does not verify with the issuer's key")
        }
        let usages = try? delegate.extensions.extendedKeyUsage
        guard let usages, usages.contains(.ocspSigning) else {
            throw refuse("its certificate lacks the extended key usage OCSPSigning")
        }
        // A responder's key answers OCSP queries and nothing more: not one that may issue certificates too, nor one
        // whose certificate limits it in ways Bulwark cannot read.
        let constraints: BasicConstraints?
        do {
            constraints = try delegate.extensions.basicConstraints
        } catch {
            throw refuse("its certificate's basic constraints cannot be read")
        }
        if case .some(.isCertificateAuthority) = constraints {
            throw refuse("its certificate is a CA certificate")
        }
        if let unknown = delegate.extensions.first(where: {
            $0.critical && !Self.knownDelegateExtensions.contains($0.oid)
        }) {
            throw refuse("its certificate has an unknown critical extension (\(unknown.oid))")
        }
        guard delegate.notValidBefore <= time + skew, time - skew <= delegate.notValidAfter else {
            throw refuse(
                "its certificate is valid from \(delegate.notValidBefore.formatted(.iso8601)) to "
                    + "\(delegate.notValidAfter.formatted(.iso8601)), not at \(time.formatted(.iso8601))"
            )
        }
    }

    /// The extensions a delegated responder's certificate may mark critical: basic constraints, key usage, extended
    /// key usage, subject alternative names, certificate policies, name constraints, and `id-pkix-ocsp-nocheck`.
    private static let knownDelegateExtensions: Set<ASN1ObjectIdentifier> = [
        [2, 5, 29, 19], [2, 5, 29, 15], [2, 5, 29, 37], [2, 5, 29, 17], [2, 5, 29, 32], [2, 5, 29, 30],
        [1, 3, 6, 1, 5, 5, 7, 48, 1, 5],
    ]

    private static func matches(_ certificate: Certificate, _ responderID: ResponderID) -> Bool {
        switch responderID {
        case .byName(let name): return certificate.subject == name
        case .byKey(let hash): return OCSPCertificateID.keyHash(of: certificate) == hash
        }
    }

    /// The responder's name, or "the OCSP responder of ISSUER" when the response names it by key only.
    private static func description(of responderID: ResponderID, signer: Certificate, issuer: Certificate) -> String {
        switch responderID {
        case .byName(let name): return String(describing: name)
        case .byKey:
            if signer == issuer { return "the OCSP responder of \(issuer.subject)" }
            return String(describing: signer.subject)
        }
    }
}
