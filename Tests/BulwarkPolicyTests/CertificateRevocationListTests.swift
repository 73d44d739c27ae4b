import BulwarkTestHelpers
import BulwarkTestSupport
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

@testable import BulwarkPolicy

/// A CA with a P-256 key the tests sign lists with, and certificates it issues.
struct CRLAuthority {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    let key = P256.Signing.PrivateKey()
    let name: DistinguishedName
    let certificate: Certificate

    init(name: String = "Bulwark CRL Test CA", keyUsage: KeyUsage = KeyUsage(keyCertSign: true, cRLSign: true)) throws {
        self.name = try DistinguishedName { CommonName(name) }
        let key = self.key
        self.certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(key.publicKey),
            notValidBefore: Self.now - 86_400 * 365,
            notValidAfter: Self.now + 86_400 * 365,
            issuer: self.name,
            subject: self.name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(keyUsage)
                SubjectKeyIdentifier(hash: .init(key.publicKey))
            },
            issuerPrivateKey: .init(key)
        )
    }

    func issue(
        serial: Certificate.SerialNumber,
        isCA: Bool = false,
        distributionPoints: [String] = []
    ) throws
        -> Certificate
    {
        let leafKey = P256.Signing.PrivateKey()
        var extensions = Certificate.Extensions()
        let constraints: BasicConstraints = isCA ? .isCertificateAuthority(maxPathLength: 0) : .notCertificateAuthority
        try extensions.append(Certificate.Extension(constraints, critical: true))
        if !distributionPoints.isEmpty {
            try extensions.append(CRLBuilder.distributionPoints(distributionPoints))
        }
        return try Certificate(
            version: .v3,
            serialNumber: serial,
            publicKey: .init(leafKey.publicKey),
            notValidBefore: Self.now - 86_400,
            notValidAfter: Self.now + 86_400 * 90,
            issuer: self.name,
            subject: try DistinguishedName { CommonName("leaf \(serial)") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions,
            issuerPrivateKey: .init(self.key)
        )
    }

    func builder() -> CRLBuilder {
        CRLBuilder(issuer: self.name, thisUpdate: Self.now - 3_600, nextUpdate: Self.now + 86_400 * 7)
    }
}

@Suite("Certificate revocation lists: parsing and checking")
struct CertificateRevocationListTests {
    let authority: CRLAuthority
    let revokedSerial: Certificate.SerialNumber = 0x1001
    let goodSerial: Certificate.SerialNumber = 0x1002

    init() throws {
        self.authority = try CRLAuthority()
    }

    func list(_ change: (inout CRLBuilder) throws -> Void = { _ in }) throws -> CertificateRevocationList {
        var builder = self.authority.builder()
        builder.entries = [.init(self.revokedSerial, revokedAt: CRLAuthority.now - 7_200, reason: 1)]
        try change(&builder)
        return try CertificateRevocationList(derEncoded: builder.der(signedWith: self.authority.key))
    }

    func status(
        _ list: CertificateRevocationList,
        serial: Certificate.SerialNumber? = nil,
        at time: Date = CRLAuthority.now
    ) throws(RevocationError) -> RevocationStatus {
        let certificate = try! self.authority.issue(serial: serial ?? self.goodSerial)
        return try list.status(of: certificate, issuer: self.authority.certificate, at: time)
    }

    func code(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as RevocationError {
            #expect(!error.description.isEmpty)
            return error.code
        } catch {
            Issue.record("an untyped error: \(error)")
            return "untyped"
        }
    }

    @Test func aCertificateNotOnTheListIsGood() throws {
        let list = try self.list()
        #expect(list.count == 1)
        #expect(list.number == [1])
        let status = try self.status(list)
        #expect(!status.isRevoked)
        #expect(status.code == "good")
        #expect(status.source.contains("Bulwark CRL Test CA"))
    }

    @Test func aRevokedCertificateIsReportedWithItsDateAndReason() throws {
        let list = try self.list()
        let status = try self.status(list, serial: self.revokedSerial)
        #expect(status.isRevoked)
        #expect(status.revocation?.reason == .keyCompromise)
        #expect(status.revocation?.revocationDate == CRLAuthority.now - 7_200)
        #expect(status.description.contains("key compromise"), "\(status)")
    }

    @Test func aListSignedByAnotherKeyIsRefused() throws {
        var builder = self.authority.builder()
        builder.entries = []
        let forged = try CertificateRevocationList(derEncoded: builder.der(signedWith: P256.Signing.PrivateKey()))
        #expect(self.code { _ = try self.status(forged) } == "bad_signature")
    }

    /// The list remembers issuers whose key its signature verified with; another key of the same name must still be
    /// checked.
    @Test func aVerifiedSignatureIsRememberedForItsKeyOnly() throws {
        let list = try self.list()
        _ = try self.status(list)  // verifies, and remembers the key
        #expect(list.isSigned(by: self.authority.certificate))
        let twin = try CRLAuthority()  // the same name, another key
        #expect(!list.isSigned(by: twin.certificate))
        let leaf = try twin.issue(serial: self.goodSerial)
        let refused = #expect(throws: RevocationError.self) {
            _ = try list.status(of: leaf, issuer: twin.certificate, at: CRLAuthority.now)
        }
        #expect(refused?.code == "bad_signature" || refused?.code == "wrong_issuer", "\(String(describing: refused))")
    }

    @Test func aListFromAnotherIssuerIsRefused() throws {
        let other = try CRLAuthority(name: "Another CA")
        let list = try CertificateRevocationList(derEncoded: other.builder().der(signedWith: other.key))
        #expect(self.code { _ = try self.status(list) } == "wrong_issuer")
    }

    @Test func anIssuerWhoseKeyUsageLacksCRLSignIsRefused() throws {
        let authority = try CRLAuthority(keyUsage: KeyUsage(keyCertSign: true))
        let list = try CertificateRevocationList(derEncoded: authority.builder().der(signedWith: authority.key))
        let leaf = try authority.issue(serial: 5)
        #expect(
            self.code { _ = try list.status(of: leaf, issuer: authority.certificate, at: CRLAuthority.now) }
                == "issuer_cannot_sign_lists"
        )
    }

    @Test func freshnessIsCheckedWithTheClockSkewAllowance() throws {
        let list = try self.list()
        let nextUpdate = try #require(list.nextUpdate)
        #expect(throws: Never.self) { _ = try self.status(list, at: nextUpdate + 299) }
        #expect(self.code { _ = try self.status(list, at: nextUpdate + 301) } == "stale")
        #expect(throws: Never.self) { _ = try self.status(list, at: list.thisUpdate - 299) }
        #expect(self.code { _ = try self.status(list, at: list.thisUpdate - 301) } == "not_yet_valid")
        let undated = try self.list { $0.nextUpdate = nil }
        #expect(self.code { _ = try self.status(undated) } == "missing_next_update")
    }

    @Test func unknownCriticalExtensionsAreRefusedAndUnknownOthersIgnored() throws {
        let unknown: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 99_999, 1]
        #expect(
            self.code {
                _ = try self.list { $0.extensions.append(.init(oid: unknown, critical: true, value: [0x05, 0x00])) }
            } == "unknown_critical_extension"
        )
        let tolerated = try self.list {
            $0.extensions.append(.init(oid: unknown, critical: false, value: [0x05, 0x00]))
        }
        #expect(try !self.status(tolerated).isRevoked)
        #expect(
            self.code {
                _ = try self.list {
                    $0.entries[0].extensions.append(.init(oid: unknown, critical: true, value: [0x05, 0x00]))
                }
            } == "unknown_critical_extension"
        )
    }

    /// RFC 5280 5.2.3: the CRL number MUST be present and MUST NOT be critical (x509-limbo's
    /// `crl::crlnumber-missing` and `crl::crlnumber-critical` were accepted before this).
    @Test func aListWithoutACRLNumberOrWithACriticalOneIsRefused() throws {
        let missing = self.code { _ = try self.list { $0.extensions.removeAll { $0.oid == [2, 5, 29, 20] } } }
        #expect(missing == "malformed")
        let critical = self.code {
            _ = try self.list {
                $0.extensions = $0.extensions.map { item in
                    item.oid == [2, 5, 29, 20] ? .init(oid: item.oid, critical: true, value: item.value) : item
                }
            }
        }
        #expect(critical == "malformed")
    }

    @Test func deltaIndirectAndReasonPartitionedListsAreRefusedClearly() throws {
        let delta = Certificate.Extension(oid: [2, 5, 29, 27], critical: true, value: [0x02, 0x01, 0x01])
        var refusal: RevocationError?
        do { _ = try self.list { $0.extensions.append(delta) } } catch { refusal = error as? RevocationError }
        #expect(refusal?.code == "unsupported")
        #expect(refusal?.description == "the revocation list is a delta CRL, which Bulwark does not support")
        #expect(
            self.code {
                _ = try self.list { $0.extensions.append(try CRLBuilder.issuingDistributionPoint(indirect: true)) }
            }
                == "unsupported"
        )
        let certificateIssuer = Certificate.Extension(oid: [2, 5, 29, 29], critical: true, value: [0x30, 0x00])
        #expect(self.code { _ = try self.list { $0.entries[0].extensions.append(certificateIssuer) } } == "unsupported")
        #expect(self.code { _ = try self.list { $0.entries[0].reason = 8 } } == "malformed")
    }

    @Test func theIssuingDistributionPointLimitsWhatTheListCovers() throws {
        let caOnly = try self.list {
            $0.extensions.append(try CRLBuilder.issuingDistributionPoint(onlyCACertificates: true))
        }
        #expect(self.code { _ = try self.status(caOnly) } == "out_of_scope")
        let userOnly = try self.list {
            $0.extensions.append(try CRLBuilder.issuingDistributionPoint(onlyUserCertificates: true))
        }
        #expect(try !self.status(userOnly).isRevoked)
        let intermediate = try self.authority.issue(serial: 77, isCA: true)
        #expect(
            self.code {
                _ = try userOnly.status(of: intermediate, issuer: self.authority.certificate, at: CRLAuthority.now)
            }
                == "out_of_scope"
        )
        let pointed = try self.list {
            $0.extensions.append(try CRLBuilder.issuingDistributionPoint(uris: ["http://crl.bulwark.test/a.crl"]))
        }
        let matching = try self.authority.issue(serial: 78, distributionPoints: ["http://crl.bulwark.test/a.crl"])
        let other = try self.authority.issue(serial: 79, distributionPoints: ["http://crl.bulwark.test/b.crl"])
        let issuer = self.authority.certificate
        #expect(try !pointed.status(of: matching, issuer: issuer, at: CRLAuthority.now).isRevoked)
        #expect(self.code { _ = try pointed.status(of: other, issuer: issuer, at: CRLAuthority.now) } == "out_of_scope")
        #expect(try CRLDistributionPoints.uris(of: matching) == ["http://crl.bulwark.test/a.crl"])
    }

    @Test func sha1AndUnknownSignatureAlgorithmsAreRefused() throws {
        #expect(self.code { _ = try self.list { $0.algorithm = [1, 2, 840, 113_549, 1, 1, 5] } } == "weak_signature")
        #expect(self.code { _ = try self.list { $0.algorithm = [1, 2, 840, 10045, 4, 1] } } == "weak_signature")
    }

    @Test func thePEMFormIsRead() throws {
        var builder = self.authority.builder()
        builder.entries = [.init(self.revokedSerial, revokedAt: CRLAuthority.now - 60)]
        let list = try CertificateRevocationList(pemEncoded: builder.pem(signedWith: self.authority.key))
        #expect(list.entry(for: self.revokedSerial) != nil)
        #expect(
            self.code {
                _ = try CertificateRevocationList(
                    pemEncoded: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
                )
            }
                == "malformed"
        )
    }

    @Test func aListOverTheSizeLimitIsRefusedBeforeParsing() throws {
        let bytes = try self.authority.builder().der(signedWith: self.authority.key)
        let error = #expect(throws: RevocationError.self) {
            _ = try CertificateRevocationList(derEncoded: bytes, maximumSize: bytes.count - 1)
        }
        #expect(error?.code == "too_large")
    }

    /// Every truncation and every single-byte change of a valid list throws a typed error: none parses into a list
    /// that then vouches for the certificate.
    @Test func everyTruncationAndByteFlipIsRefused() throws {
        var builder = self.authority.builder()
        builder.entries = [.init(self.revokedSerial, revokedAt: CRLAuthority.now - 60, reason: 4)]
        let bytes = try builder.der(signedWith: self.authority.key)
        let leaf = try self.authority.issue(serial: self.revokedSerial)
        for length in 0..<bytes.count {
            #expect(self.code { _ = try CertificateRevocationList(derEncoded: Array(bytes[..<length])) } != nil)
        }
        var generator = SeededGenerator(seed: 18)
        for index in bytes.indices {
            var flipped = bytes
            flipped[index] ^= UInt8.random(in: 1...255, using: &generator)
            let outcome = self.code {
                let list = try CertificateRevocationList(derEncoded: flipped)
                _ = try list.status(of: leaf, issuer: self.authority.certificate, at: CRLAuthority.now)
            }
            #expect(outcome != nil, "a list changed at byte \(index) was accepted")
        }
    }

    @Test func garbageIsATypedError() {
        var generator = SeededGenerator(seed: 1)
        for length in [0, 1, 2, 16, 300] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(self.code { _ = try CertificateRevocationList(derEncoded: bytes) } == "malformed")
        }
    }

    /// A list of 200,000 entries (about 6 MB) parses, and lookups are hash-table lookups.
    @Test func aLargeListIsLookedUpByHash() throws {
        var builder = self.authority.builder()
        let revokedAt = CRLAuthority.now - 86_400
        builder.entries = (1...200_000).map {
            .init(Certificate.SerialNumber(bytes: Self.bytes(of: $0)), revokedAt: revokedAt)
        }
        let bytes = try builder.der(signedWith: self.authority.key)
        let list = try CertificateRevocationList(derEncoded: bytes)
        #expect(list.count == 200_000)
        #expect(list.entry(for: Certificate.SerialNumber(bytes: Self.bytes(of: 123_456)))?.revocationDate == revokedAt)
        #expect(list.entry(for: Certificate.SerialNumber(bytes: Self.bytes(of: 200_001))) == nil)
    }

    /// The big-endian INTEGER content of `value` (a leading zero where the top bit is set).
    static func bytes(of value: Int) -> [UInt8] {
        var bytes = withUnsafeBytes(of: UInt64(value).bigEndian, Array.init)
        while bytes.count > 1 && bytes[0] == 0 && bytes[1] & 0x80 == 0 { bytes.removeFirst() }
        return bytes
    }
}
