import Crypto
import X509
import _CryptoExtras

/// The key types the certificate factory can generate.
public enum TestKeyAlgorithm: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// ECDSA on P-256.
    case p256
    /// ECDSA on P-384.
    case p384
    /// RSA with a 2048-bit modulus.
    case rsa2048

    /// A fresh private key of this type.
    public func makePrivateKey() throws -> Certificate.PrivateKey {
        switch self {
        case .p256: return Certificate.PrivateKey(P256.Signing.PrivateKey())
        case .p384: return Certificate.PrivateKey(P384.Signing.PrivateKey())
        case .rsa2048: return Certificate.PrivateKey(try _RSA.Signing.PrivateKey(keySize: .bits2048))
        }
    }

    /// `P-256`, `P-384` or `RSA-2048`.
    public var description: String {
        switch self {
        case .p256: return "P-256"
        case .p384: return "P-384"
        case .rsa2048: return "RSA-2048"
        }
    }
}
