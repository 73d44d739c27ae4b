import ArgumentParser
import BulwarkPolicy
import BulwarkTestSupport
import Foundation

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Show, on this machine only, that a pinned policy refuses a man-in-the-middle.",
        discussion: """
            The demo generates a certificate authority and a server chain in memory, pins the intermediate's \
            public key with a backup pin, then shows three steps: the genuine chain is trusted, a forged chain \
            for the same name (what Charles or mitmproxy present) is refused with the pin-failure message, and a \
            rotation to the backup key is trusted. It uses no network. The exit status is 0 only if every step \
            behaved as expected.
            """
    )

    func run() async throws {
        var ok = true
        let host = "api.bulwark.test"
        print("Bulwark demo (trust engine only: TLS connections arrive with the HTTPS client)")
        print("")
        let genuine = try TestChain.make(host: host)
        let backupKey = try CertificateFactory.issueIntermediate(from: genuine.root, commonName: "Backup Intermediate CA")
        let pins = try PinSet([Pin.publicKey(of: genuine.intermediate!.certificate), Pin.publicKey(of: backupKey.certificate)])
        let manager = try ServerTrustManager(evaluators: [
            host: .publicKeys(pins, roots: .custom([genuine.root.certificate]))
        ])
        print("Policy for \(host): public-key pins on the intermediate")
        for pin in pins.pins { print("  \(pin)") }
        print("")

        print("1. Genuine server chain")
        ok = Self.report(await manager.evaluate(genuine.presentedChain, forHost: host), expectTrusted: true) && ok

        print("2. Man-in-the-middle: a forged chain for \(host) from a CA the device was told to trust")
        let forged = try TestChain.make(host: host)
        let interceptingManager = try ServerTrustManager(evaluators: [
            host: .publicKeys(pins, roots: .custom([genuine.root.certificate, forged.root.certificate]))
        ])
        ok = Self.report(await interceptingManager.evaluate(forged.presentedChain, forHost: host), expectTrusted: false) && ok

        print("3. Key rotation: the server moves to the backup intermediate key")
        let rotatedLeaf = try CertificateFactory.issueLeaf(from: backupKey, commonName: host, dnsNames: [host])
        ok = Self.report(
            await manager.evaluate([rotatedLeaf.certificate, backupKey.certificate], forHost: host),
            expectTrusted: true
        ) && ok

        print("4. A host the policy does not list")
        ok = Self.report(await manager.evaluate(genuine.presentedChain, forHost: "other.bulwark.test"), expectTrusted: false) && ok

        print(ok ? "demo: every step behaved as expected" : "demo: FAILED, a step did not behave as expected")
        if !ok { throw ExitCode(1) }
    }

    static func report(_ decision: TrustDecision, expectTrusted: Bool) -> Bool {
        switch decision {
        case .trusted(let chain):
            print("   trusted; verified chain:")
            for certificate in chain.certificates {
                print("     \(CertificateSummary(certificate).pinLine)")
            }
        case .refused(let refusal):
            print("   refused:")
            print(String(describing: refusal).split(separator: "\n").map { "     " + $0 }.joined(separator: "\n"))
        }
        let behaved = decision.isTrusted == expectTrusted
        print(behaved ? "   ✓ as expected\n" : "   ✗ NOT as expected\n")
        return behaved
    }
}
