import Foundation
import X509

extension RevocationStore {
    /// The lists loaded for one issuer name: every list that can be told apart by the key that signs it and by the
    /// certificates it covers (its issuing distribution point), at most ``capacity``. None is trusted when loaded:
    /// each is verified when used, with the issuer of the certificate being checked
    /// (``RevocationStore/status(of:issuer:at:clockSkew:)``).
    ///
    /// So a list whose signature no issuer's key verifies (a forgery, however late its `thisUpdate`) never hides one
    /// that verifies, partitioned lists of one CA (one per distribution point) do not evict each other, and neither
    /// do the lists of two CAs that share a name but not a key.
    struct LoadedLists: Sendable {
        /// The number of lists of one issuer name beyond which superseded lists and lists no key verifies are
        /// forgotten.
        static let capacity = 16
        /// The most lists kept for one issuer name: up to this many, no list is forgotten that might be the one an
        /// issuer's key verifies, so loading forged lists ahead of a genuine one cannot push the genuine one out.
        static let untriedCapacity = 64

        /// The lists, in the order they were loaded.
        private(set) var lists: [CertificateRevocationList] = []

        /// Adds `list`, unless the same list is already kept. Beyond ``capacity``, a list is forgotten if one can go
        /// without loss: one that a newer list of the same key and scope supersedes, else one that some issuer's key
        /// was tried on and none verified (a forgery, or a list of another CA of the name). Beyond
        /// ``untriedCapacity``, the earliest loaded list no key has verified yet goes, else the verified list with
        /// the oldest `thisUpdate`.
        mutating func insert(_ list: CertificateRevocationList) {
            guard !self.lists.contains(where: { $0.signature == list.signature && $0.signedBytes == list.signedBytes })
            else { return }
            self.lists.append(list)
            guard self.lists.count > Self.capacity, let index = self.evictionIndex() else { return }
            self.lists.remove(at: index)
        }

        private func evictionIndex() -> Int? {
            let verifiers = self.lists.map(\.verifiedBy)
            for index in self.lists.indices where !verifiers[index].isEmpty {
                let list = self.lists[index]
                let superseded = self.lists.indices.contains { other in
                    other != index && self.lists[other].scope == list.scope
                        && self.lists[other].thisUpdate > list.thisUpdate
                        && verifiers[other].contains { verifiers[index].contains($0) }
                }
                if superseded { return index }
            }
            if let failed = self.lists.firstIndex(where: \.failedEveryVerification) { return failed }
            guard self.lists.count > Self.untriedCapacity else { return nil }
            if let untried = verifiers.firstIndex(where: \.isEmpty) { return untried }
            return self.lists.indices.min { self.lists[$0].thisUpdate < self.lists[$1].thisUpdate }
        }

        /// The answer of the newest list that verifies with `issuer`'s key, is current and covers `certificate`; else
        /// why none does (the newest verified list's reason when one verified, else the newest list's).
        func status(
            of certificate: Certificate,
            issuer: Certificate,
            at time: Date,
            clockSkew: TimeInterval
        ) -> Result<RevocationStatus, RevocationError> {
            var unsigned: RevocationError?
            var signed: RevocationError?
            // One list per issuer, the usual case, is checked without sorting (a warm check allocates nothing more).
            let newestFirst =
                self.lists.count == 1 ? self.lists : self.lists.sorted(by: { $0.thisUpdate > $1.thisUpdate })
            // A newer list that verified, is current and covers the certificate but names delta lists (which are not
            // read) leaves older lists only "revoked" to say: their "good" is older than what the deltas may say.
            var deltas: RevocationError?
            for list in newestFirst {
                do {
                    let status = try list.status(of: certificate, issuer: issuer, at: time, clockSkew: clockSkew)
                    if deltas != nil, status.revocation == nil { continue }
                    return .success(status)
                } catch {
                    if error.code == "delta_crls_unsupported", deltas == nil { deltas = error }
                    if unsigned == nil { unsigned = error }
                    if signed == nil, list.isSigned(by: issuer) { signed = error }
                }
            }
            return .failure(signed ?? unsigned ?? .missingNextUpdate)
        }
    }
}
