import Foundation
import SwiftASN1
import X509

/// One signed certificate timestamp (RFC 6962 3.2): a log's promise to publish a certificate, as embedded in the
/// certificate's SCT list extension (1.3.6.1.4.1.11129.2.4.2).
public struct SignedCertificateTimestamp: Hashable, Sendable, CustomStringConvertible {
    /// The version: 0 is v1, the only one defined; others are reported, never verified.
    public let version: UInt8
    /// The log's identifier: the SHA-256 of its public key (32 bytes).
    public let logID: [UInt8]
    /// When the log saw the certificate, in milliseconds since 1970.
    public let timestamp: UInt64
    /// The SCT's extensions (none are defined for v1), as given.
    public let extensions: [UInt8]
    /// The TLS hash (4: SHA-256) and signature (1: RSA, 3: ECDSA) algorithms.
    public let hashAlgorithm: UInt8
    public let signatureAlgorithm: UInt8
    /// The signature's bytes (for ECDSA, the DER `ECDSA-Sig-Value`).
    public let signature: [UInt8]

    /// The most SCTs a list may hold (certificates carry two to five): a longer list is refused as malformed, which
    /// bounds the signature checks and the words of a refusal.
    public static let maximumCount = 16

    /// The object identifier of the SCT list extension.
    public static let listExtensionOID: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 11129, 2, 4, 2]

    /// When the log saw the certificate.
    public var date: Date { Date(timeIntervalSince1970: TimeInterval(self.timestamp) / 1_000) }

    /// The log identifier in base64, as log lists write it.
    public var logIDBase64: String { Data(self.logID).base64EncodedString() }

    public var description: String {
        "SCT v\(Int(self.version) + 1) from log \(self.logIDBase64) at \(self.date.formatted(.iso8601))"
    }

    /// The SCTs embedded in `certificate`, or nil when it carries no SCT list extension.
    ///
    /// - Throws: ``CertificateTransparencyError`` when the extension is there but malformed (its words say where).
    public static func embedded(in certificate: Certificate) throws(CertificateTransparencyError) -> [Self]? {
        guard let item = certificate.extensions[oid: Self.listExtensionOID] else { return nil }
        let octets: ArraySlice<UInt8>
        do {
            let node = try DER.parse(item.value)
            guard node.identifier == .octetString, case .primitive(let content) = node.content else {
                throw CertificateTransparencyError.malformedList("the extension does not hold an OCTET STRING")
            }
            octets = content
        } catch let error as CertificateTransparencyError {
            throw error
        } catch {
            throw .malformedList("the extension is not valid DER")
        }
        return try Self.list(Array(octets))
    }

    /// Parses a TLS-encoded `SignedCertificateTimestampList`.
    public static func list(_ bytes: [UInt8]) throws(CertificateTransparencyError) -> [Self] {
        var reader = TLSReader(bytes[...])
        let total = try reader.vector(lengthBytes: 2, what: "the list")
        guard reader.isEmpty else { throw .malformedList("bytes follow the list") }
        var items = TLSReader(total)
        var result: [Self] = []
        while !items.isEmpty {
            guard result.count < Self.maximumCount else {
                throw .malformedList("it holds more than \(Self.maximumCount) SCTs")
            }
            let one = try items.vector(lengthBytes: 2, what: "an SCT")
            guard !one.isEmpty else { throw .malformedList("an SCT is empty") }
            result.append(try Self(serialized: one))
        }
        guard !result.isEmpty else { throw .malformedList("the list holds no SCT") }
        return result
    }

    init(serialized bytes: ArraySlice<UInt8>) throws(CertificateTransparencyError) {
        var reader = TLSReader(bytes)
        self.version = try reader.byte(what: "an SCT's version")
        guard self.version == 0 else {
            // An unknown version's layout is unknown: keep what can be read, verify nothing.
            self.logID = []
            self.timestamp = 0
            self.extensions = []
            self.hashAlgorithm = 0
            self.signatureAlgorithm = 0
            self.signature = Array(bytes)
            return
        }
        self.logID = Array(try reader.bytes(32, what: "an SCT's log ID"))
        self.timestamp = try reader.integer(8, what: "an SCT's timestamp")
        self.extensions = Array(try reader.vector(lengthBytes: 2, what: "an SCT's extensions"))
        self.hashAlgorithm = try reader.byte(what: "an SCT's hash algorithm")
        self.signatureAlgorithm = try reader.byte(what: "an SCT's signature algorithm")
        self.signature = Array(try reader.vector(lengthBytes: 2, what: "an SCT's signature"))
        guard reader.isEmpty else { throw .malformedList("bytes follow an SCT's signature") }
    }

    /// The bytes a v1 SCT's signature covers for a certificate with embedded SCTs (RFC 6962 3.2, `precert_entry`):
    /// `tbsCertificate` is the certificate's TBSCertificate without the SCT list extension, `issuerKeyHash` the
    /// SHA-256 of the issuer's SubjectPublicKeyInfo.
    func signedData(tbsCertificate: [UInt8], issuerKeyHash: [UInt8]) -> [UInt8] {
        var data: [UInt8] = [0, 0]  // v1, certificate_timestamp
        data.reserveCapacity(tbsCertificate.count + self.extensions.count + 50)
        for shift in stride(from: 56, through: 0, by: -8) {
            data.append(UInt8(truncatingIfNeeded: self.timestamp >> UInt64(shift)))
        }
        data += [0, 1]  // precert_entry
        data += issuerKeyHash
        let length = tbsCertificate.count
        data += [
            UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8),
            UInt8(truncatingIfNeeded: length),
        ]
        data += tbsCertificate
        data += [
            UInt8(truncatingIfNeeded: self.extensions.count >> 8), UInt8(truncatingIfNeeded: self.extensions.count),
        ]
        data += self.extensions
        return data
    }
}

/// Reads TLS presentation-language fields (big-endian integers, length-prefixed vectors).
struct TLSReader {
    private var bytes: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    var isEmpty: Bool { self.bytes.isEmpty }

    mutating func bytes(_ count: Int, what: String) throws(CertificateTransparencyError) -> ArraySlice<UInt8> {
        guard self.bytes.count >= count else { throw .malformedList("\(what) is cut short") }
        let taken = self.bytes.prefix(count)
        self.bytes = self.bytes.dropFirst(count)
        return taken
    }

    mutating func byte(what: String) throws(CertificateTransparencyError) -> UInt8 {
        try self.bytes(1, what: what).first!
    }

    mutating func integer(_ count: Int, what: String) throws(CertificateTransparencyError) -> UInt64 {
        var value: UInt64 = 0
        for byte in try self.bytes(count, what: what) { value = value << 8 | UInt64(byte) }
        return value
    }

    mutating func vector(lengthBytes: Int, what: String) throws(CertificateTransparencyError) -> ArraySlice<UInt8> {
        let length = Int(try self.integer(lengthBytes, what: "the length of \(what)"))
        return try self.bytes(length, what: what)
    }
}
