import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing
import X509

// `bulwark audit URL --proxy URL` and `bulwark inspect URL --proxy URL` against real proxies: mitmproxy in its
// regular (forward) mode intercepts, squid tunnels. The environment's proxy variables are cleared for every run.

@Suite("bulwark audit and inspect through proxies", .serialized, .tags(.externalPeers))
struct AuditCommandTests {
    let chain = InteropChain.shared

    static func run(_ arguments: [String]) async throws -> CLI.Result {
        try await ProxyCLITests.run(arguments)
    }

    /// The lines `audit` prints for one presented certificate.
    static func lines(_ summary: CertificateSummary, index: Int) -> [String] {
        [
            "  [\(index)] \(summary.subject)",
            "      issuer:     \(summary.issuer)",
            "      key pin:    \(summary.publicKeyPin)",
            "      sha256:     \(summary.certificatePin.fingerprint)",
        ]
    }

    /// nginx's chain as it presents it: the leaf and the intermediate.
    var originLines: [String] {
        [self.chain.leaf.certificate, self.chain.intermediate!.certificate].enumerated().flatMap {
            Self.lines(CertificateSummary($0.element), index: $0.offset)
        }
    }

    /// A policy file for `localhost`: the default evaluator under `roots`, or pins of the genuine chain.
    func policy(roots: [String], pinned: Bool, in directory: URL) throws -> String {
        let certificates = roots.map { "{ \"pem\": \(ProxyInteropTests.jsonString($0)) }" }.joined(separator: ", ")
        let pins = [
            Pin.publicKey(of: self.chain.intermediate!.certificate), Pin.publicKey(of: self.chain.root.certificate),
        ]
        let evaluator =
            pinned
            ? "\"evaluator\": \"publicKeys\", \"pins\": [\"\(pins[0])\", \"\(pins[1])\"],"
            : "\"evaluator\": \"default\","
        let text = """
            {
              "format": "bulwark-policy/1",
              "hosts": {
                "localhost": {
                  \(evaluator)
                  "roots": { "system": false, "certificates": [\(certificates)] }
                }
              }
            }
            """
        let path = directory.appending(path: "policy-\(pinned ? "pinned" : "default")-\(roots.count).json").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("audit through mitmproxy: refused by default, INTERCEPTION ACCEPTED with its CA trusted, refused when pinned")
    func auditThroughMitmproxy() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let mitm = try await MitmproxyServer.start(mode: .regular)
        defer { mitm.stop() }
        let directory = try ExternalPeers.makeDirectory("audit-policy")
        defer { try? FileManager.default.removeItem(at: directory) }
        let mitmCA = try mitm.caCertificate()
        let mitmPEM = try String(contentsOfFile: mitm.caCertificatePEMPath, encoding: .utf8)
        let target = "https://localhost:\(nginx.port)/hello"
        let proxy = "http://127.0.0.1:\(mitm.port)"
        let header =
            "Audit of localhost:\(nginx.port) through the proxy at \(proxy) (TLS handshakes only, no HTTP request)"

        // The default policy (the system roots): mitmproxy's chain is refused; so is nginx's private one, directly.
        let byDefault = try await Self.run(["audit", target, "--proxy", proxy])
        #expect(byDefault.status == 0, "\(byDefault.stdout)\(byDefault.stderr)")
        let lines = byDefault.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first == header)
        #expect(lines.dropFirst().first == "Through the proxy: refused by the policy")
        // The proxy's leaf, issued by mitmproxy's CA, then that CA.
        let intercepted = lines.dropFirst(2).prefix(4)
        #expect(intercepted.dropFirst().first == "      issuer:     \(CertificateSummary(mitmCA).subject)", "\(lines)")
        #expect(!byDefault.stdout.contains("Directly: trusted"))
        let directStart = try #require(lines.firstIndex(of: "Directly: refused by the policy"), "\(lines)")
        #expect(Array(lines[(directStart + 1)...].prefix(8)) == self.originLines, "\(lines)")
        let verdict = try #require(lines.first { $0.hasPrefix("Verdict: ") })
        #expect(
            verdict.hasPrefix(
                "Verdict: interception refused: the proxy presented its own certificate for localhost:\(nginx.port) ("
            ),
            "\(verdict)"
        )
        #expect(
            verdict.hasSuffix(
                "not the origin's, and the policy refused it (trust_refused: untrusted_chain); "
                    + "nothing is sent on this path"
            ),
            "\(verdict)"
        )
        #expect(lines.last == "")

        // A policy that trusts mitmproxy's CA, no pin: the interception is accepted, and audit says so with 1.
        let trusting = try self.policy(roots: [mitmPEM, self.chain.root.certificatePEM], pinned: false, in: directory)
        let accepted = try await Self.run(["audit", target, "--proxy", proxy, "--policy", trusting])
        #expect(accepted.status == 1, "\(accepted.stdout)\(accepted.stderr)")
        #expect(accepted.stdout.contains("Through the proxy: trusted\n"), "\(accepted.stdout)")
        #expect(accepted.stdout.contains("Directly: trusted\n" + self.originLines.joined(separator: "\n")))
        #expect(
            accepted.stdout.contains(
                "Verdict: INTERCEPTION ACCEPTED: the proxy presented its own certificate for localhost:\(nginx.port)"
            ),
            "\(accepted.stdout)"
        )
        #expect(
            accepted.stdout.hasSuffix(
                "the policy trusted it; the proxy can read and change every request on this path. Pin the origin's keys "
                    + "(bulwark inspect localhost:\(nginx.port) prints them) so that only they are trusted\n"
            )
        )

        // The same CA trusted, and the origin's keys pinned: refused again, by the pins.
        let pinnedPolicy = try self.policy(
            roots: [mitmPEM, self.chain.root.certificatePEM],
            pinned: true,
            in: directory
        )
        let pinned = try await Self.run(["audit", target, "--proxy", proxy, "--policy", pinnedPolicy])
        #expect(pinned.status == 0, "\(pinned.stdout)\(pinned.stderr)")
        #expect(pinned.stdout.contains("Directly: trusted\n"))
        #expect(
            pinned.stdout.contains("(trust_refused: pin_mismatch); nothing is sent on this path\n"),
            "\(pinned.stdout)"
        )

        // Handshakes only: mitmproxy saw TLS hellos and never a request, in any of the three runs.
        #expect(mitm.requestsSeen.isEmpty, "\(mitm.requestsSeen)")
        #expect(try await mitm.savedFlows().isEmpty)
        #expect(nginx.accessLog().isEmpty)
    }

    @Test("audit through squid: tunnelled, the origin's own chain; a proxy that is down: exit 3 naming the proxy")
    func auditThroughSquid() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let squid = try await SquidProxy.start()
        defer { squid.stop() }
        let root = try CLI.write(self.chain.root.certificatePEM, name: "root.pem")
        let user = try CLI.write("\(SquidProxy.username):\(SquidProxy.password)\n", name: "proxy-user")
        defer { for path in [root, user] { try? FileManager.default.removeItem(atPath: path) } }
        let proxy = "http://127.0.0.1:\(squid.port)"

        let tunnelled = try await Self.run([
            "audit", "localhost:\(nginx.port)", "--proxy", proxy, "--proxy-user-file", user, "--ca", root,
        ])
        #expect(tunnelled.status == 0, "\(tunnelled.stdout)\(tunnelled.stderr)")
        let leaf = CertificateSummary(self.chain.leaf.certificate)
        let expected =
            [
                "Audit of localhost:\(nginx.port) through the proxy at \(proxy) (TLS handshakes only, no HTTP request)",
                "Through the proxy: trusted",
            ] + self.originLines + ["Directly: trusted"] + self.originLines + [
                "Verdict: no interception: the proxy tunnels the connection; the origin's own certificate for "
                    + "localhost:\(nginx.port) (\"\(leaf.subject)\", issued by \"\(leaf.issuer)\") arrived through it "
                    + "and the policy trusted it",
                "",
            ]
        #expect(tunnelled.stdout == expected.joined(separator: "\n"))
        #expect(!tunnelled.stdout.contains(SquidProxy.password))
        let log = try await squid.accessLog(atLeast: 3)
        #expect(log.contains { $0.contains("CONNECT localhost:\(nginx.port)") && !$0.contains("/407") }, "\(log)")

        // A proxy nobody listens on: no handshake through it, a typed failure that names it, exit 3.
        let closed = try ExternalPeers.freePort()
        let down = try await Self.run(["audit", "localhost:\(nginx.port)", "--proxy", "http://127.0.0.1:\(closed)"])
        #expect(down.status == 3, "\(down.stdout)\(down.stderr)")
        #expect(down.stdout.contains("Through the proxy: no handshake\n"))
        #expect(
            down.stdout.contains(
                "Verdict: no TLS handshake through the proxy: connect_failed (localhost): through the proxy at "
                    + "127.0.0.1:\(closed): "
            ),
            "\(down.stdout)"
        )

        // No proxy at all: a usage error, nothing connects.
        let none = try await Self.run(["audit", "localhost:\(nginx.port)"])
        #expect(none.status == 64, "\(none.stdout)\(none.stderr)")
        #expect(
            none.stderr.contains(
                "no proxy applies to localhost:\(nginx.port): give one with --proxy URL, the proxy section of a "
                    + "--policy file, or https_proxy"
            ),
            "\(none.stderr)"
        )
        #expect(nginx.accessLog().isEmpty)
    }

    @Test("inspect --proxy through squid shows the origin's chain; --noproxy sends it direct")
    func inspectThroughSquid() async throws {
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let squid = try await SquidProxy.start()
        defer { squid.stop() }
        let root = try CLI.write(self.chain.root.certificatePEM, name: "root.pem")
        let user = try CLI.write("\(SquidProxy.username):\(SquidProxy.password)\n", name: "proxy-user")
        defer { for path in [root, user] { try? FileManager.default.removeItem(atPath: path) } }
        let proxy = "http://127.0.0.1:\(squid.port)"
        let target = "https://localhost:\(nginx.port)/"

        let inspected = try await Self.run([
            "inspect", target, "--ca", root, "--revocation", "off", "--proxy", proxy, "--proxy-user-file", user,
        ])
        #expect(inspected.status == 0, "\(inspected.stdout)\(inspected.stderr)")
        let leaf = CertificateSummary(self.chain.leaf.certificate)
        #expect(
            inspected.stdout.hasPrefix(
                "Connecting to localhost:\(nginx.port) through the proxy at \(proxy)\nPresented chain (2):\n"
                    + "  [0] \(leaf.subject)\n"
            ),
            "\(inspected.stdout)"
        )
        #expect(inspected.stdout.contains("      sha256:     \(leaf.certificatePin.fingerprint)\n"))
        #expect(inspected.stdout.contains("Verdict: trusted\nVerified chain (3):\n"))
        let log = try await squid.accessLog(atLeast: 3)
        let tunnels = log.filter { $0.contains("CONNECT localhost:\(nginx.port)") }
        #expect(tunnels.count == 2, "a 407, then the tunnel: \(log)")

        // A wrong password: the refused proxy login names the proxy and the 407.
        let wrong = try CLI.write("\(SquidProxy.username):wrong-password\n", name: "proxy-user-bad")
        defer { try? FileManager.default.removeItem(atPath: wrong) }
        let refused = try await Self.run([
            "inspect", target, "--ca", root, "--revocation", "off", "--proxy", proxy, "--proxy-user-file", wrong,
        ])
        #expect(refused.status == 3)
        #expect(
            refused.stdout.hasSuffix(
                "Verdict: no handshake: proxy_auth_failed (localhost): the proxy at 127.0.0.1:\(squid.port) refused "
                    + "the proxy credentials: 407 Proxy Authentication Required\n"
            ),
            "\(refused.stdout)"
        )
        #expect(!refused.stdout.contains("wrong-password"))

        // --noproxy: the host goes direct, squid sees nothing more. squid writes a line when a transaction ends, which
        // may be after the command has exited: its start-up probe, 407 + tunnel, then 407 + 407. So the count is taken
        // once those five are there, not before the last ones land.
        let before = try await squid.accessLog(atLeast: 5).count
        let direct = try await Self.run([
            "inspect", target, "--ca", root, "--revocation", "off", "--proxy", proxy, "--noproxy", "localhost",
        ])
        #expect(direct.status == 0, "\(direct.stdout)\(direct.stderr)")
        #expect(direct.stdout.hasPrefix("Connecting to localhost:\(nginx.port)\n"))
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await squid.accessLog(atLeast: 0, timeout: .zero).count == before)
        #expect(nginx.accessLog().isEmpty, "inspect sends no HTTP request")
    }

    @Test("audit --help documents every exit status")
    func auditHelp() async throws {
        let help = try await Self.run(["audit", "--help"])
        #expect(help.status == 0)
        let text = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for status in [
            "Exit status: 0 no interception is accepted", "1 INTERCEPTION ACCEPTED", "64 bad options or files",
            "3 the proxy could not be reached", "5 the policy refuses the origin's own certificate", "9 undetermined",
        ] {
            #expect(text.contains(status), "\(status)")
        }
        #expect(text.contains("--proxy-user-file"))
        #expect(text.contains("--policy"))
    }
}
