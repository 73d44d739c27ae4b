import BulwarkTestSupport
import Testing
import X509

@testable import Bulwark

/// The chains the parse cache keeps whole: handed out only for the same bytes, in the same order, and equal to what
/// parsing those bytes gives.
@Suite("Parsed chains kept whole")
struct ParsedChainMemoTests {
    static let chains = (0..<2).map { _ in try! TestChain.make(host: "api.bulwark.test") }

    static func der(_ chain: TestChain) -> [[UInt8]] {
        chain.presentedChain.map(\.derBytes)
    }

    @Test func aRememberedChainIsHandedOutForTheSameBytesOnly() throws {
        let cache = CertificateParseCache()
        let der = Self.der(Self.chains[0])
        #expect(cache.chain(derEncoded: der) == nil)
        let parsed = try der.map { try cache.certificate(derEncoded: $0) }
        cache.rememberChain(parsed, derEncoded: der)
        // The same bytes, in arrays of their own (each handshake re-encodes them): the remembered certificates,
        // equal to parsing the bytes.
        let copy = der.map { Array($0) }
        #expect(try cache.chain(derEncoded: copy) == copy.map { try Certificate(derEncoded: $0) })
        // Another chain, the same certificates in another order or fewer of them, and one changed byte: nothing.
        #expect(cache.chain(derEncoded: Self.der(Self.chains[1])) == nil)
        #expect(cache.chain(derEncoded: der.reversed()) == nil)
        #expect(cache.chain(derEncoded: Array(der.prefix(1))) == nil)
        var changed = der
        changed[1][changed[1].count - 1] ^= 1
        #expect(cache.chain(derEncoded: changed) == nil)
        var leafOnlyChanged = der
        leafOnlyChanged[0][leafOnlyChanged[0].count / 2] ^= 1
        #expect(cache.chain(derEncoded: leafOnlyChanged) == nil)
        #expect(cache.chainCount == 1)
    }

    @Test func chainsAreBoundedAndNeverKeptWhenDisabledOrMismatched() throws {
        let disabled = CertificateParseCache(capacity: 0)
        let der = Self.der(Self.chains[0])
        disabled.rememberChain(Self.chains[0].presentedChain, derEncoded: der)
        #expect(disabled.chain(derEncoded: der) == nil)
        let cache = CertificateParseCache()
        // Certificates that are not the bytes' own count are refused; so are oversized certificates.
        cache.rememberChain(Array(Self.chains[0].presentedChain.prefix(1)), derEncoded: der)
        #expect(cache.chain(derEncoded: der) == nil)
        let small = CertificateParseCache(maximumBytes: 16)
        small.rememberChain(Self.chains[0].presentedChain, derEncoded: der)
        #expect(small.chain(derEncoded: der) == nil)
        // At most chainCapacity chains: the oldest is forgotten.
        var ders: [[[UInt8]]] = []
        for _ in 0...CertificateParseCache.chainCapacity {
            let chain = try TestChain.make(host: "api.bulwark.test")
            ders.append(Self.der(chain))
            cache.rememberChain(chain.presentedChain, derEncoded: ders.last!)
        }
        #expect(cache.chainCount == CertificateParseCache.chainCapacity)
        #expect(cache.chain(derEncoded: ders[0]) == nil)
        #expect(cache.chain(derEncoded: ders.last!) != nil)
    }
}
