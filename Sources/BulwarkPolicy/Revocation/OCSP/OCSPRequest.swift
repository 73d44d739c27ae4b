import Foundation
import SwiftASN1
import X509

/// A request for one certificate's status (RFC 6960, section 4.1), DER-encoded, unsigned, with an optional random
/// nonce (RFC 8954: 32 bytes) that the responder may echo to prove its answer is fresh.
public struct OCSPRequest: Hashable, Sendable {
    /// The longest GET URL made (RFC 5019, section 5: POST is used for longer requests).
    public static let maximumGetURLLength = 255

    /// The certificate asked about.
    public let certificateID: OCSPCertificateID
    /// The nonce sent, or nil when the request carries none.
    public let nonce: [UInt8]?
    /// The request's DER bytes (the body of a POST, content type `application/ocsp-request`).
    public let derBytes: [UInt8]

    /// A request for the status of `certificate`, issued by `issuer`, with a fresh 32-byte nonce unless `nonce` is
    /// false (a responder that precomputes its answers, RFC 5019, ignores nonces).
    ///
    /// - Throws: ``RevocationError`` `issuer_mismatch` when `issuer` is not the certificate's issuer.
    public init(certificate: Certificate, issuer: Certificate, nonce: Bool = true) throws(RevocationError) {
        let identifier = try OCSPCertificateID(certificate: certificate, issuer: issuer)
        var generator = SystemRandomNumberGenerator()
        let value = nonce ? (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) } : nil
        try self.init(certificateID: identifier, nonce: value)
    }

    /// A request for `certificateID` carrying `nonce` (1 to 32 bytes) or none.
    init(certificateID: OCSPCertificateID, nonce: [UInt8]?) throws(RevocationError) {
        self.certificateID = certificateID
        self.nonce = nonce
        do {
            self.derBytes = try Self.encode(certificateID, nonce: nonce)
        } catch {
            throw .malformed("OCSP request", detail: "it cannot be encoded")
        }
    }

    /// The GET form of the request (RFC 6960, appendix A.1): the responder's URL, a slash and the percent-encoded
    /// base64 of the DER bytes; nil when that URL would be longer than ``maximumGetURLLength`` bytes (send a POST
    /// then).
    public func getURL(responder: String) -> String? {
        Self.getURL(for: self.derBytes, responder: responder)
    }

    /// The GET form of any DER-encoded request (one swift-certificates' `OCSPVerifierPolicy` made, say), or nil when
    /// it would be longer than ``maximumGetURLLength`` bytes.
    public static func getURL(for derBytes: [UInt8], responder: String) -> String? {
        let encoded = Data(derBytes).base64EncodedString().utf8.reduce(into: "") { text, byte in
            switch byte {
            case UInt8(ascii: "+"): text += "%2B"
            case UInt8(ascii: "/"): text += "%2F"
            case UInt8(ascii: "="): text += "%3D"
            default: text.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        let url = responder + (responder.hasSuffix("/") ? "" : "/") + encoded
        return url.utf8.count <= Self.maximumGetURLLength ? url : nil
    }

    /// `OCSPRequest ::= SEQUENCE { tbsRequest }`, `TBSRequest ::= SEQUENCE { requestList, requestExtensions }`:
    /// version 1 (by default, so not encoded), no requestor name, no signature.
    private static func encode(_ identifier: OCSPCertificateID, nonce: [UInt8]?) throws -> [UInt8] {
        var coder = DER.Serializer()
        try coder.appendConstructedNode(identifier: .sequence) { coder in
            try coder.appendConstructedNode(identifier: .sequence) { coder in
                try coder.appendConstructedNode(identifier: .sequence) { coder in
                    try coder.appendConstructedNode(identifier: .sequence) { coder in
                        try identifier.serialize(into: &coder)
                    }
                }
                if let nonce {
                    try coder.serialize(explicitlyTaggedWithTagNumber: 2, tagClass: .contextSpecific) { coder in
                        try coder.appendConstructedNode(identifier: .sequence) { coder in
                            try coder.serialize(OCSPResponse.nonceExtension(nonce))
                        }
                    }
                }
            }
        }
        return coder.serializedBytes
    }
}
