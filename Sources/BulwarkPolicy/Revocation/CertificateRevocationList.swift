import Foundation
import SwiftASN1
import X509

/// A certificate revocation list (RFC 5280, section 5), parsed and checked by Bulwark (swift-certificates has no CRL
/// support).
///
/// Parsing refuses what cannot be relied on: DER that is not strict, an unknown critical extension on the list or
/// on an entry, a missing or critical CRL number, a delta CRL, an indirect CRL and a list that covers only some
/// reasons. Revoked serial numbers are
/// kept in a hash table, so a lookup costs the same in a list of ten entries and in one of a million.
/// ``status(of:issuer:at:clockSkew:)`` then checks the list against a certificate and its issuer from the verified
/// path: issuer name, key identifier, `cRLSign`, signature, `thisUpdate`/`nextUpdate` and scope.
public struct CertificateRevocationList: Sendable {
    /// The largest list accepted by default: 32 MiB, about 800,000 entries.
    public static let defaultMaximumSize = 32 << 20

    /// One revoked certificate.
    public struct Entry: Hashable, Sendable {
        /// The revoked certificate's serial number.
        public let serialNumber: Certificate.SerialNumber
        /// When the issuer revoked it.
        public let revocationDate: Date
        /// Why, when the list says.
        public let reason: RevocationReason?
        /// When the key is known or suspected to have been compromised, when the list says.
        public let invalidityDate: Date?
    }

    /// The list's issuer.
    public let issuer: DistinguishedName
    /// When the list was issued.
    public let thisUpdate: Date
    /// When the next list will be issued at the latest.
    public let nextUpdate: Date?
    /// The list's sequence number (the CRL number extension), as unsigned big-endian bytes.
    public let number: [UInt8]?
    /// The key identifier of the key that signed the list (the authority key identifier extension).
    public let authorityKeyIdentifier: [UInt8]?
    /// The algorithm that signed the list.
    public let signatureAlgorithm: Certificate.SignatureAlgorithm
    let scope: IssuingDistributionPoint
    /// Whether the list names delta lists (a freshest-CRL extension): Bulwark reads none, so such a list can prove
    /// a certificate revoked but never good (RFC 5280 5.2.6: the complete status is the base plus its deltas).
    public let announcesDeltaLists: Bool
    /// The DER bytes the signature covers (`TBSCertList`).
    public let signedBytes: [UInt8]
    /// The signature's bytes (for ECDSA, the DER `ECDSA-Sig-Value`).
    public let signature: [UInt8]
    private let entries: [Certificate.SerialNumber: Entry]
    /// The `TBSCertificate` bytes of the issuer certificates whose key the signature verified with, and of those
    /// whose key it did not (see ``isSigned(by:)``), shared by copies of the list.
    private let verifications: LockedValue<Verifications>

    struct Verifications: Sendable {
        var verified: [ArraySlice<UInt8>] = []
        var failed: [ArraySlice<UInt8>] = []
    }

    /// The number of revoked certificates on the list.
    public var count: Int { self.entries.count }

    /// The entry for `serialNumber`, if the list revokes it.
    public func entry(for serialNumber: Certificate.SerialNumber) -> Entry? {
        self.entries[serialNumber]
    }

    /// Parses a DER-encoded list, refusing one larger than `maximumSize` bytes.
    public init(derEncoded bytes: [UInt8], maximumSize: Int = Self.defaultMaximumSize) throws(RevocationError) {
        guard bytes.count <= maximumSize else {
            throw .tooLarge("revocation list", size: bytes.count, limit: maximumSize)
        }
        do {
            self = try Self.parse(bytes)
        } catch let error as RevocationError {
            throw error
        } catch {
            throw .malformed("revocation list", detail: Self.words(error))
        }
    }

    /// Parses one PEM `X509 CRL` block.
    public init(pemEncoded text: String, maximumSize: Int = Self.defaultMaximumSize) throws(RevocationError) {
        guard text.utf8.count <= maximumSize * 2 else {
            throw .tooLarge("revocation list", size: text.utf8.count, limit: maximumSize)
        }
        let document: PEMDocument
        do {
            document = try PEMDocument(pemString: text)
        } catch {
            throw .malformed("revocation list", detail: "no PEM block could be read")
        }
        guard document.discriminator == "X509 CRL" else {
            throw .malformed("revocation list", detail: "the PEM block is a \(document.discriminator), not an X509 CRL")
        }
        try self.init(derEncoded: document.derBytes, maximumSize: maximumSize)
    }

    private init(
        issuer: DistinguishedName,
        thisUpdate: Date,
        nextUpdate: Date?,
        number: [UInt8]?,
        authorityKeyIdentifier: [UInt8]?,
        signatureAlgorithm: Certificate.SignatureAlgorithm,
        scope: IssuingDistributionPoint,
        announcesDeltaLists: Bool,
        signedBytes: [UInt8],
        signature: [UInt8],
        entries: [Certificate.SerialNumber: Entry]
    ) {
        self.announcesDeltaLists = announcesDeltaLists
        self.issuer = issuer
        self.thisUpdate = thisUpdate
        self.nextUpdate = nextUpdate
        self.number = number
        self.authorityKeyIdentifier = authorityKeyIdentifier
        self.signatureAlgorithm = signatureAlgorithm
        self.scope = scope
        self.signedBytes = signedBytes
        self.signature = signature
        self.entries = entries
        self.verifications = LockedValue(Verifications())
    }

    /// The list's size as kept, estimated: its signed bytes twice (the entries' serial numbers are slices of the
    /// bytes parsed, which they keep alive), its signature, and 96 bytes for each entry's place in the table (a
    /// serial number's slice and an entry, in a dictionary kept at most three quarters full). A list of about
    /// 400,000 entries is over the 64 MiB a store keeps by default, and is fetched again when next needed.
    var byteCount: Int { 2 * self.signedBytes.count + self.signature.count + 96 * self.entries.count }

    /// The issuers, by the bytes of their `TBSCertificate`, whose key has verified this list so far.
    var verifiedBy: [ArraySlice<UInt8>] { self.verifications.withLock { $0.verified } }

    /// Whether the key of some issuer certificate was tried on the list and did not verify it, and none has.
    var failedEveryVerification: Bool { self.verifications.withLock { $0.verified.isEmpty && !$0.failed.isEmpty } }

    /// Whether the list's signature verifies with the key of `issuer`. An issuer whose key was tried is remembered
    /// (at most four of each outcome per list), by the exact bytes of its `TBSCertificate` (which hold the key), so a
    /// list checked in every handshake costs one signature verification, not one per handshake, and neither does a
    /// forged list that no key verifies.
    ///
    /// Remembered by the certificate's bytes rather than the key's: swift-crypto makes a key's encoded form anew
    /// (a point conversion, with a field inversion) every time it is asked, which cost more than the rest of a warm
    /// check.
    func isSigned(by issuer: Certificate) -> Bool {
        let tbs = issuer.tbsCertificateBytes
        let known: Bool? = self.verifications.withLock {
            $0.verified.contains(tbs) ? true : $0.failed.contains(tbs) ? false : nil
        }
        if let known { return known }
        let valid = issuer.publicKey.isValidSignature(
            self.signature,
            for: self.signedBytes,
            signatureAlgorithm: self.signatureAlgorithm
        )
        self.verifications.withLock { verifications in
            if valid {
                if verifications.verified.count >= 4 { verifications.verified.removeFirst() }
                verifications.verified.append(tbs)
            } else {
                if verifications.failed.count >= 4 { verifications.failed.removeFirst() }
                verifications.failed.append(tbs)
            }
        }
        return valid
    }
}

// MARK: - Parsing

extension CertificateRevocationList {
    /// Object identifiers of the extensions a list and its entries may carry.
    enum OID {
        static let crlNumber: ASN1ObjectIdentifier = [2, 5, 29, 20]
        static let authorityKeyIdentifier: ASN1ObjectIdentifier = [2, 5, 29, 35]
        static let issuingDistributionPoint: ASN1ObjectIdentifier = [2, 5, 29, 28]
        static let deltaCRLIndicator: ASN1ObjectIdentifier = [2, 5, 29, 27]
        static let freshestCRL: ASN1ObjectIdentifier = [2, 5, 29, 46]
        static let issuerAlternativeName: ASN1ObjectIdentifier = [2, 5, 29, 18]
        static let reasonCode: ASN1ObjectIdentifier = [2, 5, 29, 21]
        static let invalidityDate: ASN1ObjectIdentifier = [2, 5, 29, 24]
        static let certificateIssuer: ASN1ObjectIdentifier = [2, 5, 29, 29]
    }

    private static func parse(_ bytes: [UInt8]) throws -> CertificateRevocationList {
        let root = try DER.parse(bytes)
        return try DER.sequence(root, identifier: .sequence) { nodes in
            guard let tbsNode = nodes.next() else {
                throw RevocationError.malformed("revocation list", detail: "empty")
            }
            let outerAlgorithm = try AlgorithmIdentifierReader(derEncoded: &nodes)
            let signature = try ASN1BitString(derEncoded: &nodes)
            guard signature.paddingBits == 0 else {
                throw RevocationError.malformed("revocation list", detail: "the signature has padding bits")
            }
            return try Self.parseTBS(
                tbsNode,
                outerAlgorithm: outerAlgorithm,
                signature: Array(signature.bytes)
            )
        }
    }

    private static func parseTBS(
        _ tbsNode: ASN1Node,
        outerAlgorithm: AlgorithmIdentifierReader,
        signature: [UInt8]
    ) throws -> CertificateRevocationList {
        try DER.sequence(tbsNode, identifier: .sequence) { nodes in
            var version = 0
            if Self.peek(nodes)?.identifier == .integer {
                version = try Int(derEncoded: &nodes)
                guard version == 1 else {
                    throw RevocationError.malformed("revocation list", detail: "version \(version + 1) is not 2")
                }
            }
            let innerAlgorithm = try AlgorithmIdentifierReader(derEncoded: &nodes)
            guard innerAlgorithm == outerAlgorithm else {
                throw RevocationError.malformed(
                    "revocation list",
                    detail: "the signed and the outer signature algorithms differ"
                )
            }
            let issuer = try DistinguishedName(derEncoded: &nodes)
            let thisUpdate = try Self.readTime(&nodes, field: "thisUpdate")
            var nextUpdate: Date?
            if let next = Self.peek(nodes), next.identifier == .utcTime || next.identifier == .generalizedTime {
                nextUpdate = try Self.readTime(&nodes, field: "nextUpdate")
            }
            var entries: [Certificate.SerialNumber: Entry] = [:]
            if Self.peek(nodes)?.identifier == .sequence, let list = nodes.next() {
                try DER.sequence(list, identifier: .sequence) { entryNodes in
                    while let entryNode = entryNodes.next() {
                        let entry = try Self.parseEntry(entryNode, listVersion: version)
                        entries[entry.serialNumber] = entry
                    }
                }
            }
            var extensions: [Certificate.Extension] = []
            let extensionsTag = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
            if let tagged = Self.peek(nodes), tagged.identifier == extensionsTag {
                guard version == 1 else {
                    throw RevocationError.malformed("revocation list", detail: "a version 1 list has extensions")
                }
                extensions =
                    try DER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { node in
                        try DER.sequence(of: Certificate.Extension.self, identifier: .sequence, rootNode: node)
                    }
            }
            guard nodes.next() == nil else {
                throw RevocationError.malformed("revocation list", detail: "unexpected data after the extensions")
            }
            var number: [UInt8]?
            var keyIdentifier: [UInt8]?
            var scope = IssuingDistributionPoint.everything
            var seen = Set<ASN1ObjectIdentifier>()
            for item in extensions {
                guard seen.insert(item.oid).inserted else {
                    throw RevocationError.malformed("revocation list", detail: "extension \(item.oid) appears twice")
                }
                switch item.oid {
                case OID.crlNumber:
                    guard !item.critical else {
                        throw RevocationError.malformed(
                            "revocation list",
                            detail: "its CRL number extension is marked critical (RFC 5280 5.2.3: it must not be)"
                        )
                    }
                    let value = try ArraySlice<UInt8>(derEncoded: try DER.parse(item.value))
                    number = Array(value.drop { $0 == 0 })
                case OID.authorityKeyIdentifier:
                    keyIdentifier = try AuthorityKeyIdentifier(item).keyIdentifier.map { Array($0) }
                case OID.issuingDistributionPoint:
                    scope = try IssuingDistributionPoint(derEncoded: Array(item.value))
                case OID.deltaCRLIndicator:
                    throw RevocationError.unsupported("revocation list", feature: "a delta CRL")
                case OID.freshestCRL, OID.issuerAlternativeName:
                    break
                default:
                    if item.critical {
                        throw RevocationError.unknownCriticalExtension("revocation list", oid: "\(item.oid)")
                    }
                }
            }
            guard number != nil else {
                throw RevocationError.malformed(
                    "revocation list",
                    detail: "it has no CRL number extension (RFC 5280 5.2.3: a list must carry one)"
                )
            }
            guard let algorithm = outerAlgorithm.signatureAlgorithm else {
                throw RevocationError.weakSignature(algorithm: "an unsupported algorithm (\(outerAlgorithm.oid))")
            }
            return CertificateRevocationList(
                issuer: issuer,
                thisUpdate: thisUpdate,
                nextUpdate: nextUpdate,
                number: number,
                authorityKeyIdentifier: keyIdentifier,
                signatureAlgorithm: algorithm,
                scope: scope,
                announcesDeltaLists: seen.contains(OID.freshestCRL),
                signedBytes: Array(tbsNode.encodedBytes),
                signature: signature,
                entries: entries
            )
        }
    }

    private static func parseEntry(_ node: ASN1Node, listVersion: Int) throws -> Entry {
        try DER.sequence(node, identifier: .sequence) { nodes in
            // A negative serial number refuses the whole list (strict, issue 39 item 4), in these words rather than
            // the decoder's ("an integer is not encoded minimally").
            var peek = nodes
            if let first = peek.next(), first.identifier == .integer, case .primitive(let content) = first.content,
                let high = content.first, high & 0x80 != 0
            {
                throw RevocationError.malformed(
                    "revocation list",
                    detail: "an entry has a negative serial number (RFC 5280 4.1.2.2: serial numbers are positive)"
                )
            }
            let serial = try ArraySlice<UInt8>(derEncoded: &nodes)
            let revocationDate = try Self.readTime(&nodes, field: "revocationDate")
            var reason: RevocationReason?
            var invalidityDate: Date?
            if nodes.peekIsPresent {
                guard listVersion == 1 else {
                    throw RevocationError.malformed("revocation list", detail: "a version 1 entry has extensions")
                }
                let extensions = try DER.sequence(
                    of: Certificate.Extension.self,
                    identifier: .sequence,
                    nodes: &nodes
                )
                for item in extensions {
                    switch item.oid {
                    case OID.reasonCode:
                        reason = try Self.readReason(Array(item.value))
                    case OID.invalidityDate:
                        let time = try GeneralizedTime(derEncoded: try DER.parse(item.value))
                        invalidityDate = Self.date(time)
                    case OID.certificateIssuer:
                        throw RevocationError.unsupported("revocation list", feature: "an indirect CRL")
                    default:
                        if item.critical {
                            throw RevocationError.unknownCriticalExtension("revocation list entry", oid: "\(item.oid)")
                        }
                    }
                }
            }
            if reason == .removeFromCRL {
                throw RevocationError.malformed(
                    "revocation list",
                    detail: "a complete list has an entry with the reason removeFromCRL (only delta CRLs may)"
                )
            }
            return Entry(
                serialNumber: Certificate.SerialNumber(bytes: serial),
                revocationDate: revocationDate,
                reason: reason,
                invalidityDate: invalidityDate
            )
        }
    }

    private static func readReason(_ bytes: [UInt8]) throws -> RevocationReason {
        let node = try DER.parse(bytes)
        guard node.identifier == .enumerated, case .primitive(let content) = node.content, content.count == 1,
            let reason = RevocationReason(rawValue: Int(content[content.startIndex]))
        else {
            throw RevocationError.malformed("revocation list", detail: "an entry's reason code is not a known value")
        }
        return reason
    }

    static func peek(_ nodes: ASN1NodeCollection.Iterator) -> ASN1Node? {
        var copy = nodes
        return copy.next()
    }

    static func readTime(_ nodes: inout ASN1NodeCollection.Iterator, field: String) throws -> Date {
        guard let node = nodes.next() else {
            throw RevocationError.malformed("revocation list", detail: "\(field) is missing")
        }
        switch node.identifier {
        case .utcTime:
            let time = try UTCTime(derEncoded: node)
            return Self.date(
                year: time.year,
                month: time.month,
                day: time.day,
                hours: time.hours,
                minutes: time.minutes,
                seconds: time.seconds
            )
        case .generalizedTime:
            return Self.date(try GeneralizedTime(derEncoded: node))
        default:
            throw RevocationError.malformed("revocation list", detail: "\(field) is not a time")
        }
    }

    static func date(_ time: GeneralizedTime) -> Date {
        Self.date(
            year: time.year,
            month: time.month,
            day: time.day,
            hours: time.hours,
            minutes: time.minutes,
            seconds: time.seconds
        ).addingTimeInterval(time.fractionalSeconds)
    }

    /// Seconds since 1970 of a UTC civil time, without a calendar object (a list may hold a million dates).
    static func date(year: Int, month: Int, day: Int, hours: Int, minutes: Int, seconds: Int) -> Date {
        // Days from civil (Howard Hinnant's algorithm).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hours * 3_600 + minutes * 60 + seconds))
    }

    static func words(_ error: any Error) -> String {
        if let error = error as? ASN1Error {
            switch error.code {
            case .truncatedASN1Field: return "the data ends in the middle of a field"
            case .unexpectedFieldType: return "a field has an unexpected type"
            case .invalidASN1Object: return "a field is not valid"
            case .invalidASN1IntegerEncoding: return "an integer is not encoded minimally"
            case .unsupportedFieldLength: return "a field is too long"
            default: return "the encoding is not valid DER"
            }
        }
        return "the encoding is not valid"
    }
}

extension ASN1NodeCollection.Iterator {
    fileprivate var peekIsPresent: Bool {
        var copy = self
        return copy.next() != nil
    }
}
