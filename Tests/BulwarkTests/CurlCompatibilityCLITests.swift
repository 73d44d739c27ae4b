import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing
import X509

/// `bulwark fetch` under curl's option names (issue 42): each option against an in-process server (and `-I`, `-x`
/// against nginx and squid), its output pinned; curl's insecure and secret-revealing options refused with a sentence
/// and exit 64, before any request. It starts about 70 `bulwark` processes: beside the other external-program suites,
/// on two cores, that stretched a revocation fetch through squid past its 4 s budget (3 runs of 3), so it runs in the
/// `.alone` process, its tests one at a time.
@Suite("bulwark fetch with curl's options", .tags(.externalPeers, .alone), .serialized)
struct CurlCompatibilityCLITests {
    /// A server, the CA file of its chain, the --resolve argument and the public-key pins of its leaf and
    /// intermediate (curl's syntax: sha256//…).
    struct Fixture {
        let chain: TestChain
        let server: TestHTTPSServer
        let root: String
        let resolve: [String]
        var leafPin: String { Pin.publicKey(of: self.chain.leaf.certificate).description }
        var intermediatePin: String { Pin.publicKey(of: self.chain.intermediate!.certificate).description }
        var curlPins: String {
            [self.leafPin, self.intermediatePin].map { "sha256//" + $0.dropFirst("sha256/".count) }
                .joined(separator: ";")
        }

        func url(_ path: String) -> String { Harness.url(self.server, path) }

        static func start() async throws -> Fixture {
            let chain = try TestChain.make(host: Harness.host)
            let server = try await Harness.server(chain)
            let root = try CLI.write(chain.root.certificatePEM, name: "root.pem")
            return Fixture(
                chain: chain,
                server: server,
                root: root,
                resolve: ["--resolve", "\(Harness.host):\(server.port):127.0.0.1"]
            )
        }

        func stop() async {
            try? await self.server.shutdown()
            try? FileManager.default.removeItem(atPath: self.root)
        }
    }

    @Test("--cacert replaces the roots, --pinnedpubkey takes curl's list or a public key file")
    func trustOptions() async throws {
        let fixture = try await Fixture.start()
        let other = try TestChain.make(host: Harness.host)
        let otherRoot = try CLI.write(other.root.certificatePEM, name: "other-root.pem")
        let leafKey = try CLI.write(
            try fixture.chain.leaf.certificate.publicKey.serializeAsPEM().pemString + "\n",
            name: "leaf.pub"
        )
        defer { for path in [otherRoot, leafKey] { try? FileManager.default.removeItem(atPath: path) } }
        let url = fixture.url("/hello")

        let trusted = try await CLI.run(["fetch", url, "--cacert", fixture.root] + fixture.resolve)
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(trusted.stdout == "hello")
        let wrongCA = try await CLI.run(["fetch", url, "--cacert", otherRoot] + fixture.resolve)
        #expect(wrongCA.status == 5, "\(wrongCA.stderr)")

        let pinned = try await CLI.run(
            ["fetch", url, "--cacert", fixture.root, "--pinnedpubkey", fixture.curlPins] + fixture.resolve
        )
        #expect(pinned.status == 0, "\(pinned.stderr)")
        #expect(pinned.stdout == "hello")
        // -s: nothing on standard error for a pinned fetch that succeeds, as curl; the pin that matched is news, not
        // a warning (it was printed under -s before).
        let quietlyPinned = try await CLI.run(
            ["fetch", url, "--cacert", fixture.root, "--pinnedpubkey", fixture.curlPins, "-s"] + fixture.resolve
        )
        #expect(quietlyPinned.status == 0, "\(quietlyPinned.stderr)")
        #expect(quietlyPinned.stderr == "")
        #expect(pinned.stderr.contains("notice: pin sha256/"), "without -s the match is still told: \(pinned.stderr)")

        let fromFile = try await CLI.run(
            ["fetch", url, "--cacert", fixture.root, "--pinnedpubkey", leafKey, "--pin", fixture.intermediatePin]
                + fixture.resolve
        )
        #expect(fromFile.status == 0, "\(fromFile.stderr)")

        let wrong = "sha256//" + Data(repeating: 7, count: 32).base64EncodedString()
        let wrong2 = "sha256//" + Data(repeating: 8, count: 32).base64EncodedString()
        let mismatch = try await CLI.run(
            ["fetch", url, "--cacert", fixture.root, "--pinnedpubkey", "\(wrong);\(wrong2)"] + fixture.resolve
        )
        #expect(mismatch.status == 5)
        #expect(mismatch.stderr.contains("Certificate pinning failure!"), "\(mismatch.stderr)")
        #expect(mismatch.stderr.contains("sha256/" + Data(repeating: 7, count: 32).base64EncodedString()))
        #expect(fixture.server.requests.count == 4, "only the trusted fetches reach the server")
        await fixture.stop()
    }

    @Test("-X, -d, --data-binary, --data-raw, -A and -H build the request curl would send")
    func requestOptions() async throws {
        let fixture = try await Fixture.start()
        let lines = try CLI.write("b=2\r\nc=3\n", name: "form.txt")
        defer { try? FileManager.default.removeItem(atPath: lines) }
        let base = ["--cacert", fixture.root] + fixture.resolve

        let form = try await CLI.run(
            ["fetch", fixture.url("/echo"), "-d", "a=1", "-d", "@\(lines)", "-A", "curlish/1"] + base
        )
        #expect(form.status == 0, "\(form.stderr)")
        #expect(form.stdout == "a=1&b=2c=3", "curl's -d @file drops carriage returns and newlines; values join with &")
        let binary = try await CLI.run(
            [
                "fetch", fixture.url("/echo"), "-X", "PUT", "--data-binary", "@\(lines)", "-H",
                "Content-Type: text/plain",
            ]
                + base
        )
        #expect(binary.status == 0, "\(binary.stderr)")
        #expect(binary.stdout == "b=2\r\nc=3\n")
        let raw = try await CLI.run(["fetch", fixture.url("/echo"), "--data-raw", "@literal"] + base)
        #expect(raw.stdout == "@literal")
        let delete = try await CLI.run(["fetch", fixture.url("/echo"), "--request", "DELETE"] + base)
        #expect(delete.status == 0, "\(delete.stderr)")

        let requests = fixture.server.requests
        #expect(requests.map(\.method) == ["POST", "PUT", "POST", "DELETE"])
        #expect(
            requests.map { String(decoding: $0.body, as: UTF8.self) } == ["a=1&b=2c=3", "b=2\r\nc=3\n", "@literal", ""]
        )
        func header(_ name: String, _ request: RecordedRequest) -> String? {
            request.headers.first { $0.name.lowercased() == name }?.value
        }
        #expect(
            requests.map { header("content-type", $0) } == [
                "application/x-www-form-urlencoded", "text/plain", "application/x-www-form-urlencoded", nil,
            ]
        )
        #expect(header("user-agent", requests[0]) == "curlish/1")
        await fixture.stop()
    }

    @Test("-i, -I, -s, -f and -L print what curl prints")
    func outputOptions() async throws {
        let fixture = try await Fixture.start()
        let base = ["--cacert", fixture.root] + fixture.resolve

        let include = try await CLI.run(["fetch", fixture.url("/hello"), "-i"] + base)
        #expect(include.status == 0, "\(include.stderr)")
        #expect(
            include.stdout
                == "HTTP/2 200\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 5\r\n\r\nhello"
        )
        let head = try await CLI.run(["fetch", fixture.url("/hello"), "-I"] + base)
        #expect(head.status == 0, "\(head.stderr)")
        #expect(head.stdout == "HTTP/2 200\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 5\r\n\r\n")
        #expect(fixture.server.requests.last?.method == "HEAD")

        let silent = try await CLI.run(["fetch", fixture.url("/hello"), "-s"] + base)
        #expect(silent.status == 0)
        #expect(silent.stdout == "hello")
        #expect(silent.stderr == "")
        let normal = try await CLI.run(["fetch", fixture.url("/status/404")] + base)
        #expect(normal.status == 0, "without -f an HTTP error is a response, as in curl")
        #expect(normal.stderr.hasPrefix("h2 404 Not Found\n"), "\(normal.stderr)")
        let failed = try await CLI.run(["fetch", fixture.url("/status/404"), "-fsSL"] + base)
        #expect(failed.status == 22)
        #expect(failed.stdout == "")
        #expect(failed.stderr == "bulwark fetch: the server answered 404 Not Found (--fail: no body written)\n")

        // -s keeps security notices (the review: it hid them): soft revocation with no status to be had.
        let notice = try await CLI.run(["fetch", fixture.url("/hello"), "-s", "--revocation", "soft"] + base)
        #expect(notice.status == 0, "\(notice.stderr)")
        #expect(notice.stderr.hasPrefix("notice: "), "\(notice.stderr)")

        let redirect = fixture.url("/redirect/302?to=%2Fhello")
        let followed = try await CLI.run(["fetch", redirect, "-L", "-s"] + base)
        #expect(followed.status == 0, "\(followed.stderr)")
        #expect(followed.stdout == "hello")
        let notFollowed = try await CLI.run(["fetch", redirect, "--max-redirs", "0"] + base)
        #expect(notFollowed.status == 8, "\(notFollowed.stderr)")
        #expect(notFollowed.stderr.contains("redirect 1: 302"), "\(notFollowed.stderr)")
        let offHost = try await CLI.run(
            ["fetch", fixture.url("/redirect/302?to=https%3A%2F%2Felsewhere.bulwark.test%2F"), "-L"] + base
        )
        #expect(offHost.status == 8, "-L does not widen the redirect policy: \(offHost.stderr)")
        await fixture.stop()
    }

    @Test("-v shows the request, each decision, the pins matched and the response, never a credential")
    func verbose() async throws {
        let fixture = try await Fixture.start()
        let result = try await CLI.run(
            [
                "fetch", fixture.url("/redirect/302?to=%2Fhello"), "-v", "--cacert", fixture.root, "--pinnedpubkey",
                fixture.curlPins, "-H", "Authorization: Bearer verbose-secret-1",
            ] + fixture.resolve
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "hello")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.first == "* pins: \(fixture.leafPin), \(fixture.intermediatePin)")
        #expect(
            lines.contains(
                "> GET https://\(Harness.host):\(fixture.server.port)/redirect/302 [Authorization: <redacted>]"
            ),
            "\(lines)"
        )
        #expect(lines.contains("* trust_evaluated [\(Harness.host)]: chain trusted"), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("* pin_matched [\(Harness.host)]: pin \(fixture.leafPin) matched") })
        #expect(lines.contains { $0.hasPrefix("* redirect_followed [\(Harness.host)]") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("redirect 1: 302 ") && $0.hasSuffix(": follow") }, "\(lines)")
        #expect(lines.contains("  \(fixture.leafPin): CN=\(Harness.host)  (matches a pin)"), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("* presented [0] ") }, "\(lines)")
        #expect(lines.contains("* ALPN: h2"))
        #expect(lines.contains("< HTTP/2 200 OK"))
        #expect(lines.contains("< content-type: text/plain; charset=utf-8"))
        #expect(!result.stderr.contains("verbose-secret-1"))
        await fixture.stop()
    }

    @Test("curl's insecure and secret-revealing options, and malformed values, are refused with a sentence and 64")
    func refusals() async throws {
        let fixture = try await Fixture.start()
        let certificateFile = try CLI.write(fixture.chain.leaf.certificatePEM, name: "leaf.pem")
        defer { try? FileManager.default.removeItem(atPath: certificateFile) }
        let url = fixture.url("/hello")
        let cases: [(arguments: [String], sentence: String)] = [
            (
                ["-k"],
                "Error: -k/--insecure is refused: Bulwark never turns certificate checks off from the command line. "
                    + "For a development host, use a policy file with \"insecure\": true and \"evaluator\": "
                    + "\"disabled\" for that host (--policy FILE); to trust a private CA, give it with --cacert or --ca."
            ),
            (["--insecure"], "Error: -k/--insecure is refused"),
            (["-u", "user:hunter2"], "Error: -u/--user is refused: a password on the command line is visible"),
            (["-U", "proxy:hunter2"], "Error: -U/--proxy-user is refused: a password on the command line is visible"),
            (["--oauth2-bearer", "tok"], "Error: --oauth2-bearer is refused: a token on the command line is visible"),
            (["-X", "GE T"], "Error: -X/--request: \"GE T\" is not a method name"),
            (["-I", "-d", "x"], "Error: -I/--head sends HEAD, which has no body: drop -I or the --data options"),
            (["-I", "-X", "POST"], "Error: -I/--head sends HEAD: drop -X POST or -I"),
            (["--pinnedpubkey", "sha256//AAA"], "Error: --pinnedpubkey: invalid pin \"sha256/AAA\": \"AAA\" is not"),
            (
                ["--pinnedpubkey", "sha1//AAA;sha256//BBB"],
                "Error: --pinnedpubkey takes \"sha256//BASE64;sha256//BASE64\""
            ),
            (["--pinnedpubkey", "/nonexistent/key.pem"], "Error: --pinnedpubkey: cannot read the public key file"),
            (
                ["--pinnedpubkey", certificateFile],
                "invalid pin \"public key file\": it holds a CERTIFICATE, not a PUBLIC KEY"
            ),
            (
                ["--pinnedpubkey", fixture.curlPins.split(separator: ";").first.map(String.init)!],
                "Error: one pin given: give a backup pin too"
            ),
            (["-d", "@/nonexistent/body"], "Error: -d/--data: cannot read \"/nonexistent/body\""),
            // The review (helper-15): a password joined to -u, -U or -E, or after curl's FILE: in -E, is refused
            // without being echoed; a proxy URL holding a password is refused as -U is.
            (["-uuser:hunter2"], "Error: -u/--user is refused"),
            (["-Uproxy:hunter2"], "Error: -U/--proxy-user is refused"),
            (["-E", "client.pem:hunter2", "--key", "client.key"], "Error: -E/--cert: curl's FILE:password form"),
            (["-x", "http://bob:hunter2@127.0.0.1:9"], "Error: -x/--proxy: a password in the proxy URL is visible"),
            // A control character in a header field is refused before any connection, naming the option.
            (["-A", "evil\r\nX-Injected: 1"], "Error: -A/--user-agent: the value holds a control character"),
            (["-H", "X-Evil: a\u{1B}[31m"], "Error: -H: the value of \"X-Evil\" holds a control character"),
            (["-H", "Bad Name: x"], "Error: -H: \"Bad Name\" is not a header field name"),
            (["-m", "nan"], "Error: -m/--max-time takes a number of seconds above 0"),
            (["-m", "1e17"], "Error: -m/--max-time takes a number of seconds above 0"),
            // Two spellings of one pin are one pin (the check compares the pins, not the text).
            (
                ["--pin", fixture.leafPin, "--pin", " " + fixture.leafPin],
                "Error: one pin given: give a backup pin too"
            ),
            (["--frobnicate"], "Error: Unknown option '--frobnicate'"),
        ]
        for (arguments, sentence) in cases {
            let result = try await CLI.run(["fetch", url, "--cacert", fixture.root] + fixture.resolve + arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(sentence), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("hunter2"))
            #expect(!result.stderr.contains("allowSinglePin"))
        }
        #expect(fixture.server.requests.isEmpty, "no refused command sends a request")
        #expect(fixture.server.handshakes.isEmpty, "no refused command connects")
        await fixture.stop()
    }

    @Test("-I against nginx, and -x through squid")
    func realPeers() async throws {
        let chain = InteropChain.shared
        let nginx = try await NginxServer.start(chain: chain)
        defer { nginx.stop() }
        let squid = try await SquidProxy.start()
        defer { squid.stop() }
        let root = try CLI.write(chain.root.certificatePEM, name: "root.pem")
        let user = try CLI.write("\(SquidProxy.username):\(SquidProxy.password)\n", name: "proxy-user")
        defer { for path in [root, user] { try? FileManager.default.removeItem(atPath: path) } }
        let url = "https://localhost:\(nginx.port)/hello"

        let head = try await CLI.run(["fetch", url, "--cacert", root, "-I", "-s"])
        #expect(head.status == 0, "\(head.stderr)")
        #expect(head.stdout.hasPrefix("HTTP/2 200\r\nserver: nginx"), "\(head.stdout)")
        #expect(head.stdout.hasSuffix("\r\n\r\n"))

        let proxied = try await CLI.run(
            ["fetch", url, "--cacert", root, "-x", "http://127.0.0.1:\(squid.port)", "--proxy-user-file", user, "-s"]
        )
        #expect(proxied.status == 0, "\(proxied.stderr)")
        #expect(proxied.stdout == "hello from nginx\n")
        let log = try await squid.accessLog(atLeast: 2)
        #expect(log.contains { $0.contains("CONNECT localhost:\(nginx.port)") && !$0.contains("/407") }, "\(log)")
    }

    @Test("inspect and audit name a bad option's file and exit 64 (the review: they exited 1)")
    func inspectAndAuditBadFiles() async throws {
        let empty = try CLI.write("", name: "empty.pem")
        defer { try? FileManager.default.removeItem(atPath: empty) }
        for command in [["inspect", "localhost:9"], ["audit", "localhost:9", "-x", "http://127.0.0.1:9"]] {
            let missing = try await CLI.run(command + ["--cacert", "/nonexistent/ca.pem"])
            #expect(missing.status == 64, "\(command): \(missing.stderr)")
            #expect(missing.stderr.contains("--cacert: /nonexistent/ca.pem: cannot read file"), "\(missing.stderr)")
            let noCertificate = try await CLI.run(command + ["--ca", empty])
            #expect(noCertificate.status == 64, "\(command): \(noCertificate.stderr)")
            #expect(noCertificate.stderr.contains("--ca: \(empty): "), "\(noCertificate.stderr)")
            let badPin = try await CLI.run(command + ["--pin", "sha256/AAAA", "--allow-single-pin"])
            #expect(badPin.status == 64, "\(command): \(badPin.stderr)")
        }
    }

    @Test(
        "what a hostile peer sends is printed with its control characters escaped (the review: escapes reached the terminal)"
    )
    func peerTextIsEscaped() async throws {
        // A certificate whose subject holds an escape sequence, from a CA the command does not trust: the refusal
        // names the subject.
        let root = try CertificateFactory.makeRoot()
        let leaf = try CertificateFactory.issueLeaf(
            from: root,
            commonName: "X\u{1B}]0;PWNED\u{7}\u{1B}[31mRED\u{9B}2J",
            dnsNames: [Harness.host]
        )
        let evil = TestChain(root: root, intermediate: nil, leaf: leaf, presentedChain: [leaf.certificate])
        let server = try await Harness.server(evil)
        defer { Task { try? await server.shutdown() } }
        let fixture = try await Fixture.start()
        defer { Task { await fixture.stop() } }
        let result = try await CLI.run([
            "fetch", Harness.url(server, "/hello"), "--cacert", fixture.root, "-v", "--resolve",
            "\(Harness.host):\(server.port):127.0.0.1",
        ])
        #expect(result.status == 5, "\(result.stderr)")
        // (The subject's `;` is escaped as RFC 4514 writes it.)
        #expect(result.stderr.contains("X\\u{1B}]0\\;PWNED\\u{7}\\u{1B}[31mRED\\u{9B}2J"), "\(result.stderr)")
        #expect(!result.stderr.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x9B || $0.value == 0x7 })
    }

    @Test("a reader that goes away ends the command with curl's 23, not a crash (the review: a fatal error)")
    func aClosedPipeIsAWriteError() async throws {
        let fixture = try await Fixture.start()
        defer { Task { await fixture.stop() } }
        let command =
            ([CLI.binary.path, "fetch", fixture.url("/bytes/4000000"), "--cacert", fixture.root, "-i", "-v"]
            + fixture.resolve).map { "'\($0)'" }.joined(separator: " ")
        for pipe in ["| head -c 1 > /dev/null", "2>&1 | head -c 1 > /dev/null"] {
            let result = try await ProcessRunner.run(
                URL(fileURLWithPath: "/bin/bash"),
                ["-c", "set -o pipefail; \(command) \(pipe); echo status ${PIPESTATUS[0]}"],
                timeout: .seconds(120)
            )
            #expect(result.output.hasSuffix("status 23\n"), "\(pipe): \(result.output) \(result.stderr)")
            #expect(!result.stderr.contains("Fatal error"), "\(pipe): \(result.stderr)")
        }
    }

    @Test(
        "-o writes into the file it names, as curl: a link stays a link (the file was replaced: -o /dev/null made it a regular file)"
    )
    func outputWritesIntoTheFileNamed() async throws {
        let fixture = try await Fixture.start()
        defer { Task { await fixture.stop() } }
        let directory = FileManager.default.temporaryDirectory.appending(path: "bulwark-cli-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appending(path: "target").path
        let link = directory.appending(path: "link").path
        try "old contents, longer than the body\n".write(toFile: target, atomically: false, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let result = try await CLI.run(
            ["fetch", fixture.url("/hello"), "--cacert", fixture.root, "-s", "-o", link] + fixture.resolve
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == target, "-o replaced the link")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "hello")
    }
}
