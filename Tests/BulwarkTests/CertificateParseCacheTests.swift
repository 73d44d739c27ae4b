import BulwarkTestSupport
import Testing
import X509

@testable import Bulwark

@Suite("Parsed-certificate cache")
struct CertificateParseCacheTests {
    static let chains = (0..<3).map { _ in try! TestChain.make(host: "api.bulwark.test") }

    @Test func theSameBytesGiveTheSameCertificate() throws {
        let cache = CertificateParseCache()
        let der = Self.chains[0].leaf.certificate.derBytes
        let first = try cache.certificate(derEncoded: der)
        let second = try cache.certificate(derEncoded: der)
        #expect(first == Self.chains[0].leaf.certificate)
        #expect(second == first)
        #expect(cache.count == 1)
        let other = Self.chains[1].leaf.certificate
        #expect(try cache.certificate(derEncoded: other.derBytes) == other)
        #expect(cache.count == 2)
    }

    @Test func unparsableAndOversizedCertificatesAreNotRemembered() throws {
        let cache = CertificateParseCache(capacity: 4, maximumBytes: 64)
        #expect(throws: (any Error).self) { try cache.certificate(derEncoded: [0x30, 0x03, 0x02, 0x01, 0x01]) }
        let leaf = Self.chains[0].leaf.certificate
        #expect(try cache.certificate(derEncoded: leaf.derBytes) == leaf)
        #expect(cache.count == 0)
    }

    @Test func theLeastRecentlyUsedIsEvicted() throws {
        let cache = CertificateParseCache(capacity: 2)
        let ders = Self.chains.map { $0.leaf.certificate.derBytes }
        _ = try cache.certificate(derEncoded: ders[0])
        _ = try cache.certificate(derEncoded: ders[1])
        _ = try cache.certificate(derEncoded: ders[0])
        _ = try cache.certificate(derEncoded: ders[2])  // evicts ders[1]
        #expect(cache.count == 2)
        for (index, der) in ders.enumerated() {
            #expect(try cache.certificate(derEncoded: der) == Self.chains[index].leaf.certificate)
        }
    }
}
