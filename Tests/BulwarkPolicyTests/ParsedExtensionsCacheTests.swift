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

    /// The web PKI verdicts remembered with a certificate are those of the checks themselves, in every place of a
    /// path and with each option.
    @Test func rememberedWebPKIVerdictsAreTheChecksOwn() {
        for certificate in Self.certificates {
            let parsed = ParsedExtensions(certificate)
            let verdicts = parsed.webPKI
            #expect(verdicts.key == WebPKIPolicy.checkKey(certificate))
            #expect(verdicts.serial == WebPKIPolicy.checkSerial(certificate))
            #expect(
                verdicts.leafRequiringServerAuth
                    == WebPKIPolicy.checkLeaf(certificate, parsed, requireServerAuth: true)
            )
            #expect(
                verdicts.leafNotRequiringServerAuth
                    == WebPKIPolicy.checkLeaf(certificate, parsed, requireServerAuth: false)
            )
            #expect(verdicts.intermediate == WebPKIPolicy.checkIntermediate(certificate, parsed))
            #expect(
                verdicts.anchorEnforcingRootProfile
                    == WebPKIPolicy.checkAnchor(certificate, parsed, enforcesRootProfile: true)
            )
            #expect(
                verdicts.anchorNotEnforcingRootProfile
                    == WebPKIPolicy.checkAnchor(certificate, parsed, enforcesRootProfile: false)
            )
        }
    }

    /// Keys over the same memory are equal without a comparison; keys over other memory are equal only when every
    /// byte is.
    @Test func bytesKeysCompareEveryByte() {
        let bytes: [UInt8] = Array(0..<100)
        var changedInTheMiddle = bytes
        changedInTheMiddle[50] ^= 1
        let key = CertificateBytesKey(bytes[...])
        #expect(key == CertificateBytesKey(bytes[...]))
        #expect(key == CertificateBytesKey(Array(bytes)[...]))
        #expect(key.hashValue == CertificateBytesKey(Array(bytes)[...]).hashValue)
        #expect(key != CertificateBytesKey(changedInTheMiddle[...]))
        #expect(key != CertificateBytesKey(bytes.dropLast()))
        #expect(CertificateBytesKey([1, 2][...]) != CertificateBytesKey([1, 3][...]))
        // A slice inside a larger array, as a TBSCertificate is cut out of its certificate (review helper-33).
        let inside = [0xFF] + bytes + [0xEE]
        #expect(CertificateBytesKey(inside[1...100]) == key)
        #expect(CertificateBytesKey(inside[1...100]).hashValue == key.hashValue)
        #expect(CertificateBytesKey(inside[0...99]) != key)
        #expect(CertificateBytesKey(inside[2...101]) != key)
        #expect(CertificateBytesKey(inside[1..<1]) == CertificateBytesKey([][...]))
    }

    /// Every byte is hashed (review helper-32): certificates crafted to share their length and the bytes at fixed
    /// places (a serial number, the end of a signature) would otherwise share one bucket of a cache, and each lookup
    /// would compare them all, up to 16 KiB each, under the cache's lock.
    @Test func bytesKeysHashEveryByte() {
        let bytes: [UInt8] = (0..<2_048).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let hash = CertificateBytesKey(bytes[...]).hashValue
        let collisions = bytes.indices.count { position in
            var changed = bytes
            changed[position] ^= 0x01
            return CertificateBytesKey(changed[...]).hashValue == hash
        }
        #expect(collisions == 0, "\(collisions) of 2,048 one-byte changes hash alike")
    }

    /// The storage of the caches keyed by `TBSCertificate` bytes (review helper-32): bytes that share a prefix and
    /// differ only at the end get their own values, in front (found by memory) and behind (by every byte); a copy of
    /// the bytes in other memory finds the value behind; the least recently used is evicted.
    @Test func tbsCertificateMapTellsBytesApart() {
        var map = TBSCertificateMap<Int>(capacity: 16)
        // 20 inputs of 2 KiB, equal but for the last two bytes, more than the front holds.
        let inputs: [[UInt8]] = (0..<20).map { index in
            var bytes = [UInt8](repeating: 0x30, count: 2_048)
            bytes[2_046] = UInt8(index >> 8)
            bytes[2_047] = UInt8(index & 0xFF)
            return bytes
        }
        for (index, bytes) in inputs.enumerated().prefix(16) {
            #expect(map.value(for: bytes[...]) == nil)
            map.insert(index, for: bytes[...])
        }
        #expect(map.count == 16)
        for (index, bytes) in inputs.enumerated().prefix(16) {
            // The same memory (the front, for the last few) and a copy elsewhere (the map behind).
            #expect(map.value(for: bytes[...]) == index)
            #expect(map.value(for: Array(bytes)[...]) == index)
            #expect(map.storedValue(for: Array(bytes)[...]) == index)
        }
        for bytes in inputs.suffix(4) {
            #expect(map.value(for: bytes[...]) == nil)
            #expect(map.storedValue(for: bytes[...]) == nil)
        }
        // Input 0 is used again; four new ones then evict 1 to 4, the least recently used.
        #expect(map.value(for: Array(inputs[0])[...]) == 0)
        for (index, bytes) in inputs.enumerated().suffix(4) { map.insert(index, for: bytes[...]) }
        #expect(map.count == 16)
        #expect(map.storedValue(for: Array(inputs[0])[...]) == 0)
        for bytes in inputs[1...4] { #expect(map.storedValue(for: Array(bytes)[...]) == nil) }
        for (index, bytes) in inputs.enumerated().dropFirst(5) {
            #expect(map.value(for: Array(bytes)[...]) == index)
        }
    }

    /// A presented chain's intermediates' store is built once for the same certificates, and afresh for a chain
    /// parsed again or with other intermediates; it holds exactly the presented intermediates.
    @Test func intermediatesStoreIsKeptWithTheParsedChain() async throws {
        let cache = PresentedIntermediatesCache()
        let chain = Chains[.valid]
        let presented = chain.presentedChain
        #expect(presented.count == 2)
        let store = cache.store(forIntermediatesOf: presented)
        #expect(store == CertificateStore(presented.dropFirst()))
        #expect(cache.count == 1)
        // The same certificates again (as a client's parse cache hands them out): no new entry.
        #expect(cache.store(forIntermediatesOf: Array(presented)) == store)
        #expect(cache.count == 1)
        // The same bytes parsed again are other memory: a store of their own, with the same contents.
        let reparsed = try presented.map { try Certificate(derEncoded: $0.derBytes) }
        #expect(cache.store(forIntermediatesOf: reparsed) == store)
        #expect(cache.count == 2)
        // Another chain's intermediates.
        let other = Chains[.wrongHost].presentedChain
        #expect(cache.store(forIntermediatesOf: other) == CertificateStore(other.dropFirst()))
        // A leaf alone has no intermediates, and is not remembered.
        #expect(cache.store(forIntermediatesOf: [presented[0]]) == CertificateStore())
        #expect(cache.count <= 3)
    }
}
