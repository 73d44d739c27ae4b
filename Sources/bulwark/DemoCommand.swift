import ArgumentParser
import Bulwark
import BulwarkTestSupport
import Foundation

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Show, on this machine only, that a pinned policy refuses a man-in-the-middle.",
        discussion: """
            The demo generates a certificate authority, starts HTTPS servers on 127.0.0.1 and sends real requests \
            with a client that pins the intermediate's public key plus a backup key. It shows four steps: the \
            genuine server is trusted; an intercepting server with a forged certificate for the same name, from a \
            CA the device was told to trust (what Charles or mitmproxy need), is refused before any request byte \
            reaches it; the server rotates to the backup key and is trusted; a host the policy does not list is \
            refused. It uses no network beyond loopback. The exit status is 0 only if every step behaved.
            """
    )

    static let host = "api.bulwark.test"

    @OptionGroup var eventLog: EventLogOptions

    func run() async throws {
        let host = Self.host
        print("Bulwark demo: a pinned HTTPS client against local servers (127.0.0.1 only)\n")
        let genuine = try TestChain.make(host: host)
        let backupIntermediate = try CertificateFactory.issueIntermediate(
            from: genuine.root,
            commonName: "Backup Intermediate CA"
        )
        let pins = try PinSet([
            Pin.publicKey(of: genuine.intermediate!.certificate), Pin.publicKey(of: backupIntermediate.certificate),
        ])
        let server = try await TestHTTPSServer.start(configuration: .init(chain: genuine))
        let interceptor = try await TestHTTPSServer.startInterceptor(forging: host)
        let rotatedLeaf = try CertificateFactory.issueLeaf(from: backupIntermediate, commonName: host, dnsNames: [host])
        let rotated = try await TestHTTPSServer.start(
            configuration: .init(
                chain: [rotatedLeaf.certificate, backupIntermediate.certificate],
                privateKey: rotatedLeaf.privateKey
            )
        )
        // The device trusts the genuine root and, because the user installed it, the interceptor's root too.
        var roots = [genuine.root.certificate]
        if let forgedRoot = interceptor.forgedRoot { roots.append(forgedRoot) }
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: [host: .publicKeys(pins, roots: .custom(roots))])
        )
        if let monitor = try self.eventLog.monitor() { configuration.eventMonitor = monitor }
        print("Policy for \(host): public-key pins (intermediate, backup); every other host is refused")
        for pin in pins.pins { print("  \(pin)") }
        print("")

        var ok = true
        for (step, title, target, expectTrusted) in [
            (1, "Genuine server", server, true),
            (2, "Man-in-the-middle: a forged certificate from a CA the device trusts", interceptor, false),
            (3, "Key rotation: the server now uses the backup intermediate", rotated, true),
        ] {
            print("\(step). \(title) (127.0.0.1:\(target.port))")
            configuration.resolveOverrides[.init(host: host, port: target.port)] = "127.0.0.1"
            let client = BulwarkClient(configuration: configuration)
            ok =
                await Self.request(client, url: "https://\(host):\(target.port)/hello", expectTrusted: expectTrusted)
                && ok
            if !expectTrusted {
                let bytes = target.receivedApplicationBytes
                print("   request bytes that reached the interceptor: \(bytes)")
                ok = ok && bytes == 0
            }
            await client.shutdown()
            print("")
        }
        print("4. A host the policy does not list (other.bulwark.test → 127.0.0.1:\(server.port))")
        configuration.resolveOverrides[.init(host: "other.bulwark.test", port: server.port)] = "127.0.0.1"
        let client = BulwarkClient(configuration: configuration)
        ok =
            await Self.request(client, url: "https://other.bulwark.test:\(server.port)/hello", expectTrusted: false)
            && ok
        await client.shutdown()
        print("")

        for target in [server, interceptor, rotated] { try await target.shutdown() }
        print(ok ? "demo: every step behaved as expected" : "demo: FAILED, a step did not behave as expected")
        if !ok { throw ExitCode(1) }
    }

    static func request(_ client: BulwarkClient, url: String, expectTrusted: Bool) async -> Bool {
        var trusted = false
        do {
            let response = try await client.execute(BulwarkRequest(url: url), timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 1 << 20)
            trusted = true
            let version = response.httpVersion.alpnIdentifier
            print("   \(version) \(response.status.code) \"\(String(buffer: body))\"; verified chain:")
            for certificate in response.serverTrust?.trustedChain?.certificates ?? [] {
                print("     \(CertificateSummary(certificate).pinLine)")
            }
        } catch let error as BulwarkError where error.code == .trustRefused {
            print("   refused in the TLS handshake:")
            print(
                String(describing: error.trustRefusal!).split(separator: "\n").map { "     " + $0 }.joined(
                    separator: "\n"
                )
            )
        } catch {
            print("   failed: \(error)")
            return false
        }
        let behaved = trusted == expectTrusted
        print(behaved ? "   ✓ as expected" : "   ✗ NOT as expected")
        return behaved
    }
}
