import Crypto
import Foundation

/// SCT signatures verified before, remembered by the SHA-256 of everything the verdict depends on (the SCT, the
/// rebuilt TBSCertificate, the issuer key hash and the log key): a signature check is a pure function of those
/// bytes, and a server presents the same certificate on every handshake. Only successes are kept, at most
/// ``capacity``, the oldest forgotten first.
final class CTSignatureMemo: Sendable {
    static let shared = CTSignatureMemo()
    static let capacity = 1_024

    private let verified = LockedValue<(keys: Set<[UInt8]>, order: [[UInt8]])>((Set(), []))

    func verify(_ sct: SignedCertificateTimestamp, tbs: [UInt8], issuerKeyHash: [UInt8], logKey: [UInt8]) -> Bool {
        var hasher = SHA256()
        for part in [sct.signature, sct.logID, sct.extensions, tbs, issuerKeyHash, logKey] {
            hasher.update(data: [
                UInt8(truncatingIfNeeded: part.count >> 24), UInt8(truncatingIfNeeded: part.count >> 16),
                UInt8(truncatingIfNeeded: part.count >> 8), UInt8(truncatingIfNeeded: part.count),
            ])
            hasher.update(data: part)
        }
        hasher.update(data: [sct.hashAlgorithm, sct.signatureAlgorithm])
        for shift in stride(from: 56, through: 0, by: -8) {
            hasher.update(data: [UInt8(truncatingIfNeeded: sct.timestamp >> UInt64(shift))])
        }
        let key = Array(hasher.finalize())
        if self.verified.withLock({ $0.keys.contains(key) }) { return true }
        guard sct.isSigned(forTBSCertificate: tbs, issuerKeyHash: issuerKeyHash, logKey: logKey) else { return false }
        self.verified.withLock { state in
            guard state.keys.insert(key).inserted else { return }
            state.order.append(key)
            if state.order.count > Self.capacity { state.keys.remove(state.order.removeFirst()) }
        }
        return true
    }
}
