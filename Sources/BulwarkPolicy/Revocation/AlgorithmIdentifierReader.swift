import SwiftASN1
import X509

/// A signature `AlgorithmIdentifier` read from DER (swift-certificates keeps its own reader internal): the object
/// identifier, whether parameters were present, and the swift-certificates algorithm it names.
struct AlgorithmIdentifierReader: Hashable, Sendable {
    let oid: ASN1ObjectIdentifier
    /// The parameters' DER bytes; nil when absent.
    let parameters: [UInt8]?

    init(derEncoded nodes: inout ASN1NodeCollection.Iterator) throws {
        guard let node = nodes.next() else {
            throw RevocationError.malformed("signature", detail: "the algorithm identifier is missing")
        }
        (self.oid, self.parameters) = try DER.sequence(node, identifier: .sequence) { nodes in
            let oid = try ASN1ObjectIdentifier(derEncoded: &nodes)
            let parameters = nodes.next().map { Array($0.encodedBytes) }
            guard nodes.next() == nil else {
                throw RevocationError.malformed("signature", detail: "the algorithm identifier has extra fields")
            }
            return (oid, parameters)
        }
    }

    /// The algorithm, for the ones Bulwark accepts on revocation data: ECDSA with SHA-256/384/512, RSA PKCS#1 v1.5
    /// with SHA-256/384/512 (parameters NULL or absent, RFC 4055) and Ed25519. SHA-1 and RSA-PSS give nil.
    var signatureAlgorithm: Certificate.SignatureAlgorithm? {
        let null: [UInt8] = [0x05, 0x00]
        let rsaParametersAllowed = self.parameters == nil || self.parameters == null
        switch self.oid {
        case [1, 2, 840, 10045, 4, 3, 2] where self.parameters == nil: return .ecdsaWithSHA256
        case [1, 2, 840, 10045, 4, 3, 3] where self.parameters == nil: return .ecdsaWithSHA384
        case [1, 2, 840, 10045, 4, 3, 4] where self.parameters == nil: return .ecdsaWithSHA512
        case [1, 2, 840, 113549, 1, 1, 11] where rsaParametersAllowed: return .sha256WithRSAEncryption
        case [1, 2, 840, 113549, 1, 1, 12] where rsaParametersAllowed: return .sha384WithRSAEncryption
        case [1, 2, 840, 113549, 1, 1, 13] where rsaParametersAllowed: return .sha512WithRSAEncryption
        case [1, 3, 101, 112] where self.parameters == nil: return .ed25519
        default: return nil
        }
    }
}
