import Crypto
import Foundation
import SwiftASN1
import X509

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
    public var subjectPublicKeyInfoDER: [UInt8] {
        var serializer = DER.Serializer()
        try? serializer.serialize(self.publicKey)
        return serializer.serializedBytes
    }

    /// The subject alternative names as text (`DNS:…`, `IP:…`, `URI:…`, `email:…`), or an empty list.
    public var subjectAlternativeNameStrings: [String] {
        guard let names = try? self.extensions.subjectAlternativeNames else { return [] }
        return names.map { name in
            switch name {
            case .dnsName(let dns): return "DNS:\(dns)"
            case .ipAddress(let bytes): return "IP:\(Self.formatIP(Array(bytes.bytes)))"
            case .uniformResourceIdentifier(let uri): return "URI:\(uri)"
            case .rfc822Name(let mail): return "email:\(mail)"
            default: return String(describing: name)
            }
        }
    }

    /// RFC 5952 text: lower case, no leading zeros, the longest run of two or more zero groups as `::`.
    static func formatIPv6(_ bytes: [UInt8]) -> String {
        var groups: [UInt16] = []
        for index in stride(from: 0, to: 16, by: 2) {
            groups.append(UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1]))
        }
        var bestStart = -1
        var bestLength = 0
        var index = 0
        while index < 8 {
            if groups[index] == 0 {
                var end = index
                while end < 8 && groups[end] == 0 { end += 1 }
                if end - index > bestLength {
                    bestStart = index
                    bestLength = end - index
                }
                index = end
            } else {
                index += 1
            }
        }
        func text(_ range: Range<Int>) -> String {
            groups[range].map { String($0, radix: 16) }.joined(separator: ":")
        }
        guard bestLength >= 2 else { return text(0..<8) }
        return text(0..<bestStart) + "::" + text((bestStart + bestLength)..<8)
    }

    static func formatIP(_ bytes: [UInt8]) -> String {
        if bytes.count == 4 {
            return bytes.map(String.init).joined(separator: ".")
        }
        if bytes.count == 16 {
            return Self.formatIPv6(bytes)
        }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }
}
