import BulwarkTestSupport
import Crypto
import Foundation
import Testing
import X509

@testable import BulwarkPolicy

/// What a verification remembers between handshakes (the host-name successes kept with a leaf's decoded
/// extensions, the decoded extensions found again by the identity of their bytes, the verifier kept for its
/// second): each is a pure function of exact inputs, equals what the check computes, and never turns a refusal
/// into a success.
@Suite("Verification memos")
struct VerificationMemoTests {
    static let hosts = [
        Chains.host, "API.Bulwark.Test", Chains.host + ".", "other.invalid", "x." + Chains.host, "bulwark.test",
        "127.0.0.1", "::1", "[::1]", "", "bad host", "*.bulwark.test",
    ]

    /// `certificate` with the same `TBSCertificate`, signed by a key nobody trusts.
    static func resigned(_ certificate: Certificate) throws -> Certificate {
        try Certificate(
            version: certificate.version,
            serialNumber: certificate.serialNumber,
            publicKey: certificate.publicKey,
            notValidBefore: certificate.notValidBefore,
            notValidAfter: certificate.notValidAfter,
            issuer: certificate.issuer,
            subject: certificate.subject,
            signatureAlgorithm: certificate.signatureAlgorithm,
            extensions: certificate.extensions,
            issuerPrivateKey: Certificate.PrivateKey(P256.Signing.PrivateKey())
        )
    }

    @Test func aRememberedHostCheckEqualsTheCheckWorkedOut() {
        for certificate in ParsedExtensionsCacheTests.certificates {
            for host in Self.hosts {
                let computed = ServerIdentity.evaluate(
                    leafOf: [certificate],
                    parsed: ParsedExtensions(certificate),
                    host: host
                )
                // The first call may work it out and remember it, the second may answer from memory.
                #expect(ServerIdentity.check(leafOf: [certificate], host: host) == computed)
                #expect(ServerIdentity.check(leafOf: [certificate], host: host) == computed)
            }
        }
    }

    @Test func onlyAHostMatchIsRemembered() {
        let leaf = Chains[.valid].leaf.certificate
        let parsed = ParsedExtensions.of(leaf)
        #expect(ServerIdentity.check(leafOf: [leaf], host: Chains.host) == nil)
        #expect(parsed.hostMatched(Chains.host))
        for _ in 0..<2 {
            #expect(ServerIdentity.check(leafOf: [leaf], host: "other.invalid")?.code == "hostname_mismatch")
            #expect(!parsed.hostMatched("other.invalid"))
        }
        // Remembered by the exact text: a host spelled otherwise is checked on its own.
        #expect(!parsed.hostMatched(Chains.host.uppercased()))
        #expect(ServerIdentity.check(leafOf: [leaf], host: Chains.host.uppercased()) == nil)
        #expect(parsed.hostMatched(Chains.host.uppercased()))
    }

    @Test func rememberedHostsAreBounded() {
        let parsed = ParsedExtensions(Chains[.valid].leaf.certificate)
        let hosts = (0...ParsedExtensions.matchedHostLimit).map { "h\($0).test" }
        for host in hosts { parsed.rememberMatchedHost(host) }
        #expect(!parsed.hostMatched(hosts[0]))
        #expect(hosts.dropFirst().allSatisfy { parsed.hostMatched($0) })
    }

    /// The host check of a leaf remembered as matching is still refused for a leaf whose subject alternative names
    /// differ, and a leaf with the same `TBSCertificate` signed by another key is refused by the signature check,
    /// however often the genuine one was trusted before, in the same second (the same kept verifier).
    @Test func aLeafWithTheSameTBSSignedByAnotherKeyIsVerifiedAfresh() async throws {
        let chain = Chains[.valid]
        let leaf = chain.leaf.certificate
        let forged = try Self.resigned(leaf)
        #expect(forged.tbsCertificateBytes == leaf.tbsCertificateBytes)
        #expect(forged.signature != leaf.signature)
        let roots = Chains.roots(chain)
        let now = Date()
        let evaluators: [any ServerTrustEvaluating] = [
            DefaultTrustEvaluator(roots: roots),
            PublicKeysTrustEvaluator(
                pinSet: try PinSet([Pin.publicKey(of: chain.intermediate!.certificate), Pin.publicKey(of: leaf)]),
                roots: roots
            ),
        ]
        let genuine = chain.presentedChain
        var forgedChain = genuine
        forgedChain[0] = forged
        for evaluator in evaluators {
            for _ in 0..<2 {
                #expect(await evaluator.evaluate(genuine, forHost: Chains.host, at: now).isTrusted)
                #expect(!(await evaluator.evaluate(forgedChain, forHost: Chains.host, at: now).isTrusted))
            }
        }
    }

    @Test func theVerifierIsKeptForItsSecondAndOptionsOnly() {
        let roots = Chains.roots(Chains[.valid])
        let memo = roots.verifiers
        let second = Date(timeIntervalSince1970: 1_800_000_000)
        var built = 0
        func verifier(at time: Date, _ options: ValidationOptions) -> any PathValidating {
            memo.verifier(for: VerifierMemo.Key(second: time, options: options)) {
                built += 1
                return BuiltVerifier(
                    verifier: ChainVerifier(roots: roots, options: options).makeVerifier(at: time, systemRoots: nil)
                )
            }
        }
        _ = verifier(at: second, ValidationOptions())
        _ = verifier(at: second, ValidationOptions())
        #expect(built == 1)
        _ = verifier(at: second + 1, ValidationOptions())
        #expect(built == 2)
        var options = ValidationOptions()
        options.requireServerAuthExtendedKeyUsage = false
        _ = verifier(at: second + 1, options)
        #expect(built == 3)
        options = ValidationOptions()
        options.maximumIntermediates = 1
        _ = verifier(at: second + 1, options)
        #expect(built == 4)
        options = ValidationOptions()
        options.enforcesRootProfile = true
        _ = verifier(at: second + 1, options)
        #expect(built == 5)
        _ = verifier(at: second + 1, options)
        #expect(built == 5)
    }

    /// The kept verifier checks validity at its own second: the last second of a chain's validity is trusted and
    /// the next refused as expired, in either order, with one set of roots.
    @Test func theKeptVerifierValidatesAtItsOwnSecond() async {
        let chain = Chains[.valid]
        let end = chain.presentedChain.map(\.notValidAfter).min()!
        let evaluator = DefaultTrustEvaluator(roots: Chains.roots(chain))
        for time in [end, end + 1, end + 0.5, end + 1.5, end] {
            let decision = await evaluator.evaluate(chain.presentedChain, forHost: Chains.host, at: time)
            if time < end + 1 {
                #expect(decision.isTrusted, "at \(time)")
            } else {
                #expect(decision.reasons.first?.code == "expired", "at \(time)")
            }
        }
    }

    @Test func theIdentityFrontFindsOnlyTheSameMemory() {
        let bytes = Chains[.valid].leaf.certificate.tbsCertificateBytes
        var front = CertificateIdentityFront<Int>()
        front.insert(1, for: bytes)
        #expect(front.value(for: bytes) == 1)
        // The same bytes elsewhere in memory, and the same start with another length, are not found.
        // (`map`, not `Array(bytes)`: a slice over a whole buffer becomes an array over that same buffer.)
        #expect(front.value(for: ArraySlice(bytes.map { $0 })) == nil)
        #expect(front.value(for: bytes.dropLast()) == nil)
        #expect(front.value(for: []) == nil)
        // Full: a new entry replaces the oldest, whose bytes are handed back.
        let others = ParsedExtensionsCacheTests.certificates.map(\.tbsCertificateBytes).filter { $0 != bytes }
        for (index, other) in others.prefix(CertificateIdentityFront<Int>.capacity - 1).enumerated() {
            #expect(front.insert(index + 2, for: other) == nil)
        }
        let last = others[CertificateIdentityFront<Int>.capacity - 1]
        #expect(front.insert(99, for: last) == bytes)
        #expect(front.value(for: bytes) == nil)
        #expect(front.value(for: last) == 99)
        #expect(front.count == CertificateIdentityFront<Int>.capacity)
    }

    @Test func theCacheAnswersFromItsFrontAsFromItsMap() throws {
        let cache = ParsedExtensionsCache()
        for certificate in ParsedExtensionsCacheTests.certificates {
            let first = cache.extensions(of: certificate)
            #expect(cache.extensions(of: certificate) === first)
            // Parsed again (other memory): found by its bytes, the same decoding.
            let reparsed = try Certificate(derEncoded: certificate.derBytes)
            #expect(cache.extensions(of: reparsed) === first)
            #expect(try first.subjectAlternativeNames.get() == certificate.extensions.subjectAlternativeNames)
            #expect(first.publicKeyPin == Pin.publicKey(of: certificate))
        }
    }

    /// The manager's remembered host match is the matcher's own, and a host matching no pattern is looked up (and
    /// refused) every time, also right after a host that matched.
    @Test func theManagersRememberedMatchIsTheMatchersOwn() throws {
        let manager = try ServerTrustManager(evaluators: [
            "api.example.com": DefaultTrustEvaluator(),
            "*.example.com": DefaultTrustEvaluator(validateHost: false),
        ])
        let matcher = HostMatcher<Int>([(try HostPattern("api.example.com"), 0), (try HostPattern("*.example.com"), 1)])
        let hosts = [
            "api.example.com", "api.example.com", "API.example.com", "x.example.com", "example.com", "example.com",
            "api.example.com", "a.b.example.com", "x.example.com", "other.test",
        ]
        for host in hosts {
            #expect(manager.pattern(forHost: host) == matcher.match(host)?.pattern, "\(host)")
            #expect((manager.evaluator(forHost: host) == nil) == (matcher.match(host) == nil), "\(host)")
        }
    }

    /// A verified path's array is reused only for the very same certificates: equal ones parsed again, a leaf with
    /// the same `TBSCertificate` and another signature, or a shorter path each get an array of their own, and
    /// every array handed out equals the path.
    @Test func aVerifiedPathsArrayIsReusedOnlyForTheSameCertificates() throws {
        let memo = VerifiedChainMemo()
        let chain = Chains[.valid]
        let path = chain.presentedChain + [chain.root.certificate]
        func address(_ array: [Certificate]) -> UnsafePointer<Certificate>? {
            array.withUnsafeBufferPointer { $0.baseAddress }
        }
        let first = memo.array(of: ValidatedCertificateChain(uncheckedCertificateChain: path))
        #expect(first == path)
        let again = memo.array(of: ValidatedCertificateChain(uncheckedCertificateChain: path))
        #expect(again == path)
        #expect(address(again) == address(first))
        let reparsed = try path.map { try Certificate(derEncoded: $0.derBytes) }
        let fromReparsed = memo.array(of: ValidatedCertificateChain(uncheckedCertificateChain: reparsed))
        #expect(fromReparsed == path)
        #expect(address(fromReparsed) != address(first))
        var forgedPath = path
        forgedPath[0] = try Self.resigned(path[0])
        let forged = memo.array(of: ValidatedCertificateChain(uncheckedCertificateChain: forgedPath))
        #expect(forged == forgedPath)
        #expect(forged[0].signature != path[0].signature)
        let shorter = Array(path.prefix(2))
        #expect(memo.array(of: ValidatedCertificateChain(uncheckedCertificateChain: shorter)) == shorter)
        #expect(memo.array(of: ValidatedCertificateChain(uncheckedCertificateChain: path)) == path)
        #expect(memo.count <= VerifiedChainMemo.capacity)
    }

    /// The intermediates' stores found among the recent chains are the stores of those chains, also once more
    /// chains than are kept recent were looked up, in any order.
    @Test func recentIntermediatesStoresAreTheChainsOwn() throws {
        let cache = PresentedIntermediatesCache()
        let chains = try (0...PresentedIntermediatesCache.recentCapacity + 1).map { _ in
            try TestChain.make(host: Chains.host).presentedChain
        }
        for round in 0..<3 {
            for chain in round == 1 ? chains.reversed() : chains {
                #expect(cache.store(forIntermediatesOf: chain) == CertificateStore(chain.dropFirst()))
            }
        }
        #expect(cache.count == chains.count)
    }
}
