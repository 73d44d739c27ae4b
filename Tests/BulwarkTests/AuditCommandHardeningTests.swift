import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing

// `bulwark audit` and `bulwark inspect` read their proxy options as `fetch` does: a --proxy-cacert that the policy
// file's proxy section would silently override is refused.
@Suite("Audit and inspect proxy options", .tags(.externalPeers))
struct AuditCommandHardeningTests {
    @Test("--proxy-cacert with a policy that sets the proxy is refused by audit and inspect, as by fetch")
    func proxyCACertificateWithAPolicyProxy() async throws {
        let chain = try TestChain.make(host: "localhost")
        let proxyCA = try CLI.write(chain.root.certificatePEM, name: "proxy-ca.pem")
        let policy = try CLI.write(
            """
            {
              "format": "bulwark-policy/1",
              "hosts": {},
              "proxy": { "use": "https://127.0.0.1:1" }
            }
            """,
            name: "policy.json"
        )
        for command in ["audit", "inspect"] {
            let result = try await CLI.run([command, "localhost:1", "--policy", policy, "--proxy-cacert", proxyCA])
            #expect(result.status == 64 || result.status == 2, "\(command): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("--proxy-cacert"), "\(command): \(result.stderr)")
        }
    }
}
