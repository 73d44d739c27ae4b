import X509

/// How the memos that find certificates again by identity compare them: by the memory of their `TBSCertificate`.
///
/// A parsed certificate's `TBSCertificate` bytes are a slice of the DER it was parsed from, and its signature follows
/// them in the same buffer; so two certificates whose `TBSCertificate` is the same memory, of the same length, were
/// parsed from the same bytes, as long as something keeps that memory alive (each memo keeps the certificates it
/// remembers). A client's parse cache hands every handshake the same `Certificate` values.
extension Certificate {
    /// Whether `self` and `other` hold their `TBSCertificate` in the same memory, with the same length.
    func sharesTBSMemory(with other: Certificate) -> Bool {
        self.tbsCertificateBytes.withUnsafeBytes { left in
            other.tbsCertificateBytes.withUnsafeBytes { right in
                left.baseAddress == right.baseAddress && left.count == right.count
            }
        }
    }

    /// Feeds the address and length of the `TBSCertificate`'s memory to `hasher`.
    func hashTBSMemory(into hasher: inout Hasher) {
        self.tbsCertificateBytes.withUnsafeBytes { bytes in
            hasher.combine(UInt(bitPattern: bytes.baseAddress))
            hasher.combine(bytes.count)
        }
    }
}
