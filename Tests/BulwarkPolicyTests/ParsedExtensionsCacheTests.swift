import BulwarkTestSupport
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

@testable import BulwarkPolicy

@Suite("Decoded extensions, reused per certificate")
struct ParsedExtensionsCacheTests {
    /// Every certificate of every test chain (leaves, intermediates, roots).
    static var certificates: [Certificate] {
        TestChain.Scenario.allCases.flatMap { scenario -> [Certificate] in
            let chain = Chains[scenario]
            return chain.presentedChain + [chain.root.certificate]
        }
    }

    @Test func decodedValuesAreSwiftCertificatesOwn() throws {
        for certificate in Self.certificates {
            let parsed = ParsedExtensions(certificate)
            let extensions = certificate.extensions
            #expect(try parsed.keyUsage.get() == extensions.keyUsage)
            #expect(try parsed.basicConstraints.get() == extensions.basicConstraints)
            #expect(try parsed.extendedKeyUsage.get() == extensions.extendedKeyUsage)
            #expect(try parsed.subjectKeyIdentifier.get() == extensions.subjectKeyIdentifier)
            #expect(try parsed.authorityKeyIdentifier.get() == extensions.authorityKeyIdentifier)
            #expect(try parsed.nameConstraints.get() == extensions.nameConstraints)
            #expect(try parsed.subjectAlternativeNames.get() == extensions.subjectAlternativeNames)
            #expect(try parsed.authorityInformationAccess.get() == extensions.authorityInformationAccess)
            #expect(parsed.publicKeyPin == Pin.publicKey(of: certificate))
        }
    }

    @Test func theSameBytesAreDecodedOnce() throws {
        let cache = ParsedExtensionsCache()
        let leaf = Chains[.valid].leaf.certificate
        let first = cache.extensions(of: leaf)
        // A certificate parsed again from the same DER (as each handshake does) is the same certificate.
        let reparsed = try Certificate(derEncoded: leaf.derBytes)
        #expect(cache.extensions(of: reparsed) === first)
        // Another certificate is decoded on its own.
        let other = cache.extensions(of: Chains[.wrongHost].leaf.certificate)
        #expect(other !== first)
        #expect(
            try other.subjectAlternativeNames.get()
                == Chains[.wrongHost].leaf.certificate.extensions.subjectAlternativeNames
        )
        #expect(cache.count == 2)
    }

    @Test func theLeastRecentlyUsedIsEvictedAtCapacity() {
        let cache = ParsedExtensionsCache(capacity: 2)
        let a = Chains[.valid].leaf.certificate
        let b = Chains[.wrongHost].leaf.certificate
        let c = Chains[.wildcardSAN].leaf.certificate
        let first = cache.extensions(of: a)
        _ = cache.extensions(of: b)
        #expect(cache.extensions(of: a) === first)  // a is now more recent than b
        _ = cache.extensions(of: c)  // evicts b
        #expect(cache.count == 2)
        #expect(cache.extensions(of: a) === first)
        let bAgain = cache.extensions(of: b)  // decoded again, evicting c (a was used last)
        #expect(cache.extensions(of: b) === bAgain)
        #expect(cache.count == 2)
    }

    @Test func largeOrDisabledIsDecodedEveryTime() {
        let leaf = Chains[.valid].leaf.certificate
        let small = ParsedExtensionsCache(maximumBytes: leaf.tbsCertificateBytes.count - 1)
        #expect(small.extensions(of: leaf) !== small.extensions(of: leaf))
        #expect(small.count == 0)
        let disabled = ParsedExtensionsCache(capacity: 0)
        #expect(disabled.extensions(of: leaf) !== disabled.extensions(of: leaf))
        #expect(disabled.count == 0)
    }

    /// A malformed extension stays a decoding failure when reused, and the web PKI policy refuses the chain on
    /// every evaluation, not only on the first.
    @Test func aMalformedExtensionIsRefusedEveryTime() async throws {
        let chain = Chains[.valid]
        let intermediate = try #require(chain.intermediate)
        let key = P256.Signing.PrivateKey()
        let now = Date()
        let issuerKeyID = try #require(try intermediate.certificate.extensions.subjectKeyIdentifier).keyIdentifier
        let leaf = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(key.publicKey),
            notValidBefore: now - 3600,
            notValidAfter: now + 3600,
            issuer: intermediate.certificate.subject,
            subject: try DistinguishedName { CommonName(Chains.host) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                try ExtendedKeyUsage([.serverAuth])
                AuthorityKeyIdentifier(keyIdentifier: issuerKeyID)
                SubjectAlternativeNames([.dnsName(Chains.host)])
                // A KeyUsage whose value is not a BIT STRING.
                Certificate.Extension(oid: .X509ExtensionID.keyUsage, critical: true, value: [0x05, 0x00])
            },
            issuerPrivateKey: intermediate.privateKey
        )
        let decoded = ParsedExtensions.of(leaf)
        #expect(throws: (any Error).self) { try decoded.keyUsage.get() }
        let evaluator = DefaultTrustEvaluator(roots: Chains.roots(chain))
        for _ in 0..<2 {
            let decision = await evaluator.evaluate([leaf, intermediate.certificate], forHost: Chains.host, at: now)
            #expect(!decision.isTrusted)
            #expect(String(describing: decision.reasons).contains("malformed key usage extension"))
            // The failed decoding itself is what was reused.
            #expect(ParsedExtensions.of(leaf) === decoded)
        }
    }
}
