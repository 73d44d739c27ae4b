import BulwarkPolicy
import Foundation
import X509

/// The certificates a client has parsed, by their exact DER bytes: a server presents the same leaf and
/// intermediates on every connection, and parsing one (swift-certificates' `Certificate(derEncoded:)`, with its
/// public key) costs about 25 µs.
///
/// Only the decoding is reused: a `Certificate` is a pure function of its bytes, and every handshake still gets the
/// full evaluation (path building, every signature, policy, pins, host name). Bounded: at most `capacity`
/// certificates of at most `maximumBytes` each; the least recently used one is evicted first. Certificates that do
/// not parse are not remembered. Keys are ``CertificateBytesKey``s of the DER bytes (every byte hashed); a chain
/// seen before is found without them (``chain(derEncoded:)``).
final class CertificateParseCache: Sendable {
    let capacity: Int
    let maximumBytes: Int
    private let entries: LockedValue<LeastRecentlyUsed<CertificateBytesKey, Certificate>>
    /// The chains whose every certificate parsed, with their DER bytes, most recent last (see ``chain(derEncoded:)``).
    private let chains = LockedValue<[ParsedChain]>([])

    /// A chain kept whole: the DER bytes of its certificates and the certificates parsed from them.
    private struct ParsedChain: Sendable {
        let der: [[UInt8]]
        let certificates: [Certificate]
    }
    /// The most chains kept whole, and the most certificates in a chain kept whole.
    static let chainCapacity = 8
    static let maximumChainLength = 10

    init(capacity: Int = 64, maximumBytes: Int = 16 * 1024) {
        self.capacity = capacity
        self.maximumBytes = maximumBytes
        self.entries = LockedValue(LeastRecentlyUsed(capacity: capacity))
    }

    /// The number of chains kept whole.
    var chainCount: Int { self.chains.withLock { $0.count } }

    /// The certificates of a chain whose DER bytes are exactly `der` (the same certificates, in the same order,
    /// byte for byte), when such a chain was parsed whole before (``rememberChain(_:derEncoded:)``); nil otherwise.
    ///
    /// A server presents the same chain on every connection: one comparison of the bytes against a remembered
    /// chain replaces a lookup per certificate, a copy of each parsed certificate out of the cache (two dozen
    /// references retained) and the building of the array.
    func chain(derEncoded der: [[UInt8]]) -> [Certificate]? {
        guard self.capacity > 0 else { return nil }
        return self.chains.withLock { chains in
            for index in chains.indices.reversed() where Self.sameBytes(chains[index].der, der) {
                return chains[index].certificates
            }
            return nil
        }
    }

    /// Remembers `certificates`, each parsed from the bytes of `der` at the same index, as one chain. Only a chain
    /// whose every certificate parsed is remembered; the oldest chain is forgotten first.
    func rememberChain(_ certificates: [Certificate], derEncoded der: [[UInt8]]) {
        guard self.capacity > 0, certificates.count == der.count, !der.isEmpty,
            der.count <= Self.maximumChainLength, der.allSatisfy({ $0.count <= self.maximumBytes })
        else { return }
        self.chains.withLock { chains in
            guard !chains.contains(where: { Self.sameBytes($0.der, der) }) else { return }
            if chains.count >= Self.chainCapacity { chains.removeFirst() }
            chains.append(ParsedChain(der: der, certificates: certificates))
        }
    }

    /// Whether two lists of DER certificates are the same, byte for byte (`memcmp`: `Array`'s `==` compares byte
    /// by byte in a loop).
    private static func sameBytes(_ left: [[UInt8]], _ right: [[UInt8]]) -> Bool {
        guard left.count == right.count else { return false }
        for index in left.indices {
            let same = left[index].withUnsafeBytes { left in
                right[index].withUnsafeBytes { right in
                    left.count == right.count
                        && (left.count == 0 || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0)
                }
            }
            guard same else { return false }
        }
        return true
    }

    /// The number of remembered certificates.
    var count: Int { self.entries.withLock { $0.count } }

    /// `Certificate(derEncoded: der)`, from memory when these exact bytes were parsed before.
    func certificate(derEncoded der: [UInt8]) throws -> Certificate {
        guard self.capacity > 0, der.count <= self.maximumBytes else {
            return try Certificate(derEncoded: der)
        }
        let key = CertificateBytesKey(der[...])
        if let remembered = self.entries.withLock({ $0.value(forKey: key) }) {
            return remembered
        }
        let certificate = try Certificate(derEncoded: der)
        self.entries.withLock { $0.insert(certificate, forKey: key) }
        return certificate
    }
}
