import NIOConcurrencyHelpers
import X509

/// The certificates a client has parsed, by their exact DER bytes: a server presents the same leaf and
/// intermediates on every connection, and parsing one (swift-certificates' `Certificate(derEncoded:)`, with its
/// public key) costs about 25 µs.
///
/// Only the decoding is reused: a `Certificate` is a pure function of its bytes, and every handshake still gets the
/// full evaluation (path building, every signature, policy, pins, host name). Bounded: at most `capacity`
/// certificates of at most `maximumBytes` each; the least recently used one is evicted first. Certificates that do
/// not parse are not remembered.
final class CertificateParseCache: Sendable {
    /// DER bytes, hashed as one block (an array of bytes would be hashed byte by byte).
    private struct DER: Hashable {
        let bytes: [UInt8]

        func hash(into hasher: inout Hasher) {
            self.bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    private struct State {
        var entries: [DER: (certificate: Certificate, lastUse: UInt64)] = [:]
        var tick: UInt64 = 0
    }

    let capacity: Int
    let maximumBytes: Int
    private let state = NIOLockedValueBox(State())

    init(capacity: Int = 64, maximumBytes: Int = 16 * 1024) {
        self.capacity = capacity
        self.maximumBytes = maximumBytes
    }

    /// The number of remembered certificates.
    var count: Int { self.state.withLockedValue { $0.entries.count } }

    /// `Certificate(derEncoded: der)`, from memory when these exact bytes were parsed before.
    func certificate(derEncoded der: [UInt8]) throws -> Certificate {
        guard self.capacity > 0, der.count <= self.maximumBytes else {
            return try Certificate(derEncoded: der)
        }
        let key = DER(bytes: der)
        let remembered: Certificate? = self.state.withLockedValue { state in
            // One lookup (one hash of the bytes); the use is recorded in place.
            guard let index = state.entries.index(forKey: key) else { return nil }
            state.tick += 1
            state.entries.values[index].lastUse = state.tick
            return state.entries.values[index].certificate
        }
        if let remembered { return remembered }
        let certificate = try Certificate(derEncoded: der)
        self.state.withLockedValue { state in
            if state.entries[key] == nil, state.entries.count >= self.capacity,
                let oldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key
            {
                state.entries[oldest] = nil
            }
            state.tick += 1
            state.entries[key] = (certificate, state.tick)
        }
        return certificate
    }
}
