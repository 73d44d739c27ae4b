import Crypto
import Foundation
import SwiftASN1
import X509

/// Builds certificate revocation lists for tests, including ones no CA should issue (unknown critical extensions,
/// delta indicators, bad scopes), signed with a P-256 key.
public struct CRLBuilder: Sendable {
    /// One entry of the list.
    public struct Entry: Sendable {
        /// The revoked certificate's serial number.
        public var serialNumber: Certificate.SerialNumber
        /// When it was revoked.
        public var revocationDate: Date
        /// The RFC 5280 reason code, or nil for none.
        public var reason: Int?
        /// More entry extensions, as given.
        public var extensions: [Certificate.Extension]

        /// An entry for `serialNumber`, revoked at `revocationDate`.
        public init(
            _ serialNumber: Certificate.SerialNumber,
            revokedAt revocationDate: Date,
            reason: Int? = nil,
            extensions: [Certificate.Extension] = []
        ) {
            self.serialNumber = serialNumber
            self.revocationDate = revocationDate
            self.reason = reason
            self.extensions = extensions
        }
    }

    /// The list's issuer name.
    public var issuer: DistinguishedName
    /// When the list was issued.
    public var thisUpdate: Date
    /// When the next list is due; nil leaves the field out.
    public var nextUpdate: Date?
    /// The revoked certificates.
    public var entries: [Entry] = []
    /// The list's extensions (by default a CRL number).
    public var extensions: [Certificate.Extension]
    /// The signature algorithm's object identifier (ecdsa-with-SHA256 by default); the signature is always made
    /// with SHA-256 and P-256, so another identifier makes a list that does not verify or is refused.
    public var algorithm: ASN1ObjectIdentifier = [1, 2, 840, 10045, 4, 3, 2]

    /// A list by `issuer` with no entries and a CRL number.
    public init(issuer: DistinguishedName, thisUpdate: Date, nextUpdate: Date?) {
        self.issuer = issuer
        self.thisUpdate = thisUpdate
        self.nextUpdate = nextUpdate
        self.extensions = [Certificate.Extension(oid: [2, 5, 29, 20], critical: false, value: [0x02, 0x01, 0x01])]
    }

    /// The DER bytes of the list, signed with the P-256 key of `issuer`.
    public func der(signedBy issuer: TestIdentity) throws -> [UInt8] {
        try self.der(signedWith: try P256.Signing.PrivateKey(pemRepresentation: issuer.privateKeyPEM))
    }

    /// The DER bytes of the list, signed with `key`.
    public func der(signedWith key: P256.Signing.PrivateKey) throws -> [UInt8] {
        var tbs = DER.Serializer()
        try tbs.appendConstructedNode(identifier: .sequence) { coder in
            try coder.serialize(1)  // v2
            try self.serializeAlgorithm(&coder)
            try coder.serialize(self.issuer)
            try Self.serializeTime(self.thisUpdate, into: &coder)
            if let nextUpdate = self.nextUpdate { try Self.serializeTime(nextUpdate, into: &coder) }
            if !self.entries.isEmpty {
                try coder.appendConstructedNode(identifier: .sequence) { coder in
                    for entry in self.entries {
                        try coder.appendConstructedNode(identifier: .sequence) { coder in
                            try coder.serialize(entry.serialNumber.bytes)
                            try Self.serializeTime(entry.revocationDate, into: &coder)
                            var extensions = entry.extensions
                            if let reason = entry.reason {
                                extensions.insert(Self.reasonCode(reason), at: 0)
                            }
                            if !extensions.isEmpty {
                                try coder.serializeSequenceOf(extensions)
                            }
                        }
                    }
                }
            }
            if !self.extensions.isEmpty {
                try coder.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) { coder in
                    try coder.serializeSequenceOf(self.extensions)
                }
            }
        }
        let signed = tbs.serializedBytes
        let signature = try key.signature(for: signed).derRepresentation
        var list = DER.Serializer()
        try list.appendConstructedNode(identifier: .sequence) { coder in
            coder.serializeRawBytes(signed)
            try self.serializeAlgorithm(&coder)
            try coder.serialize(ASN1BitString(bytes: ArraySlice(signature)))
        }
        return list.serializedBytes
    }

    /// The list as a PEM `X509 CRL` block.
    public func pem(signedWith key: P256.Signing.PrivateKey) throws -> String {
        try PEMDocument(type: "X509 CRL", derBytes: self.der(signedWith: key)).pemString
    }

    private func serializeAlgorithm(_ coder: inout DER.Serializer) throws {
        try coder.appendConstructedNode(identifier: .sequence) { coder in
            try coder.serialize(self.algorithm)
        }
    }

    /// The reason-code entry extension (ENUMERATED).
    public static func reasonCode(_ code: Int) -> Certificate.Extension {
        Certificate.Extension(oid: [2, 5, 29, 21], critical: false, value: [0x0A, 0x01, UInt8(code)])
    }

    /// An issuing-distribution-point extension with the given URIs and limits.
    public static func issuingDistributionPoint(
        uris: [String] = [],
        onlyUserCertificates: Bool = false,
        onlyCACertificates: Bool = false,
        indirect: Bool = false
    ) throws -> Certificate.Extension {
        var coder = DER.Serializer()
        try coder.appendConstructedNode(identifier: .sequence) { coder in
            if !uris.isEmpty {
                try coder.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) { coder in
                    try coder.appendConstructedNode(
                        identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
                    ) {
                        coder in
                        for uri in uris { try coder.serialize(GeneralName.uniformResourceIdentifier(uri)) }
                    }
                }
            }
            if onlyUserCertificates {
                try coder.serializeFlag(tag: 1)
            }
            if onlyCACertificates {
                try coder.serializeFlag(tag: 2)
            }
            if indirect {
                try coder.serializeFlag(tag: 4)
            }
        }
        return Certificate.Extension(oid: [2, 5, 29, 28], critical: true, value: ArraySlice(coder.serializedBytes))
    }

    /// A CRL-distribution-points certificate extension naming `uris`.
    public static func distributionPoints(_ uris: [String]) throws -> Certificate.Extension {
        var coder = DER.Serializer()
        try coder.appendConstructedNode(identifier: .sequence) { coder in
            try coder.appendConstructedNode(identifier: .sequence) { coder in
                try coder.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) { coder in
                    try coder.appendConstructedNode(
                        identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
                    ) {
                        coder in
                        for uri in uris { try coder.serialize(GeneralName.uniformResourceIdentifier(uri)) }
                    }
                }
            }
        }
        return Certificate.Extension(oid: [2, 5, 29, 31], critical: false, value: ArraySlice(coder.serializedBytes))
    }

    static func serializeTime(_ date: Date, into coder: inout DER.Serializer) throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let (year, month, day) = (parts.year!, parts.month!, parts.day!)
        let (hours, minutes, seconds) = (parts.hour!, parts.minute!, parts.second!)
        if (1950..<2050).contains(year) {
            try coder.serialize(
                UTCTime(year: year, month: month, day: day, hours: hours, minutes: minutes, seconds: seconds)
            )
        } else {
            try coder.serialize(
                GeneralizedTime(
                    year: year,
                    month: month,
                    day: day,
                    hours: hours,
                    minutes: minutes,
                    seconds: seconds,
                    fractionalSeconds: 0
                )
            )
        }
    }
}

extension DER.Serializer {
    fileprivate mutating func serializeSequenceOf(_ extensions: [Certificate.Extension]) throws {
        try self.appendConstructedNode(identifier: .sequence) { coder in
            for item in extensions { try coder.serialize(item) }
        }
    }

    /// A `[tag] IMPLICIT BOOLEAN` set to TRUE.
    fileprivate mutating func serializeFlag(tag: UInt) throws {
        try true.serialize(into: &self, withIdentifier: ASN1Identifier(tagWithNumber: tag, tagClass: .contextSpecific))
    }
}
