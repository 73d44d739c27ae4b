import Foundation
import X509

extension CertificateRevocationList {
    /// Checks this list against `certificate` and its `issuer` (the next certificate of the verified path) at
    /// `time`, and says whether the list revokes the certificate.
    ///
    /// The list must be issued by the certificate's issuer (same name; same key identifier when both carry one),
    /// signed by the issuer's key with an accepted algorithm, the issuer's key usage (when present) must allow
    /// `cRLSign`, the list must be current (`thisUpdate` ≤ time ≤ `nextUpdate`, each allowing `clockSkew` seconds)
    /// and must cover the certificate (its issuing-distribution-point extension). Any failure throws: the list
    /// tells nothing about the certificate then.
    public func status(
        of certificate: Certificate,
        issuer: Certificate,
        at time: Date = Date(),
        clockSkew: TimeInterval = 300
    ) throws(RevocationError) -> RevocationStatus {
        try self.checkIssuer(of: certificate, issuer: issuer)
        guard time + clockSkew >= self.thisUpdate else {
            throw .notYetValid(thisUpdate: self.thisUpdate, evaluatedAt: time)
        }
        guard let nextUpdate = self.nextUpdate else { throw .missingNextUpdate }
        guard time - clockSkew <= nextUpdate else {
            throw .stale(nextUpdate: nextUpdate, evaluatedAt: time)
        }
        try self.checkScope(certificate)
        let entry = self.entry(for: certificate.serialNumber)
        // Delta lists (RFC 5280 5.2.4, 5.2.6) can revoke what the base list does not list, and Bulwark reads none:
        // where the list or the certificate names them, only a listed certificate is an answer (a certificate on
        // hold is answered as revoked, as without deltas: a delta that releases it is not read, which fails closed).
        if entry == nil, self.announcesDeltaLists || certificate.extensions[oid: OID.freshestCRL] != nil {
            throw .deltaListsNotRead(namedBy: self.announcesDeltaLists ? "the revocation list" : "the certificate")
        }
        return .listAnswer(
            entry,
            issuer: self.issuer,
            thisUpdate: self.thisUpdate,
            nextUpdate: nextUpdate
        )
    }

    /// Names are formatted only for a refusal's words; the extensions come decoded from ``ParsedExtensions`` (a
    /// server presents the same issuer on every handshake).
    private func checkIssuer(of certificate: Certificate, issuer: Certificate) throws(RevocationError) {
        guard self.issuer == certificate.issuer, self.issuer == issuer.subject else {
            throw .wrongIssuer(
                listIssuer: String(describing: self.issuer),
                certificateIssuer: String(describing: certificate.issuer)
            )
        }
        let issuerExtensions = ParsedExtensions.of(issuer)
        if let listKey = self.authorityKeyIdentifier,
            let subjectKey = try? issuerExtensions.subjectKeyIdentifier.get()?.keyIdentifier,
            !listKey.elementsEqual(subjectKey)
        {
            throw .wrongIssuer(
                listIssuer: "\(self.issuer) (another key)",
                certificateIssuer: String(describing: certificate.issuer)
            )
        }
        if let usage = try? issuerExtensions.keyUsage.get(), !usage.cRLSign {
            throw .issuerCannotSignLists(issuer: String(describing: issuer.subject))
        }
        guard self.isSigned(by: issuer) else {
            throw .badSignature(issuer: String(describing: issuer.subject))
        }
    }

    private func checkScope(_ certificate: Certificate) throws(RevocationError) {
        let isCA =
            (try? ParsedExtensions.of(certificate).basicConstraints.get()).map { constraints -> Bool in
                if case .isCertificateAuthority = constraints { return true }
                return false
            } ?? false
        if self.scope.onlyUserCertificates && isCA {
            throw .outOfScope("it covers only end-entity certificates and this one is a CA")
        }
        if self.scope.onlyCACertificates && !isCA {
            throw .outOfScope("it covers only CA certificates")
        }
        if self.scope.onlyAttributeCertificates {
            throw .outOfScope("it covers only attribute certificates")
        }
        guard !self.scope.uris.isEmpty || self.scope.namesOtherThanURIs else { return }
        let points = (try? CRLDistributionPoints.uris(of: certificate)) ?? []
        guard !points.isEmpty, !Set(points).isDisjoint(with: self.scope.uris) else {
            if self.scope.uris.isEmpty {
                throw .outOfScope(
                    "its distribution point is named by a directory name or a name relative to the issuer, and "
                        + "Bulwark matches distribution points by URI only"
                )
            }
            throw .outOfScope(
                "its distribution point (\(self.scope.uris.joined(separator: ", "))) is not one the certificate names"
            )
        }
    }
}
