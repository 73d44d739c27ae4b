import Bulwark
import BulwarkTestSupport
import Crypto
import Foundation

/// Certificate Transparency for the `newconn-ct` row (issue 40): two test logs with fixed keys (so that the server
/// and client processes of `--instructions` agree on them), and the benchmark chain's leaf issued with an SCT from each.
enum BenchTransparency {
    static let logs: [TestTransparencyLog] = [
        TestTransparencyLog(
            operatorName: "Bench Operator A",
            name: "Bench Log A",
            key: try! P256.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 0x11, count: 32))
        ),
        TestTransparencyLog(
            operatorName: "Bench Operator B",
            name: "Bench Log B",
            key: try! P256.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 0x22, count: 32))
        ),
    ]

    static let logList = CertificateTransparencyLogList(logs: Self.logs.map(\.log))

    /// The benchmark's chain for `localhost`, its leaf carrying an SCT from each log (valid 90 days: 2 SCTs needed).
    static func chain() throws -> TestChain {
        let base = try TestChain.make(host: "localhost")
        let intermediate = base.intermediate!
        let leaf = try TestTransparencyLog.issue(
            TestTransparencyLog.leafBlueprint(host: "localhost", lifetime: 90 * 86_400),
            issuer: intermediate,
            logs: Self.logs,
            at: Date() - 600
        )
        return TestChain(
            root: base.root,
            intermediate: intermediate,
            leaf: leaf,
            presentedChain: [leaf.certificate, intermediate.certificate]
        )
    }

    /// `base` with Chrome's CT rule enforced against the two logs.
    static func enforcing(_ base: any ServerTrustEvaluating) -> any ServerTrustEvaluating {
        CertificateTransparencyTrustEvaluator(base, logs: Self.logList, mode: .enforce)
    }
}
