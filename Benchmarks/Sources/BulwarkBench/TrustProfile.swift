import Bulwark
import BulwarkTestSupport
import Foundation
import NIOSSL
import X509

/// `--profile-trust KIND --iterations N`: runs one piece of the handshake's trust path N times with no server and
/// no other work, for `perf record`, and prints the time per iteration (the minimum over 5 batches of N, after a
/// warm-up batch: the machine is shared, and the minimum is the least disturbed figure).
///
/// Kinds (`all` runs each in turn, batch by batch, in one process):
/// - `signatures`: the two ECDSA signature checks of the chain alone, with swift-crypto, as a yardstick;
/// - `convert`: the presented chain (as NIOSSL hands it to the callback) to swift-certificates `Certificate`s;
/// - `evaluate`, `evaluate-pinned`: `ServerTrustManager.evaluate` on the presented chain;
/// - `callback`, `callback-pinned`: both, as the TLS callback does;
/// - `evaluate-revocation`: `evaluate` with hard CRL checking of the leaf and the intermediate against loaded lists
///   (the `newconn-revocation` client's evaluator); its difference to `evaluate` is the cost of a warm check.
enum TrustProfile {
    static func run(kind: String, iterations: Int) async throws {
        let chain = try TestChain.make(host: "localhost")
        let root = chain.root.certificate
        let presented = chain.presentedChain
        let nioCertificates = try presented.map { try NIOSSLCertificate(bytes: $0.derBytes, format: .der) }
        let pinnedEvaluator = PublicKeysTrustEvaluator(
            pinSet: try PinSet([Pin.publicKey(of: chain.intermediate!.certificate), Pin.publicKey(of: root)]),
            roots: .custom([root])
        )
        let manager = try ServerTrustManager(evaluators: ["localhost": DefaultTrustEvaluator(roots: .custom([root]))])
        let pinnedManager = try ServerTrustManager(evaluators: ["localhost": pinnedEvaluator])
        let revocationManager = try ServerTrustManager(evaluators: [
            "localhost": try Self.revocationEvaluator(chain, base: DefaultTrustEvaluator(roots: .custom([root])))
        ])
        // `all`: every kind, interleaved batch by batch in this one process, so that their ratios hold even when
        // the machine's speed drifts (it does on this shared VM, by up to 40%).
        let kinds =
            kind == "all"
            ? ["signatures", "convert", "evaluate", "evaluate-pinned", "callback", "callback-pinned"]
            : kind == "all-cold"
                ? ["none-cold", "signatures-cold", "evaluate-cold", "evaluate-pinned-cold", "callback-pinned-cold"]
                : [kind]
        let managers = ["": manager, "-pinned": pinnedManager, "-revocation": revocationManager]
        var sink = 0
        var best = [String: Double]()
        for batch in 0..<6 {
            for kind in kinds {
                let start = nowNanos()
                sink &+= try await Self.batch(kind, iterations, nioCertificates, presented, root, managers)
                let perIteration = Double(nowNanos() - start) / Double(max(iterations, 1)) / 1000
                if batch > 0 { best[kind] = min(best[kind] ?? .infinity, perIteration) }
            }
        }
        blackHole(sink)
        for kind in kinds {
            let perIteration = format(best[kind]!, digits: 1)
            log("profile-trust \(kind): \(perIteration) µs per iteration (best of 5 × \(iterations))")
        }
    }

    private static func batch(
        _ kind: String,
        _ iterations: Int,
        _ nioCertificates: [NIOSSLCertificate],
        _ presented: [Certificate],
        _ root: Certificate,
        _ managers: [String: ServerTrustManager]
    ) async throws -> Int {
        var sink = 0
        // `-cold`: before each iteration, write 8 MiB (twice the L2 caches) as the rest of a handshake's work
        // would, so that the trust path runs with cold caches as it does in a real handshake.
        if kind.hasSuffix("-cold") {
            let plain = String(kind.dropLast("-cold".count))
            for _ in 0..<iterations {
                Self.thrash()
                sink &+= try await Self.batch(plain, 1, nioCertificates, presented, root, managers)
            }
            return sink
        }
        let manager = managers[["-pinned", "-revocation"].first { kind.hasSuffix($0) } ?? ""]!
        switch kind {
        case "none":
            // Nothing: with -cold, the cost of the cache thrashing alone, to subtract.
            break
        case "signatures":
            // The two signature checks any verifier must make (leaf by intermediate, intermediate by root).
            for _ in 0..<iterations {
                sink &+= presented[1].publicKey.isValidSignature(presented[0].signature, for: presented[0]) ? 1 : 0
                sink &+= root.publicKey.isValidSignature(presented[1].signature, for: presented[1]) ? 1 : 0
            }
        case "convert":
            for _ in 0..<iterations {
                sink &+= try nioCertificates.map { try Certificate(derEncoded: try $0.toDERBytes()) }.count
            }
        case "evaluate", "evaluate-pinned", "evaluate-revocation":
            for _ in 0..<iterations {
                sink &+= await manager.evaluate(presented, forHost: "localhost").isTrusted ? 1 : 0
            }
        case "callback", "callback-pinned":
            for _ in 0..<iterations {
                let converted = try nioCertificates.map { try Certificate(derEncoded: try $0.toDERBytes()) }
                sink &+= await manager.evaluate(converted, forHost: "localhost").isTrusted ? 1 : 0
            }
        default:
            throw BenchError("--profile-trust: unknown kind \(kind)")
        }
        return sink
    }

    /// Hard CRL checking after `base`, with current lists of the root and the intermediate loaded and the network
    /// disabled, as `Bench.revocationEvaluator()` builds it.
    private static func revocationEvaluator(
        _ chain: TestChain,
        base: any ServerTrustEvaluating
    ) throws -> any ServerTrustEvaluating {
        let store = RevocationStore()
        for issuer in [chain.root, chain.intermediate!] {
            let builder = CRLBuilder(
                issuer: issuer.certificate.subject,
                thisUpdate: Date() - 3_600,
                nextUpdate: Date() + 86_400
            )
            try store.load(crl: try builder.der(signedBy: issuer))
        }
        return .revocation(base, method: .crl, mode: .hard, store: store, networkAccessDisabled: true)
    }

    nonisolated(unsafe) private static var scratch = [UInt8](repeating: 0, count: 8 << 20)
    nonisolated(unsafe) private static var scratchRound: UInt8 = 0

    private static func thrash() {
        scratchRound &+= 1
        let value = scratchRound
        scratch.withUnsafeMutableBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                bytes[offset] = value
                offset += 64
            }
        }
    }
}
