import BulwarkTestHelpers
import Foundation
import Testing
import X509

@testable import BulwarkPolicy

/// Revocation lists made by a real CA (`openssl ca -revoke`, `openssl ca -gencrl`), read and checked by Bulwark.
@Suite("Certificate revocation lists from openssl ca", .tags(.externalPeers), .serialized)
struct CertificateRevocationListOpenSSLTests {
    static let configuration = """
        [ ca ]
        default_ca = CA_default
        [ CA_default ]
        dir = ./ca
        database = $dir/index.txt
        new_certs_dir = $dir/newcerts
        serial = $dir/serial
        crlnumber = $dir/crlnumber
        default_md = sha256
        default_crl_days = 7
        policy = policy_any
        [ policy_any ]
        commonName = supplied
        [ req ]
        distinguished_name = dn
        [ dn ]
        [ v3_ca ]
        basicConstraints = critical,CA:true
        keyUsage = critical,keyCertSign,cRLSign
        subjectKeyIdentifier = hash
        [ v3_leaf ]
        basicConstraints = critical,CA:false
        keyUsage = critical,digitalSignature
        crlDistributionPoints = URI:http://crl.bulwark.test/ca.crl
        [ crl_ext ]
        authorityKeyIdentifier = keyid:always

        """

    /// Makes a CA named `name` in the working directory, issues `good` and `revoked`, revokes the second for key
    /// compromise and writes the CRL (PEM and DER).
    static let script = """
        set -e
        mkdir -p ca/newcerts && touch ca/index.txt && echo 1000 > ca/serial && echo 01 > ca/crlnumber
        openssl ecparam -name prime256v1 -genkey -noout -out ca.key
        openssl req -x509 -new -key ca.key -subj "/CN=$1" -days 30 -config ca.cnf -extensions v3_ca -out ca.pem
        for n in good revoked; do
          openssl ecparam -name prime256v1 -genkey -noout -out $n.key
          openssl req -new -key $n.key -subj "/CN=$n.bulwark.test" -config ca.cnf -out $n.csr
          openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -extensions v3_leaf -days 7 \\
            -in $n.csr -out $n.pem -notext 2>/dev/null
        done
        openssl ca -config ca.cnf -cert ca.pem -keyfile ca.key -revoke revoked.pem -crl_reason keyCompromise 2>/dev/null
        openssl ca -config ca.cnf -cert ca.pem -keyfile ca.key -gencrl -crlexts crl_ext -out ca.crl 2>/dev/null
        openssl crl -in ca.crl -outform DER -out ca.der
        openssl crl -in ca.crl -noout -text | sed -n 's/^ *Serial Number: *//p' > revoked-serials.txt
        """

    struct Authority {
        let certificate: Certificate
        let good: Certificate
        let revoked: Certificate
        let pem: String
        let der: [UInt8]
        let revokedSerials: [String]
    }

    static func makeAuthority(named name: String) async throws -> Authority {
        let result = try await ProcessRunner.run(
            URL(fileURLWithPath: "/bin/bash"),
            ["-c", Self.script, "make-ca", name],
            files: ["ca.cnf": Array(Self.configuration.utf8)]
        )
        guard result.status == 0 else {
            throw ProcessRunner.Failure(description: "openssl ca failed (\(result.status)): \(result.stderr)")
        }
        func text(_ file: String) -> String { String(decoding: result.files[file] ?? [], as: UTF8.self) }
        return Authority(
            certificate: try Certificate(pemEncoded: text("ca.pem")),
            good: try Certificate(pemEncoded: text("good.pem")),
            revoked: try Certificate(pemEncoded: text("revoked.pem")),
            pem: text("ca.crl"),
            der: result.files["ca.der"] ?? [],
            revokedSerials: text("revoked-serials.txt").split(separator: "\n").map(String.init)
        )
    }

    @Test func aRealCAsListRevokesWhatItRevokedAndNothingElse() async throws {
        let authority = try await Self.makeAuthority(named: "Bulwark OpenSSL CA")
        let list = try CertificateRevocationList(pemEncoded: authority.pem)
        let fromDER = try CertificateRevocationList(derEncoded: authority.der)
        #expect(fromDER.count == list.count)
        #expect(list.count == 1)
        #expect(authority.revokedSerials.count == 1)
        #expect(list.number == [1])
        #expect(list.authorityKeyIdentifier != nil)
        // OpenSSL prints the serial in upper-case hexadecimal; Bulwark's entry is for the same number.
        let serialHex = authority.revoked.serialNumber.bytes.map { String(format: "%02X", $0) }.joined()
        #expect(authority.revokedSerials.first == serialHex)
        let revoked = try list.status(of: authority.revoked, issuer: authority.certificate)
        #expect(revoked.isRevoked)
        #expect(revoked.revocation?.reason == .keyCompromise)
        #expect(revoked.source.contains("Bulwark OpenSSL CA"))
        let good = try list.status(of: authority.good, issuer: authority.certificate)
        #expect(!good.isRevoked)
    }

    @Test func aListOutOfDateOrFromAnotherCAIsRefused() async throws {
        let authority = try await Self.makeAuthority(named: "Bulwark OpenSSL CA")
        let other = try await Self.makeAuthority(named: "Another OpenSSL CA")
        let list = try CertificateRevocationList(pemEncoded: authority.pem)
        let nextUpdate = try #require(list.nextUpdate)
        let stale = #expect(throws: RevocationError.self) {
            _ = try list.status(of: authority.good, issuer: authority.certificate, at: nextUpdate + 3_600)
        }
        #expect(stale?.code == "stale")
        let foreign = try CertificateRevocationList(pemEncoded: other.pem)
        let refused = #expect(throws: RevocationError.self) {
            _ = try foreign.status(of: authority.revoked, issuer: authority.certificate)
        }
        #expect(refused?.code == "wrong_issuer")
        // Same name, other key: the other CA's list, re-labelled with this CA's name, fails on the signature.
        let twin = try await Self.makeAuthority(named: "Bulwark OpenSSL CA")
        let impostor = try CertificateRevocationList(pemEncoded: twin.pem)
        let forged = #expect(throws: RevocationError.self) {
            _ = try impostor.status(of: authority.revoked, issuer: authority.certificate)
        }
        #expect(forged?.code == "wrong_issuer" || forged?.code == "bad_signature", "\(String(describing: forged))")
    }
}
