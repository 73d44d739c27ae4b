import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing
import X509

// What a person sees when a connection fails, tried as a new user would: against a real `openssl s_server` on
// 127.0.0.1 that speaks an old protocol, holds a weak key or a SHA-1 signature, or presents a certificate that is
// expired, not yet valid, for another host, from an unknown issuer, without its intermediate or without the pinned
// key. Every row asserts the sentence that says what was wrong, and that no Swift type name, source or build path
// or raw library error number leaks into it.

/// One way a server can be wrong, and the words Bulwark must use for it.
enum ErrorMessageRow: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case tls10Only
    case tls11Only
    case tls12OnlyWithTLS13Minimum
    /// TLS 1.0 only, and no cipher suite for the version probe either: the version cannot be learnt.
    case tls10OnlyProbeRefused
    case rsa1024Leaf
    case sha1WithRSALeaf
    case ecdsaWithSHA1Leaf
    case expiredLeaf
    case notYetValidLeaf
    case wrongHost
    case unknownIssuer
    case missingIntermediate
    case wrongPin

    var testDescription: String { self.rawValue }
}

/// A running server for a row, the client settings to meet it with, and what the error must say.
struct ErrorMessageSetup: Sendable {
    var server: OpenSSLServer
    var evaluator: any ServerTrustEvaluating
    var minimumVersion: BulwarkClient.TLSOptions.Version = .tls12
    var code: BulwarkError.Code
    /// Phrases the error's description must contain.
    var phrases: [String]
    /// What the library underneath said, which only the error's `debugDescription` keeps (for bug reports).
    var debugPhrase: String? = nil
}

@Suite("Error messages a person can act on, against openssl s_server", .serialized, .tags(.externalPeers))
struct InteropErrorMessageTests {
    /// Every `s_server` here may hold a weak key or signature, or speak TLS 1.0: OpenSSL refuses those above
    /// security level 0.
    static let weakServer = ["-cipher", "DEFAULT@SECLEVEL=0"]

    /// What must never appear in text meant for a person: Swift type names and enum payloads, source and build
    /// paths, OpenSSL/BoringSSL packed error numbers.
    static let internals: [(name: String, pattern: String)] = [
        ("a Swift type or enum case with a payload", #"[A-Z][A-Za-z0-9]+\.[A-Za-z0-9]+\("#),
        ("a Swift error type", #"Error\("#),
        ("a Swift source file", #"\.swift"#),
        ("a build path", #"/\.build/"#),
        ("a source path", #"/Sources/"#),
        ("a packed library error number", #"error:[0-9A-Fa-f]{8}"#),
        ("a BoringSSL error dump", #"Error: [0-9]+ "#),
        ("a BoringSSL source file", #"\.cc:[0-9]+"#),
    ]

    /// Asserts that `text` contains none of ``internals``.
    static func expectNoInternals(
        _ text: String,
        _ row: ErrorMessageRow,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for (name, pattern) in Self.internals {
            let found = text.range(of: pattern, options: .regularExpression)
            #expect(found == nil, "\(row): \(name) in: \(text)", sourceLocation: sourceLocation)
        }
    }

    @Test(
        "each failure is told in words: what was wrong, and what Bulwark accepts",
        arguments: ErrorMessageRow.allCases
    )
    func sentence(_ row: ErrorMessageRow) async throws {
        let setup = try await Self.setUp(row)
        defer { setup.server.stop() }
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: ["localhost": setup.evaluator])
        )
        configuration.tls.minimumVersion = setup.minimumVersion
        let client = BulwarkClient(configuration: configuration)
        let error = await #expect(throws: BulwarkError.self) {
            try await client.execute(BulwarkRequest(url: "https://localhost:\(setup.server.port)/"))
        }
        await client.shutdown()
        let text = error.map { String(describing: $0) } ?? "(no error)"
        print("[error-message] \(row): \(text.replacingOccurrences(of: "\n", with: "\\n"))")
        #expect(error?.code == setup.code, "\(row): \(text)")
        for phrase in setup.phrases {
            #expect(text.contains(phrase), "\(row): expected \"\(phrase)\" in: \(text)")
        }
        Self.expectNoInternals(text, row)
        if let debugPhrase = setup.debugPhrase {
            let debug = error.map { String(reflecting: $0) } ?? ""
            #expect(debug.hasPrefix(text) && debug.contains(debugPhrase), "\(row): debugDescription: \(debug)")
        }
        // Each refusal reason on its own (what events and logs carry) is words too.
        for reason in error?.trustRefusal?.reasons ?? [] {
            Self.expectNoInternals(String(describing: reason), row)
        }
    }

    @Test("a refused connection names the address and the reason, not NIO's error value")
    func connectionRefused() async throws {
        let port = try ExternalPeers.freePort()  // nothing listens there
        let client = BulwarkClient(configuration: .init(trust: try ServerTrustManager(evaluators: [:])))
        let error = await #expect(throws: BulwarkError.self) {
            try await client.execute(BulwarkRequest(url: "https://127.0.0.1:\(port)/"))
        }
        await client.shutdown()
        let text = error.map { String(describing: $0) } ?? "(no error)"
        print("[error-message] connectionRefused: \(text)")
        #expect(error?.code == .connectFailed, "\(text)")
        #expect(text.contains("could not connect to 127.0.0.1:\(port): connection refused"), "\(text)")
        for (name, pattern) in Self.internals {
            #expect(text.range(of: pattern, options: .regularExpression) == nil, "\(name) in: \(text)")
        }
        #expect(text.range(of: "NIO|errno", options: .regularExpression) == nil, "\(text)")
    }

    /// A chain for `localhost` from the given key type, issued in process.
    static func chain(_ scenario: TestChain.Scenario = .valid, key: TestKeyAlgorithm = .p256) throws -> TestChain {
        try TestChain.make(scenario, host: "localhost", key: key)
    }

    static func start(_ chain: TestChain, _ extraArguments: [String] = []) async throws -> OpenSSLServer {
        try await OpenSSLServer.start(chain: chain, extraArguments: extraArguments)
    }

    static func setUp(_ row: ErrorMessageRow) async throws -> ErrorMessageSetup {
        switch row {
        case .tls10Only, .tls11Only:
            let chain = try Self.chain()
            let version = row == .tls10Only ? "-tls1" : "-tls1_1"
            let server = try await Self.start(chain, [version] + Self.weakServer)
            let name = row == .tls10Only ? "TLS 1.0" : "TLS 1.1"
            return ErrorMessageSetup(
                server: server,
                evaluator: .default(roots: .custom([chain.root.certificate])),
                code: .tlsHandshakeFailed,
                phrases: [
                    "the server at localhost:\(server.port) offered only \(name)",
                    "Bulwark requires TLS 1.2 or later",
                ],
                debugPhrase: "TLSV1_ALERT_PROTOCOL_VERSION"
            )
        case .tls10OnlyProbeRefused:
            let chain = try Self.chain()  // an ECDSA key: an RSA-only cipher list leaves nothing to agree on
            let server = try await Self.start(chain, ["-tls1", "-cipher", "ECDHE-RSA-AES128-SHA@SECLEVEL=0"])
            return ErrorMessageSetup(
                server: server,
                evaluator: .default(roots: .custom([chain.root.certificate])),
                code: .tlsHandshakeFailed,
                phrases: [
                    "the server at localhost:\(server.port) supports no TLS version Bulwark accepts",
                    "Bulwark requires TLS 1.2 or later",
                ],
                debugPhrase: "TLSV1_ALERT_PROTOCOL_VERSION"
            )
        case .tls12OnlyWithTLS13Minimum:
            let chain = try Self.chain()
            let server = try await Self.start(chain, ["-tls1_2"])
            return ErrorMessageSetup(
                server: server,
                evaluator: .default(roots: .custom([chain.root.certificate])),
                minimumVersion: .tls13,
                code: .tlsHandshakeFailed,
                phrases: [
                    "the server at localhost:\(server.port) offered only TLS 1.2",
                    "Bulwark requires TLS 1.3 or later",
                ]
            )
        case .rsa1024Leaf:
            let chain = try Self.chain()
            let server = try await Self.startWithOpenSSLLeaf(issuer: chain, newKey: ["rsa:1024"], digest: "-sha256")
            return ErrorMessageSetup(
                server: server,
                evaluator: .default(roots: .custom([chain.root.certificate])),
                code: .trustRefused,
                phrases: [
                    "CN=localhost",
                    "RSA 1024-bit key; the minimum is 2048 bits",
                ],
                debugPhrase: "incorrectParameterSize"
            )
        case .sha1WithRSALeaf:
            let chain = try Self.chain(key: .rsa2048)
            let server = try await Self.startWithOpenSSLLeaf(issuer: chain, newKey: ["rsa:2048"], digest: "-sha1")
            return ErrorMessageSetup(
                server: server,
                evaluator: .default(roots: .custom([chain.root.certificate])),
                code: .trustRefused,
                phrases: ["CN=localhost", "signed with SHA-1 with RSA, which is not accepted"]
            )
        case .ecdsaWithSHA1Leaf:
            let chain = try Self.chain()
            let server = try await Self.startWithOpenSSLLeaf(
                issuer: chain,
                newKey: ["ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
                digest: "-sha1"
            )
            return ErrorMessageSetup(
                server: server,
                evaluator: .default(roots: .custom([chain.root.certificate])),
                code: .trustRefused,
                phrases: ["CN=localhost", "signed with ECDSA with SHA-1, which is not accepted"],
                debugPhrase: "unsupportedSignatureAlgorithm"
            )
        case .expiredLeaf, .notYetValidLeaf:
            let chain = try Self.chain(row == .expiredLeaf ? .expiredLeaf : .notYetValidLeaf)
            let server = try await Self.start(chain)
            let leaf = chain.leaf.certificate
            let phrase =
                row == .expiredLeaf
                ? "certificate \(leaf.subject) expired at \(leaf.notValidAfter.formatted(.iso8601))"
                : "certificate \(leaf.subject) is not valid before \(leaf.notValidBefore.formatted(.iso8601))"
            return ErrorMessageSetup(
                server: server,
                evaluator: .default(roots: .custom([chain.root.certificate])),
                code: .trustRefused,
                phrases: [phrase]
            )
        case .wrongHost:
            let chain = try Self.chain(.wrongHost)
            let server = try await Self.start(chain)
            return ErrorMessageSetup(
                server: server,
                evaluator: .default(roots: .custom([chain.root.certificate])),
                code: .trustRefused,
                phrases: ["certificate is not valid for host localhost; it is valid for: DNS:other.invalid"]
            )
        case .unknownIssuer:
            let chain = try Self.chain()
            let otherRoot = try CertificateFactory.makeRoot(commonName: "Some Other Root")
            let server = try await Self.start(chain)
            let intermediate = chain.intermediate!.certificate
            return ErrorMessageSetup(
                server: server,
                evaluator: .default(roots: .custom([otherRoot.certificate])),
                code: .trustRefused,
                phrases: [
                    "no valid path from the server's certificate to a trusted root was found",
                    "the chain stops at \(intermediate.subject), issued by \(intermediate.issuer), "
                        + "which is not a trusted root",
                ]
            )
        case .missingIntermediate:
            let chain = try Self.chain(.missingIntermediate)
            let server = try await Self.start(chain)
            return ErrorMessageSetup(
                server: server,
                evaluator: .default(roots: .custom([chain.root.certificate])),
                code: .trustRefused,
                phrases: [
                    "no valid path from the server's certificate to a trusted root was found",
                    "the chain stops at \(chain.leaf.certificate.subject), issued by "
                        + "\(chain.leaf.certificate.issuer), which the server did not send and is not a trusted root",
                ]
            )
        case .wrongPin:
            let chain = try Self.chain()
            let server = try await Self.start(chain)
            let other = try Self.chain()
            let pins = [Pin.publicKey(of: other.leaf.certificate), Pin.publicKey(of: other.root.certificate)]
            let verified = [chain.leaf.certificate, chain.intermediate!.certificate, chain.root.certificate]
            return ErrorMessageSetup(
                server: server,
                evaluator: .publicKeys(try PinSet(pins), roots: .custom([chain.root.certificate])),
                code: .trustRefused,
                phrases: ["Certificate pinning failure!", "  Peer certificate chain:"]
                    + verified.map { "    \(Pin.publicKey(of: $0)): \(CertificateSummary($0).subject)" }
                    + ["  Pinned certificates for localhost:"]
                    + pins.map { "    \($0)" }
            )
        }
    }

    /// Issues a leaf for `localhost` with the `openssl` command (the in-process factory makes neither weak keys nor
    /// SHA-1 signatures) from `issuer`'s intermediate, and starts `s_server` with it and that intermediate.
    static func startWithOpenSSLLeaf(
        issuer: TestChain,
        newKey: [String],
        digest: String
    ) async throws
        -> OpenSSLServer
    {
        let openssl = try ExternalPeers.findTool("openssl")
        let directory = try ExternalPeers.makeDirectory("weak-leaf")
        let intermediate = issuer.intermediate!
        func path(_ name: String) -> String { directory.appending(path: name).path }
        func write(_ text: String, _ name: String) throws {
            try text.write(to: directory.appending(path: name), atomically: true, encoding: .utf8)
        }
        func run(_ arguments: [String]) async throws {
            let result = try await ExternalPeers.run(openssl, arguments)
            guard result.status == 0 else {
                throw ExternalPeerError(description: "openssl \(arguments.joined(separator: " ")): \(result.stderr)")
            }
        }
        try write(intermediate.certificatePEM + "\n", "chain.pem")
        try write(intermediate.privateKeyPEM + "\n", "issuer.key")
        try write(
            """
            basicConstraints=critical,CA:FALSE
            keyUsage=critical,digitalSignature,keyEncipherment
            extendedKeyUsage=serverAuth
            subjectAltName=DNS:localhost
            subjectKeyIdentifier=hash
            authorityKeyIdentifier=keyid

            """,
            "ext.cnf"
        )
        try await run(
            ["req", "-new", "-newkey"] + newKey + [
                "-nodes", "-keyout", path("key.pem"), "-subj", "/CN=localhost", "-out", path("leaf.csr"),
            ]
        )
        try await run([
            "x509", "-req", "-in", path("leaf.csr"), "-CA", path("chain.pem"), "-CAkey", path("issuer.key"),
            "-CAcreateserial", "-CAserial", path("serial"), "-days", "30", digest, "-extfile", path("ext.cnf"),
            "-out", path("leaf.pem"),
        ])
        return try await OpenSSLServer.start(directory: directory, chainFile: true, extraArguments: Self.weakServer)
    }
}
