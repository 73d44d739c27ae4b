import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import Testing
import X509

@testable import BulwarkPolicy

/// A list of a million revoked certificates (about 30 MB, under the 32 MiB cap): it parses, its serials are found
/// through the hash table, and a checked certificate gets the right answer. How long a lookup takes is measured in
/// the benchmarks, not here.
@Suite("A revocation list with a million entries", .tags(.compute))
struct CertificateRevocationListScaleTests {
    @Test func aMillionEntriesParseAndEveryLookupIsRight() throws {
        let authority = try CRLAuthority()
        var builder = authority.builder()
        let count = 1_000_000
        builder.entries.reserveCapacity(count)
        let revokedAt = CRLAuthority.now - 86_400
        for index in 0..<count {
            builder.entries.append(.init(Certificate.SerialNumber(0x10_0000 + index), revokedAt: revokedAt))
        }
        let bytes = try builder.der(signedWith: authority.key)
        #expect(bytes.count > 20_000_000 && bytes.count < CertificateRevocationList.defaultMaximumSize)
        let list = try CertificateRevocationList(derEncoded: bytes)
        #expect(list.count == count)
        for serial in [0x10_0000, 0x10_0000 + count / 2, 0x10_0000 + count - 1] {
            #expect(list.entry(for: Certificate.SerialNumber(serial)) != nil)
        }
        #expect(list.entry(for: Certificate.SerialNumber(0x0F_FFFF)) == nil)
        #expect(list.entry(for: Certificate.SerialNumber(0x10_0000 + count)) == nil)
        let revoked = try authority.issue(serial: Certificate.SerialNumber(0x10_0000 + 777_777))
        let good = try authority.issue(serial: Certificate.SerialNumber(0x20_0000))
        #expect(try list.status(of: revoked, issuer: authority.certificate, at: CRLAuthority.now).isRevoked)
        #expect(try !list.status(of: good, issuer: authority.certificate, at: CRLAuthority.now).isRevoked)
        // One byte over the cap is refused before parsing.
        let capped = #expect(throws: RevocationError.self) {
            _ = try CertificateRevocationList(derEncoded: bytes, maximumSize: bytes.count - 1)
        }
        #expect(capped?.code == "too_large")
    }
}
