import Crypto
import Foundation
import SwiftASN1
import X509

/// What Bulwark reads of a certificate besides swift-certificates' own properties.
extension Certificate {
    /// The DER encoding of the whole certificate, byte for byte as it was parsed.
    public var derBytes: [UInt8] {
        var serializer = DER.Serializer()
        // Serializing a parsed certificate replays its original bytes and cannot fail.
        try? serializer.serialize(self)
        return serializer.serializedBytes
    }

    /// The DER encoding of the certificate's SubjectPublicKeyInfo: what `sha256/` pins hash.
    ///
    /// Not `publicKey.subjectPublicKeyInfoBytes`, which holds only the key bits.
    ///
    /// These are the SubjectPublicKeyInfo bytes exactly as they appear in the certificate (RFC 7469 2.4), cut out
    /// of the already parsed `tbsCertificateBytes`. Re-serializing `publicKey` gives the same bytes for every
    /// canonically encoded key but costs an elliptic-curve point conversion (a field inversion, about 30 µs for
    /// P-256), and pins are checked on every handshake.
    public var subjectPublicKeyInfoDER: [UInt8] {
        if let spki = Self.subjectPublicKeyInfo(inTBSCertificate: self.tbsCertificateBytes) {
            return Array(spki)
        }
        var serializer = DER.Serializer()
        try? serializer.serialize(self.publicKey)
        return serializer.serializedBytes
    }

    /// The SubjectPublicKeyInfo element of a DER TBSCertificate (RFC 5280 4.1: an optional `[0]` version, then
    /// serial number, signature algorithm, issuer, validity, subject, subjectPublicKeyInfo), or nil when the bytes
    /// are not shaped that way.
    static func subjectPublicKeyInfo(inTBSCertificate tbs: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard let outer = Self.derElement(tbs, at: tbs.startIndex), outer.tag == 0x30, outer.end == tbs.endIndex else {
            return nil
        }
        var index = outer.contentStart
        guard let first = Self.derElement(tbs, at: index) else { return nil }
        if first.tag == 0xA0 { index = first.end }
        // serialNumber, signature, issuer, validity, subject.
        for expected: UInt8 in [0x02, 0x30, 0x30, 0x30, 0x30] {
            guard let element = Self.derElement(tbs, at: index), element.tag == expected else { return nil }
            index = element.end
        }
        guard let spki = Self.derElement(tbs, at: index), spki.tag == 0x30 else { return nil }
        return tbs[index..<spki.end]
    }

    /// The one-byte tag, content start and end of the DER element starting at `index` (definite lengths of up to
    /// four bytes), or nil.
    static func derElement(
        _ bytes: ArraySlice<UInt8>,
        at index: Int
    ) -> (tag: UInt8, contentStart: Int, end: Int)? {
        guard index + 1 < bytes.endIndex else { return nil }
        let tag = bytes[index]
        guard tag & 0x1F != 0x1F else { return nil }
        let first = bytes[index + 1]
        var contentStart = index + 2
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard count >= 1, count <= 4, contentStart + count <= bytes.endIndex else { return nil }
            for offset in 0..<count {
                length = length << 8 | Int(bytes[contentStart + offset])
            }
            contentStart += count
        }
        guard length <= bytes.endIndex - contentStart else { return nil }
        return (tag, contentStart, contentStart + length)
    }

    /// The subject alternative names as text (`DNS:…`, `IP:…`, `URI:…`, `email:…`, `DirName:…`, `RID:…`, and
    /// `othername:OID`, `X400Name`, `EdiPartyName` for the forms whose value is not text), or an empty list.
    public var subjectAlternativeNameStrings: [String] {
        guard let names = try? self.extensions.subjectAlternativeNames else { return [] }
        return names.map { name in
            switch name {
            case .dnsName(let dns): return "DNS:\(dns)"
            case .ipAddress(let bytes): return "IP:\(Self.formatIP(Array(bytes.bytes)))"
            case .uniformResourceIdentifier(let uri): return "URI:\(uri)"
            case .rfc822Name(let mail): return "email:\(mail)"
            case .directoryName(let name): return "DirName:\(name)"
            case .registeredID(let oid): return "RID:\(oid)"
            case .otherName(let other): return "othername:\(other.typeID)"
            case .x400Address: return "X400Name"
            case .ediPartyName: return "EdiPartyName"
            }
        }
    }

    /// `192.0.2.1`, `2001:db8::1` (RFC 5952, see ``IPAddress``), or hex for a SAN of another length.
    static func formatIP(_ bytes: [UInt8]) -> String {
        if let address = IPAddress(bytes: bytes) {
            return address.description
        }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }
}
