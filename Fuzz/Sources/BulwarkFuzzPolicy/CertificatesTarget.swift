import BulwarkPolicy
import Foundation
import SwiftASN1
import X509

/// PEM and DER certificate loading, and whole-chain evaluation by ``DefaultTrustEvaluator`` of chains made from
/// real certificates (Tools/make-certificate-seeds.sh), mutated, reordered, duplicated and mixed.
///
/// Input: a mode byte, then either (bit 0 set) a PEM or DER file for ``CertificateLoader``, or records of a 2-byte
/// big-endian length and that many bytes, each loaded as a DER certificate, where a 1-byte record instead picks a
/// certificate of the pool. Bits 1-2 of the mode pick the host, bits 3-4 the time. Oracles: every certificate the
/// loader returns re-encodes to DER that loads as the same certificate; a trusted verdict carries a path that starts
/// with the presented leaf, ends in the anchor, and in which each certificate names the next as its issuer.
enum CertificatesTarget {
    static let pool: [Certificate] = certificatePoolPEM.map { pem in
        try! CertificateLoader.certificates(fromPEM: pem, source: "pool")[0]
    }
    static let anchor = pool[0]
    static let evaluator = DefaultTrustEvaluator(roots: .custom([anchor]))
    static let hosts = ["example.com", "www.example.com", "localhost", "127.0.0.1"]
    static let times: [Date] = {
        let valid = pool[2].notValidBefore.addingTimeInterval(86_400)
        return [valid, valid.addingTimeInterval(4 * 365 * 86_400), valid.addingTimeInterval(-10 * 86_400), valid]
    }()

    static func run(_ input: FuzzInput) {
        var input = input
        let mode = input.byte()
        let host = self.hosts[Int(mode >> 1) % 4]
        let time = self.times[Int(mode >> 3) % 4]
        var chain: [Certificate] = []
        if mode & 1 == 1 {
            chain = self.load(Array(input.rest))
        } else {
            var rest = input.rest
            while rest.count >= 2, chain.count < 12 {
                let length = Int(rest[rest.startIndex]) << 8 | Int(rest[rest.startIndex + 1])
                rest = rest.dropFirst(2)
                let record = Array(rest.prefix(length))
                rest = rest.dropFirst(length)
                if record.count == 1 {
                    chain.append(self.pool[Int(record[0]) % self.pool.count])
                } else {
                    chain += self.load(record)
                }
            }
        }
        guard !chain.isEmpty else { return }
        let presented = chain
        let decision = blocking { await evaluator.evaluate(presented, forHost: host, at: time) }
        trace("\(presented.count) certificates for \(host): \(decision.refusal?.shortDescription ?? "trusted")")
        guard let trusted = decision.trustedChain else {
            _ = decision.refusal?.description  // the refusal's text is built from the presented chain
            return
        }
        let path = trusted.certificates
        guard let first = path.first, let last = path.last else {
            violated("trusted path is not empty", "host \(host)")
        }
        if first != presented[0] {
            violated("trusted path starts with the presented leaf", "\(first.subject) vs \(presented[0].subject)")
        }
        if last != self.anchor {
            violated("trusted path ends in an anchor", "\(last.subject)")
        }
        for (certificate, issuer) in zip(path, path.dropFirst()) where certificate.issuer != issuer.subject {
            violated("trusted path is linked by names", "\(certificate.subject) not issued by \(issuer.subject)")
        }
    }

    /// The certificates `bytes` load as, each checked to survive a DER round trip; none when loading fails (which
    /// is typed: ``CertificateLoadingError``).
    static func load(_ bytes: [UInt8]) -> [Certificate] {
        let loaded: [Certificate]
        do {
            loaded = try CertificateLoader.certificates(from: bytes, source: "fuzz")
        } catch {
            _ = error.description
            return []
        }
        for certificate in loaded {
            var serializer = DER.Serializer()
            do {
                try serializer.serialize(certificate)
                let again = try Certificate(derEncoded: serializer.serializedBytes)
                if again != certificate {
                    violated("certificate DER round trip", "\(certificate.subject) re-encoded differently")
                }
            } catch {
                violated("loaded certificate re-encodes", "\(certificate.subject): \(error)")
            }
        }
        return loaded
    }
}

/// Runs `body` to completion from synchronous code (the libFuzzer callback).
func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let result = BlockingResult<T>()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        result.value = await body()
        done.signal()
    }
    done.wait()
    return result.value!
}

/// Where ``blocking(_:)`` leaves the task's value; written before the semaphore is signalled, read after.
private final class BlockingResult<T>: @unchecked Sendable {
    var value: T?
}
