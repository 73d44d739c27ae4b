import Crypto
import Foundation
import X509

/// Signatures that verified, remembered by the SHA-256 of exactly what decided them: the signer's
/// SubjectPublicKeyInfo bytes, the signed bytes, the signature algorithm and the signature bytes.
///
/// Whether a signature verifies is a pure function of those four inputs, so a hit answers exactly as a new
/// verification would, for a hash and a lookup instead of the signature arithmetic (about 110 µs for P-256 here).
/// Only successes are stored: a signature that does not verify is verified again every time it is presented, so a
/// refusal never depends on what the cache holds. A certificate re-signed by another key over the same
/// `TBSCertificate` differs in the key and the signature bytes, so it is a different entry and is verified afresh.
/// Bounded: at most `capacity` entries, the least recently used one evicted first; signed bytes longer than
/// `maximumSignedBytes` are verified every time and not remembered (hashing them would cost more than a lookup
/// saves for the sizes it is meant for).
///
/// Used by Bulwark's own signature checks: OCSP responses and the certificates of delegated OCSP responders, which
/// a revocation check verifies on every handshake, and the paths ``VerifiedPathMemo`` checks again. swift-certificates'
/// `Verifier` checks the signatures of the paths it searches itself (`Verifier.shouldSkipAddingCertificate`, a private
/// step before any `VerifierPolicy` is consulted, calling `Certificate.PublicKey.isValidSignature` on a key whose
/// backing type is internal to swift-certificates) and offers no hook through which a cache could answer for it; so
/// the chain's signatures are served from here only when a path the `Verifier` built before is checked again.
package final class SignatureVerificationCache: Sendable {
    /// The key: a SHA-256 digest, as four words.
    package struct Key: Hashable, Sendable {
        let words: (UInt64, UInt64, UInt64, UInt64)

        init(_ digest: SHA256.Digest) {
            var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
            digest.withUnsafeBytes { bytes in
                withUnsafeMutableBytes(of: &words) {
                    $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<32]))
                }
            }
            self.words = words
        }

        package static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1 && lhs.words.2 == rhs.words.2
                && lhs.words.3 == rhs.words.3
        }

        package func hash(into hasher: inout Hasher) {
            hasher.combine(self.words.0)
            hasher.combine(self.words.1)
        }
    }

    /// The process's cache, used by Bulwark's own signature checks.
    package static let shared = SignatureVerificationCache()

    package let capacity: Int
    package let maximumSignedBytes: Int
    private let entries: LockedValue<LeastRecentlyUsed<Key, Void>>
    private let verifications = LockedValue(0)

    package init(capacity: Int = 256, maximumSignedBytes: Int = 64 * 1024) {
        self.capacity = capacity
        self.maximumSignedBytes = maximumSignedBytes
        self.entries = LockedValue(LeastRecentlyUsed(capacity: capacity))
    }

    /// The number of remembered signatures.
    package var count: Int { self.entries.withLock { $0.count } }

    /// How many signatures were verified with the arithmetic (not answered from memory), since creation.
    package var verificationCount: Int { self.verifications.current }

    /// Whether `signature` over `signedBytes` verifies with the key of `signer` under `algorithm`: from memory when
    /// exactly this verification succeeded before, else verified (and remembered when it succeeds).
    package func isValidSignature(
        _ signature: [UInt8],
        for signedBytes: [UInt8],
        signatureAlgorithm algorithm: Certificate.SignatureAlgorithm,
        signer: Certificate
    ) -> Bool {
        var key: Key?
        if self.capacity > 0, signedBytes.count <= self.maximumSignedBytes {
            key = Self.key(
                signerKey: signer.subjectPublicKeyInfoDER,
                signedBytes: signedBytes[...],
                algorithm: Array(String(describing: algorithm).utf8),
                signature: signature[...]
            )
        }
        return self.answer(key) {
            signer.publicKey.isValidSignature(signature, for: signedBytes, signatureAlgorithm: algorithm)
        }
    }

    /// Whether `certificate`'s signature verifies with the key of `issuer`: from memory when exactly this
    /// verification (the same key, `TBSCertificate`, algorithm and signature) succeeded before.
    package func isValidSignature(of certificate: Certificate, issuedBy issuer: Certificate) -> Bool {
        self.isValidSignature(of: certificate, issuedBy: issuer, key: self.key(of: certificate, issuedBy: issuer))
    }

    /// What the verification of `certificate`'s signature with the key of `issuer` is remembered under: the
    /// SHA-256 of the issuer's SubjectPublicKeyInfo, the `TBSCertificate`, the signature algorithm and the signature,
    /// as they are encoded in the two certificates. A pure function of them, so a caller that keeps both
    /// certificates may keep it too, instead of hashing them again (``VerifiedPathMemo``). Nil when the cache
    /// remembers nothing or the certificate's encoding is not shaped as expected; such a signature is verified
    /// every time.
    package func key(of certificate: Certificate, issuedBy issuer: Certificate) -> Key? {
        guard self.capacity > 0, certificate.tbsCertificateBytes.count <= self.maximumSignedBytes,
            let signature = certificate.signatureFieldsDER
        else { return nil }
        return Self.key(
            signerKey: issuer.subjectPublicKeyInfoDER,
            signedBytes: certificate.tbsCertificateBytes,
            algorithm: Array(signature.algorithm),
            signature: signature.value
        )
    }

    /// ``isValidSignature(of:issuedBy:)`` with the key ``key(of:issuedBy:)`` gave for the same two certificates.
    package func isValidSignature(of certificate: Certificate, issuedBy issuer: Certificate, key: Key?) -> Bool {
        self.answer(key) { issuer.publicKey.isValidSignature(certificate.signature, for: certificate) }
    }

    /// True from memory when `key` was remembered; otherwise `verify()`, remembered under `key` when it succeeds.
    /// Without a key the signature is verified and nothing is remembered.
    private func answer(_ key: Key?, _ verify: () -> Bool) -> Bool {
        if let key, self.entries.withLock({ $0.value(forKey: key) }) != nil { return true }
        self.verifications.withLock { $0 += 1 }
        guard verify() else { return false }
        if let key { self.entries.withLock { $0.insert((), forKey: key) } }
        return true
    }

    /// SHA-256 of the four inputs, each preceded by its length (so that no two different inputs are the same
    /// byte string).
    private static func key(
        signerKey: [UInt8],
        signedBytes: ArraySlice<UInt8>,
        algorithm: [UInt8],
        signature: ArraySlice<UInt8>
    ) -> Key {
        var hasher = SHA256()
        func add<Bytes: DataProtocol>(_ bytes: Bytes) {
            var length = UInt64(bytes.count).bigEndian
            withUnsafeBytes(of: &length) { hasher.update(bufferPointer: $0) }
            hasher.update(data: bytes)
        }
        add(signerKey)
        add(signedBytes)
        add(algorithm)
        add(signature)
        return Key(hasher.finalize())
    }
}

extension Certificate {
    /// The DER of the certificate's outer `signatureAlgorithm` and `signatureValue` (RFC 5280 4.1.1.2–3), cut out of
    /// its encoding, or nil when the encoding is not shaped that way.
    var signatureFieldsDER: (algorithm: ArraySlice<UInt8>, value: ArraySlice<UInt8>)? {
        let der = self.derBytes[...]
        guard let outer = Self.derElement(der, at: der.startIndex), outer.tag == 0x30, outer.end == der.endIndex,
            let tbs = Self.derElement(der, at: outer.contentStart), tbs.tag == 0x30,
            let algorithm = Self.derElement(der, at: tbs.end), algorithm.tag == 0x30,
            let value = Self.derElement(der, at: algorithm.end), value.tag == 0x03, value.end == outer.end
        else { return nil }
        return (der[tbs.end..<algorithm.end], der[algorithm.end..<value.end])
    }
}
