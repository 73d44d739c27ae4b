import Crypto
import Foundation
import SwiftASN1
import X509

/// Every field of a certificate that the differential mutation engine varies, with the values of a well-formed
/// web PKI certificate as the starting point. ``issue(issuer:)`` signs it.
///
/// Unlike ``CertificateFactory``, nothing here is checked or corrected: a blueprint can describe a certificate that
/// is valid only in reverse (`notBefore` after `notAfter`), a CA without key usage, a leaf that signs certificates,
/// or an extension that no verifier knows, marked critical.
public struct CertificateBlueprint: Sendable {
    /// The subject's common name; nil leaves it out (with no organization, the subject is empty).
    public var commonName: String?
    /// The subject's organization; nil leaves it out.
    public var organization: String?
    /// The subject's key; its public half goes into the certificate.
    public var privateKey: Certificate.PrivateKey
    /// The start of the validity period.
    public var notBefore: Date
    /// The end of the validity period.
    public var notAfter: Date
    /// Nil omits basic constraints.
    public var basicConstraints: BasicConstraints?
    /// Whether basic constraints are marked critical.
    public var basicConstraintsCritical: Bool = true
    /// Nil omits key usage.
    public var keyUsage: KeyUsage?
    /// Whether key usage is marked critical.
    public var keyUsageCritical: Bool = true
    /// Nil omits extended key usage.
    public var extendedKeyUsage: [ExtendedKeyUsage.Usage]?
    /// Whether extended key usage is marked critical.
    public var extendedKeyUsageCritical: Bool = false
    /// Nil omits the subject alternative name extension.
    public var subjectAlternativeNames: [GeneralName]?
    /// Whether the subject alternative names are marked critical.
    public var subjectAlternativeNamesCritical: Bool = false
    /// Nil omits name constraints.
    public var nameConstraints: NameConstraints?
    /// Whether name constraints are marked critical.
    public var nameConstraintsCritical: Bool = true
    /// Whether the certificate carries a subject key identifier.
    public var includesSubjectKeyIdentifier: Bool = true
    /// Whether the subject key identifier is marked critical.
    public var subjectKeyIdentifierCritical: Bool = false
    /// Whether the certificate carries an authority key identifier.
    public var includesAuthorityKeyIdentifier: Bool = true
    /// Whether the authority key identifier is marked critical.
    public var authorityKeyIdentifierCritical: Bool = false
    /// Extensions added as they are (an unknown OID, critical or not).
    public var extraExtensions: [Certificate.Extension] = []
    /// The serial number; a random one when nil.
    public var serialNumber: Certificate.SerialNumber?
    /// The algorithm the issuer signs with; nil picks the usual one for the issuer's key.
    public var signatureAlgorithm: Certificate.SignatureAlgorithm?

    /// A blueprint of a subject, its key and validity period, with no extensions chosen yet but the key
    /// identifiers.
    public init(
        commonName: String?,
        organization: String? = nil,
        privateKey: Certificate.PrivateKey,
        notBefore: Date,
        notAfter: Date
    ) {
        self.commonName = commonName
        self.organization = organization
        self.privateKey = privateKey
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    /// The subject name the blueprint describes.
    public func subject() -> DistinguishedName {
        var attributes: [RelativeDistinguishedName] = []
        if let organization {
            attributes.append(
                RelativeDistinguishedName(
                    .init(
                        type: .RDNAttributeType.organizationName,
                        utf8String: organization
                    )
                )
            )
        }
        if let commonName {
            attributes.append(
                RelativeDistinguishedName(
                    .init(
                        type: .RDNAttributeType.commonName,
                        utf8String: commonName
                    )
                )
            )
        }
        return DistinguishedName(attributes)
    }

    /// Signs the certificate with `issuer`'s key, naming `issuer` as its issuer; self-signed when `issuer` is nil.
    public func issue(issuer: TestIdentity?) throws -> TestIdentity {
        let subject = self.subject()
        let publicKey = self.privateKey.publicKey
        let signer = issuer?.privateKey ?? self.privateKey
        var extensions = Certificate.Extensions()
        if let basicConstraints {
            try extensions.append(Certificate.Extension(basicConstraints, critical: self.basicConstraintsCritical))
        }
        if let keyUsage {
            try extensions.append(Certificate.Extension(keyUsage, critical: self.keyUsageCritical))
        }
        if let extendedKeyUsage {
            try extensions.append(
                Certificate.Extension(try ExtendedKeyUsage(extendedKeyUsage), critical: self.extendedKeyUsageCritical)
            )
        }
        if let subjectAlternativeNames {
            try extensions.append(
                Certificate.Extension(
                    SubjectAlternativeNames(subjectAlternativeNames),
                    critical: self.subjectAlternativeNamesCritical
                )
            )
        }
        if let nameConstraints {
            try extensions.append(Certificate.Extension(nameConstraints, critical: self.nameConstraintsCritical))
        }
        let ownKeyID = SubjectKeyIdentifier(hash: publicKey)
        if self.includesSubjectKeyIdentifier {
            try extensions.append(Certificate.Extension(ownKeyID, critical: self.subjectKeyIdentifierCritical))
        }
        if self.includesAuthorityKeyIdentifier {
            let keyID =
                try issuer.map { try CertificateFactory.authorityKeyIdentifier(of: $0.certificate) }
                ?? AuthorityKeyIdentifier(keyIdentifier: ownKeyID.keyIdentifier)
            try extensions.append(Certificate.Extension(keyID, critical: self.authorityKeyIdentifierCritical))
        }
        for extra in self.extraExtensions {
            try extensions.append(extra)
        }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: self.serialNumber ?? CertificateFactory.makeSerialNumber(),
            publicKey: publicKey,
            notValidBefore: self.notBefore,
            notValidAfter: self.notAfter,
            issuer: issuer?.certificate.subject ?? subject,
            subject: subject,
            signatureAlgorithm: self.signatureAlgorithm ?? CertificateFactory.signatureAlgorithm(for: signer),
            extensions: extensions,
            issuerPrivateKey: signer
        )
        return TestIdentity(certificate: certificate, privateKey: self.privateKey)
    }
}
