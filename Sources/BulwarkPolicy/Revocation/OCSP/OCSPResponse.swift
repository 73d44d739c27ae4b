import Foundation
import SwiftASN1
import X509

/// An OCSP response (RFC 6960, section 4.2), parsed by Bulwark (swift-certificates keeps its OCSP types internal).
///
/// Parsing reads strict DER and refuses what cannot be relied on: a response type other than the basic one, an
/// unknown critical extension on the response or on one of its answers, a signature algorithm Bulwark does not
/// accept (SHA-1 among them). ``status(for:certificate:issuer:at:clockSkew:)`` then checks the response against a
/// request, the certificate and its issuer: who signed it, the nonce, the times, and which status it gives.
public struct OCSPResponse: Sendable {
    /// The largest response accepted by default: 1 MiB (a response for one certificate is a few kilobytes).
    public static let defaultMaximumSize = 1 << 20

    /// The most certificates a response may carry to prove a delegated responder's authority.
    static let maximumCertificates = 16

    /// The responder's verdict on the request as a whole (RFC 6960 `OCSPResponseStatus`).
    public struct ResponseStatus: Hashable, Sendable, CustomStringConvertible {
        /// The value as it stands in the response (0 to 6, 4 unused).
        public let rawValue: Int

        /// Wraps a status value; nil for a value RFC 6960 does not define.
        public init?(rawValue: Int) {
            guard (0...6).contains(rawValue), rawValue != 4 else { return nil }
            self.rawValue = rawValue
        }

        private init(_ rawValue: Int) { self.rawValue = rawValue }

        /// The response holds certificate statuses.
        public static let successful = ResponseStatus(0)
        /// The responder could not read the request.
        public static let malformedRequest = ResponseStatus(1)
        /// The responder failed internally.
        public static let internalError = ResponseStatus(2)
        /// The responder is busy: try again later.
        public static let tryLater = ResponseStatus(3)
        /// The responder wants signed requests.
        public static let sigRequired = ResponseStatus(5)
        /// The responder will not answer this client or about this certificate.
        public static let unauthorized = ResponseStatus(6)

        /// The status's name in RFC 6960: `successful`, `malformedRequest`, `internalError`, `tryLater`,
        /// `sigRequired` or `unauthorized`.
        public var description: String {
            switch self.rawValue {
            case 0: return "successful"
            case 1: return "malformedRequest"
            case 2: return "internalError"
            case 3: return "tryLater"
            case 5: return "sigRequired"
            default: return "unauthorized"
            }
        }
    }

    /// How the response names its signer (RFC 6960 `ResponderID`).
    public enum ResponderID: Hashable, Sendable, CustomStringConvertible {
        /// By the subject name of its certificate.
        case byName(DistinguishedName)
        /// By the SHA-1 hash of its public key (the contents of the `subjectPublicKey` BIT STRING).
        case byKey([UInt8])

        /// The responder's name, or its key hash in hexadecimal.
        public var description: String {
            switch self {
            case .byName(let name): return String(describing: name)
            case .byKey(let hash): return "the responder with key hash " + hash.map { Self.hex($0) }.joined()
            }
        }

        private static func hex(_ byte: UInt8) -> String {
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
        }
    }

    /// The responder's verdict on the request; only a `successful` response carries the fields below.
    public let responseStatus: ResponseStatus
    /// Who signed the response; nil unless successful.
    public let responderID: ResponderID?
    /// When the response was signed; nil unless successful.
    public let producedAt: Date?
    /// The answers, one per certificate asked about (usually one).
    public let responses: [OCSPSingleResponse]
    /// The nonce the response echoes (the value of its nonce extension), nil when it carries none.
    public let nonce: [UInt8]?
    /// The algorithm that signed the response; nil unless successful.
    public let signatureAlgorithm: Certificate.SignatureAlgorithm?
    /// The DER bytes the signature covers (`ResponseData`); empty unless successful.
    public let signedBytes: [UInt8]
    /// The signature's bytes (for ECDSA, the DER `ECDSA-Sig-Value`); empty unless successful.
    public let signature: [UInt8]
    /// The certificates the responder sent along, to prove a delegated responder's authority.
    public let certificates: [Certificate]

    /// Parses a DER-encoded response, refusing one larger than `maximumSize` bytes before reading it.
    public init(derEncoded bytes: [UInt8], maximumSize: Int = OCSPResponse.defaultMaximumSize) throws(RevocationError) {
        guard bytes.count <= maximumSize else {
            throw .tooLarge("OCSP response", size: bytes.count, limit: maximumSize)
        }
        do {
            self = try Self.parse(bytes)
        } catch let error as RevocationError {
            throw error
        } catch {
            throw .malformed("OCSP response", detail: CertificateRevocationList.words(error))
        }
    }

    private init(status: ResponseStatus) {
        self.responseStatus = status
        self.responderID = nil
        self.producedAt = nil
        self.responses = []
        self.nonce = nil
        self.signatureAlgorithm = nil
        self.signedBytes = []
        self.signature = []
        self.certificates = []
    }

    private init(
        responderID: ResponderID,
        producedAt: Date,
        responses: [OCSPSingleResponse],
        nonce: [UInt8]?,
        signatureAlgorithm: Certificate.SignatureAlgorithm,
        signedBytes: [UInt8],
        signature: [UInt8],
        certificates: [Certificate]
    ) {
        self.responseStatus = .successful
        self.responderID = responderID
        self.producedAt = producedAt
        self.responses = responses
        self.nonce = nonce
        self.signatureAlgorithm = signatureAlgorithm
        self.signedBytes = signedBytes
        self.signature = signature
        self.certificates = certificates
    }
}

// MARK: - Parsing

extension OCSPResponse {
    /// Object identifiers of OCSP.
    enum OID {
        /// id-pkix-ocsp-basic.
        static let basic: ASN1ObjectIdentifier = [1, 3, 6, 1, 5, 5, 7, 48, 1, 1]
        /// id-pkix-ocsp-nonce.
        static let nonce: ASN1ObjectIdentifier = [1, 3, 6, 1, 5, 5, 7, 48, 1, 2]
        /// id-pkix-ocsp-extended-revoke (RFC 6960, section 4.4.8).
        static let extendedRevoke: ASN1ObjectIdentifier = [1, 3, 6, 1, 5, 5, 7, 48, 1, 9]
    }

    /// The nonce extension of a request: its value is the DER OCTET STRING of the nonce (RFC 8954).
    static func nonceExtension(_ nonce: [UInt8]) throws -> Certificate.Extension {
        var coder = DER.Serializer()
        try coder.serialize(ASN1OctetString(contentBytes: ArraySlice(nonce)))
        return Certificate.Extension(oid: OID.nonce, critical: false, value: ArraySlice(coder.serializedBytes))
    }

    /// Refuses duplicate extensions and unknown critical ones.
    static func checkExtensions(
        _ extensions: [Certificate.Extension],
        known: Set<ASN1ObjectIdentifier>,
        what: String
    ) throws {
        var seen = Set<ASN1ObjectIdentifier>()
        for item in extensions {
            guard seen.insert(item.oid).inserted else {
                throw RevocationError.malformed("OCSP response", detail: "extension \(item.oid) appears twice")
            }
            if item.critical && !known.contains(item.oid) {
                throw RevocationError.unknownCriticalExtension(what, oid: "\(item.oid)")
            }
        }
    }

    private static func parse(_ bytes: [UInt8]) throws -> OCSPResponse {
        let root = try DER.parse(bytes)
        return try DER.sequence(root, identifier: .sequence) { nodes in
            guard let statusNode = nodes.next(), statusNode.identifier == .enumerated,
                case .primitive(let content) = statusNode.content, content.count == 1
            else {
                throw RevocationError.malformed("OCSP response", detail: "the response status is missing")
            }
            guard let status = ResponseStatus(rawValue: Int(content[content.startIndex])) else {
                throw RevocationError.malformed("OCSP response", detail: "the response status is not a known value")
            }
            let body = try DER.optionalExplicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { node in
                try DER.sequence(node, identifier: .sequence) { nodes in
                    let type = try ASN1ObjectIdentifier(derEncoded: &nodes)
                    let response = try ASN1OctetString(derEncoded: &nodes)
                    guard nodes.next() == nil else {
                        throw RevocationError.malformed("OCSP response", detail: "unexpected data after the response")
                    }
                    return (type, response)
                }
            }
            guard nodes.next() == nil else {
                throw RevocationError.malformed("OCSP response", detail: "unexpected data after the response")
            }
            guard status == .successful else {
                guard body == nil else {
                    throw RevocationError.malformed(
                        "OCSP response",
                        detail: "a response with the status \(status) carries a body"
                    )
                }
                return OCSPResponse(status: status)
            }
            guard let (type, response) = body else {
                throw RevocationError.malformed("OCSP response", detail: "a successful response has no body")
            }
            guard type == OID.basic else {
                throw RevocationError.unsupported("OCSP response", feature: "of type \(type), not a basic response")
            }
            return try Self.parseBasic(try DER.parse(response.bytes))
        }
    }

    /// `BasicOCSPResponse ::= SEQUENCE { tbsResponseData ResponseData, signatureAlgorithm AlgorithmIdentifier,
    /// signature BIT STRING, certs [0] EXPLICIT SEQUENCE OF Certificate OPTIONAL }`.
    private static func parseBasic(_ root: ASN1Node) throws -> OCSPResponse {
        try DER.sequence(root, identifier: .sequence) { nodes in
            guard let dataNode = nodes.next() else {
                throw RevocationError.malformed("OCSP response", detail: "the response data is missing")
            }
            let algorithm = try AlgorithmIdentifierReader(derEncoded: &nodes)
            let signature = try ASN1BitString(derEncoded: &nodes)
            guard signature.paddingBits == 0 else {
                throw RevocationError.malformed("OCSP response", detail: "the signature has padding bits")
            }
            let certificates =
                try DER.optionalExplicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { node in
                    try DER.sequence(of: Certificate.self, identifier: .sequence, rootNode: node)
                } ?? []
            guard nodes.next() == nil else {
                throw RevocationError.malformed("OCSP response", detail: "unexpected data after the certificates")
            }
            guard certificates.count <= Self.maximumCertificates else {
                throw RevocationError.malformed(
                    "OCSP response",
                    detail: "it carries \(certificates.count) certificates, more than \(Self.maximumCertificates)"
                )
            }
            let (responderID, producedAt, responses, nonce) = try Self.parseData(dataNode)
            guard let signatureAlgorithm = algorithm.signatureAlgorithm else {
                throw RevocationError.weakSignature(
                    "OCSP response",
                    algorithm: "an unsupported algorithm (\(algorithm.oid))"
                )
            }
            return OCSPResponse(
                responderID: responderID,
                producedAt: producedAt,
                responses: responses,
                nonce: nonce,
                signatureAlgorithm: signatureAlgorithm,
                signedBytes: Array(dataNode.encodedBytes),
                signature: Array(signature.bytes),
                certificates: certificates
            )
        }
    }

    /// `ResponseData ::= SEQUENCE { version [0] EXPLICIT Version DEFAULT v1, responderID ResponderID, producedAt
    /// GeneralizedTime, responses SEQUENCE OF SingleResponse, responseExtensions [1] EXPLICIT Extensions OPTIONAL }`.
    private static func parseData(
        _ node: ASN1Node
    ) throws -> (ResponderID, Date, [OCSPSingleResponse], [UInt8]?) {
        try DER.sequence(node, identifier: .sequence) { nodes in
            // DER omits a default value; an explicit v1 is tolerated (the one leniency: it changes no meaning).
            let version = try DER.optionalExplicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) {
                try Int(derEncoded: $0)
            }
            if let version, version != 0 {
                throw RevocationError.malformed("OCSP response", detail: "version \(version + 1) is not 1")
            }
            guard let responderNode = nodes.next() else {
                throw RevocationError.malformed("OCSP response", detail: "the responder ID is missing")
            }
            let responderID = try Self.readResponderID(responderNode)
            let producedAt = CertificateRevocationList.date(try GeneralizedTime(derEncoded: &nodes))
            guard let listNode = nodes.next() else {
                throw RevocationError.malformed("OCSP response", detail: "the list of responses is missing")
            }
            let responses = try DER.sequence(listNode, identifier: .sequence) { items in
                var responses: [OCSPSingleResponse] = []
                while let item = items.next() {
                    responses.append(try OCSPSingleResponse(derEncoded: item))
                }
                return responses
            }
            let extensions =
                try DER.optionalExplicitlyTagged(&nodes, tagNumber: 1, tagClass: .contextSpecific) { node in
                    try DER.sequence(of: Certificate.Extension.self, identifier: .sequence, rootNode: node)
                } ?? []
            guard nodes.next() == nil else {
                throw RevocationError.malformed("OCSP response", detail: "unexpected data after the extensions")
            }
            try Self.checkExtensions(extensions, known: [OID.nonce, OID.extendedRevoke], what: "OCSP response")
            let nonce = extensions.first { $0.oid == OID.nonce }.map { Self.nonceValue(Array($0.value)) }
            return (responderID, producedAt, responses, nonce)
        }
    }

    /// `ResponderID ::= CHOICE { byName [1] EXPLICIT Name, byKey [2] EXPLICIT KeyHash }`.
    private static func readResponderID(_ node: ASN1Node) throws -> ResponderID {
        let byName = ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific)
        let byKey = ASN1Identifier(tagWithNumber: 2, tagClass: .contextSpecific)
        switch node.identifier {
        case byName:
            return .byName(
                try DER.explicitlyTagged(node, tagNumber: 1, tagClass: .contextSpecific) {
                    try DistinguishedName(derEncoded: $0)
                }
            )
        case byKey:
            let hash = try DER.explicitlyTagged(node, tagNumber: 2, tagClass: .contextSpecific) {
                try ASN1OctetString(derEncoded: $0)
            }
            guard hash.bytes.count == 20 else {
                throw RevocationError.malformed("OCSP response", detail: "the responder's key hash is not SHA-1")
            }
            return .byKey(Array(hash.bytes))
        default:
            throw RevocationError.malformed("OCSP response", detail: "the responder ID is neither a name nor a key")
        }
    }

    /// The nonce in a nonce extension's value: the contents of its OCTET STRING (RFC 8954), or the raw value of
    /// responders that omit the OCTET STRING (older OpenSSL-era ones).
    private static func nonceValue(_ value: [UInt8]) -> [UInt8] {
        if let node = try? DER.parse(value), let string = try? ASN1OctetString(derEncoded: node) {
            return Array(string.bytes)
        }
        return value
    }
}
