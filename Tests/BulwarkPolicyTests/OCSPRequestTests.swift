import BulwarkTestSupport
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

@testable import BulwarkPolicy

@Suite("OCSP requests: encoding and the GET form")
struct OCSPRequestTests {
    let authority: CRLAuthority
    let leaf: Certificate

    init() throws {
        self.authority = try CRLAuthority(name: "Bulwark OCSP Request CA")
        self.leaf = try self.authority.issue(serial: 0x00_C0FFEE)
    }

    /// The fields of a request, read back with SwiftASN1 independently of Bulwark's encoder.
    struct Decoded {
        var hashAlgorithm: ASN1ObjectIdentifier
        var hashParameters: [UInt8]?
        var nameHash: [UInt8]
        var keyHash: [UInt8]
        var serial: [UInt8]
        var extensions: [Certificate.Extension]
    }

    struct Missing: Error {}

    /// The next node, or a thrown error when there is none.
    static func next(_ nodes: inout ASN1NodeCollection.Iterator) throws -> ASN1Node {
        guard let node = nodes.next() else { throw Missing() }
        return node
    }

    static func decode(_ bytes: [UInt8]) throws -> Decoded {
        try DER.sequence(try DER.parse(bytes), identifier: .sequence) { request in
            let tbsNode = try Self.next(&request)
            let signature = request.next()
            #expect(signature == nil, "no signature")
            return try DER.sequence(tbsNode, identifier: .sequence) { tbs in
                let list = try Self.next(&tbs)
                var result = try DER.sequence(list, identifier: .sequence) { items in
                    let item = try Self.next(&items)
                    let more = items.next()
                    #expect(more == nil, "one certificate per request")
                    return try DER.sequence(item, identifier: .sequence) { fields in
                        try DER.sequence(try Self.next(&fields), identifier: .sequence) { id in
                            let (oid, parameters) = try DER.sequence(try Self.next(&id), identifier: .sequence) {
                                algorithm in
                                let oid = try ASN1ObjectIdentifier(derEncoded: &algorithm)
                                return (oid, algorithm.next().map { Array($0.encodedBytes) })
                            }
                            return Decoded(
                                hashAlgorithm: oid,
                                hashParameters: parameters,
                                nameHash: Array(try ASN1OctetString(derEncoded: &id).bytes),
                                keyHash: Array(try ASN1OctetString(derEncoded: &id).bytes),
                                serial: Array(try ArraySlice<UInt8>(derEncoded: &id)),
                                extensions: []
                            )
                        }
                    }
                }
                result.extensions =
                    try DER.optionalExplicitlyTagged(&tbs, tagNumber: 2, tagClass: .contextSpecific) { node in
                        try DER.sequence(of: Certificate.Extension.self, identifier: .sequence, rootNode: node)
                    } ?? []
                let rest = tbs.next()
                #expect(rest == nil)
                return result
            }
        }
    }

    @Test func theRequestCarriesTheCertificateIDWithIndependentlyComputedHashes() throws {
        let request = try OCSPRequest(certificate: self.leaf, issuer: self.authority.certificate, nonce: false)
        let decoded = try Self.decode(request.derBytes)
        #expect(decoded.hashAlgorithm == [1, 3, 14, 3, 2, 26])
        #expect(decoded.hashParameters == [0x05, 0x00])
        // The issuer's name as it stands in the leaf (its DER), and the issuer's key as raw X9.62 point bytes.
        var name = DER.Serializer()
        try name.serialize(self.leaf.issuer)
        let point = self.authority.key.publicKey.x963Representation
        #expect(decoded.nameHash == Array(Insecure.SHA1.hash(data: name.serializedBytes)))
        #expect(decoded.keyHash == Array(Insecure.SHA1.hash(data: point)))
        #expect(decoded.keyHash == OCSPResponseBuilder.keyHash(of: self.authority.certificate))
        #expect(decoded.serial == Array(self.leaf.serialNumber.bytes))
        #expect(decoded.extensions.isEmpty)
        #expect(request.nonce == nil)
        #expect(request.certificateID.issuerNameHash == decoded.nameHash)
        #expect(request.certificateID.issuerKeyHash == decoded.keyHash)
        #expect(request.certificateID.serialNumber == self.leaf.serialNumber)
        let again = try OCSPCertificateID(certificate: self.leaf, issuer: self.authority.certificate)
        #expect(again == request.certificateID)
    }

    @Test func aNonceIs32RandomBytesInANonCriticalNonceExtension() throws {
        let first = try OCSPRequest(certificate: self.leaf, issuer: self.authority.certificate)
        let second = try OCSPRequest(certificate: self.leaf, issuer: self.authority.certificate)
        let nonce = try #require(first.nonce)
        #expect(nonce.count == 32)
        #expect(first.nonce != second.nonce)
        let decoded = try Self.decode(first.derBytes)
        #expect(decoded.extensions.count == 1)
        let item = try #require(decoded.extensions.first)
        #expect(item.oid == [1, 3, 6, 1, 5, 5, 7, 48, 1, 2])
        #expect(!item.critical)
        let value = try ASN1OctetString(derEncoded: try DER.parse(item.value))
        #expect(Array(value.bytes) == nonce)
    }

    @Test func aCertificateFromAnotherIssuerIsRefused() throws {
        let other = try CRLAuthority(name: "Another OCSP CA")
        let error = #expect(throws: RevocationError.self) {
            _ = try OCSPRequest(certificate: self.leaf, issuer: other.certificate)
        }
        #expect(error?.code == "issuer_mismatch")
        #expect(error?.description.contains("Another OCSP CA") == true, "\(String(describing: error))")
    }

    @Test func theGETFormIsTheResponderURLAndThePercentEncodedBase64() throws {
        let request = try OCSPRequest(certificate: self.leaf, issuer: self.authority.certificate, nonce: false)
        let url = try #require(request.getURL(responder: "http://ocsp.bulwark.test"))
        #expect(url.hasPrefix("http://ocsp.bulwark.test/"))
        #expect(request.getURL(responder: "http://ocsp.bulwark.test/") == url)
        let path = String(url.dropFirst("http://ocsp.bulwark.test/".count))
        #expect(!path.contains("+") && !path.contains("/") && !path.contains("="))
        let base64 = try #require(path.removingPercentEncoding)
        #expect(Data(base64Encoded: base64).map(Array.init) == request.derBytes)
    }

    @Test func theGETFormStopsAt255Bytes() throws {
        let request = try OCSPRequest(certificate: self.leaf, issuer: self.authority.certificate, nonce: false)
        let short = try #require(request.getURL(responder: "http://a"))
        let encodedLength = short.utf8.count - "http://a/".utf8.count
        let fitting = "http://" + String(repeating: "a", count: 255 - encodedLength - "http:///".count)
        let longest = try #require(request.getURL(responder: fitting))
        #expect(longest.utf8.count == 255)
        #expect(request.getURL(responder: fitting + "a") == nil)
        // With a 32-byte nonce, a long responder URL leaves no room: POST then.
        let withNonce = try OCSPRequest(certificate: self.leaf, issuer: self.authority.certificate)
        #expect(withNonce.getURL(responder: "http://" + String(repeating: "o", count: 100)) == nil)
    }
}
