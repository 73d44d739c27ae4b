import Foundation
import X509

/// Revocation lists a client consults, by issuer: loaded by the application (for fleets without network access to
/// the distribution points) and shared by every connection of the clients that use it.
///
/// The store keeps the newest list of each issuer (by `thisUpdate`), for at most ``capacity`` issuers (the least
/// recently used is forgotten first). It does no I/O: load lists from bytes you read.
public final class RevocationStore: Sendable {
    /// How many issuers' lists are kept at most.
    public let capacity: Int
    private let lists: LockedValue<LeastRecentlyUsed<DistinguishedName, CertificateRevocationList>>

    /// An empty store keeping the lists of at most `capacity` issuers.
    public init(capacity: Int = 1_024) {
        self.capacity = capacity
        self.lists = LockedValue(LeastRecentlyUsed(capacity: capacity))
    }

    /// Adds a parsed list; an older list of the same issuer is replaced, a list older than the one kept is ignored.
    public func load(_ list: CertificateRevocationList) {
        self.lists.withLock { lists in
            if let kept = lists.value(forKey: list.issuer), kept.thisUpdate > list.thisUpdate { return }
            lists.insert(list, forKey: list.issuer)
        }
    }

    /// Parses and adds a list from its DER bytes or a PEM `X509 CRL` block.
    ///
    /// - Throws: ``RevocationError`` when the bytes are not a list Bulwark can use (the store is unchanged).
    public func load(
        crl bytes: [UInt8],
        maximumSize: Int = CertificateRevocationList.defaultMaximumSize
    )
        throws(RevocationError)
    {
        if bytes.first == 0x30 {
            self.load(try CertificateRevocationList(derEncoded: bytes, maximumSize: maximumSize))
        } else {
            let text = String(decoding: bytes, as: UTF8.self)
            self.load(try CertificateRevocationList(pemEncoded: text, maximumSize: maximumSize))
        }
    }

    /// The list kept for `issuer`, if any.
    public func list(issuedBy issuer: DistinguishedName) -> CertificateRevocationList? {
        self.lists.withLock { $0.value(forKey: issuer) }
    }

    /// The number of issuers with a list.
    public var count: Int { self.lists.withLock { $0.count } }
}
