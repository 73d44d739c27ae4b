import BulwarkTestHelpers
import Foundation
import Testing
import X509

@testable import BulwarkPolicy

/// Bulwark's OCSP requests answered by a real responder (`openssl ocsp -index`, reading the request from a file: no
/// network), and the responses read and verified by Bulwark.
@Suite("OCSP responses from openssl ocsp", .tags(.externalPeers), .serialized)
struct OCSPResponseOpenSSLTests {
    static let configuration = """
        [ ca ]
        default_ca = CA_default
        [ CA_default ]
        dir = .
        database = $dir/index.txt
        new_certs_dir = $dir/newcerts
        serial = $dir/serial
        default_md = sha256
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
        authorityInfoAccess = OCSP;URI:http://127.0.0.1:1/
        [ v3_ocsp ]
        basicConstraints = critical,CA:false
        keyUsage = critical,digitalSignature
        extendedKeyUsage = OCSPSigning

        """

    /// A CA issuing `good`, `revoked` and a delegated `responder` (EKU OCSPSigning); `revoked` is revoked for key
    /// compromise in the CA's index.
    static let makeCA = """
        set -e
        mkdir -p newcerts && touch index.txt && echo 1000 > serial
        openssl ecparam -name prime256v1 -genkey -noout -out ca.key
        openssl req -x509 -new -key ca.key -subj "/CN=Bulwark OCSP OpenSSL CA" -days 30 -config ca.cnf \\
          -extensions v3_ca -out ca.pem
        for n in good revoked responder; do
          ext=v3_leaf; [ $n = responder ] && ext=v3_ocsp
          openssl ecparam -name prime256v1 -genkey -noout -out $n.key
          openssl req -new -key $n.key -subj "/CN=$n.bulwark.test" -config ca.cnf -out $n.csr
          openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -extensions $ext -days 7 \\
            -in $n.csr -out $n.pem -notext 2>/dev/null
        done
        openssl ca -config ca.cnf -cert ca.pem -keyfile ca.key -revoke revoked.pem -crl_reason keyCompromise 2>/dev/null
        """

    /// The responder answers each request file with a response signed by the delegated responder.
    static let respond = """
        set -e
        for n in good revoked; do
          openssl ocsp -index index.txt -CA ca.pem -rsigner responder.pem -rkey responder.key -rmd sha256 \\
            -ndays 1 -reqin $n.req -respout $n.resp
        done
        """

    @Test func aRealRespondersAnswersAreReadAndVerified() async throws {
        let made = try await ProcessRunner.run(
            URL(fileURLWithPath: "/bin/bash"),
            ["-c", Self.makeCA],
            files: ["ca.cnf": Array(Self.configuration.utf8)]
        )
        try #require(made.status == 0, "openssl ca failed: \(made.stderr)")
        func certificate(_ name: String) throws -> Certificate {
            try Certificate(pemEncoded: String(decoding: made.files["\(name).pem"] ?? [], as: UTF8.self))
        }
        let issuer = try certificate("ca")
        let good = try certificate("good")
        let revoked = try certificate("revoked")
        let goodRequest = try OCSPRequest(certificate: good, issuer: issuer)
        let revokedRequest = try OCSPRequest(certificate: revoked, issuer: issuer)
        var files = made.files.filter {
            ["index.txt", "index.txt.attr", "ca.pem"].contains($0.key) || $0.key.hasPrefix("responder.")
        }
        files["good.req"] = goodRequest.derBytes
        files["revoked.req"] = revokedRequest.derBytes
        let answered = try await ProcessRunner.run(
            URL(fileURLWithPath: "/bin/bash"),
            ["-c", Self.respond],
            files: files
        )
        try #require(answered.status == 0, "openssl ocsp failed: \(answered.stderr)")

        let goodResponse = try OCSPResponse(derEncoded: answered.files["good.resp"] ?? [])
        #expect(goodResponse.certificates.count == 1)
        #expect(goodResponse.nonce == goodRequest.nonce, "openssl echoes the request's nonce")
        let goodStatus = try goodResponse.status(for: goodRequest, certificate: good, issuer: issuer)
        #expect(goodStatus.code == "good")
        #expect(goodStatus.method == .ocsp)
        #expect(goodStatus.source == "CN=responder.bulwark.test")
        #expect(goodStatus.nextUpdate != nil)

        let revokedResponse = try OCSPResponse(derEncoded: answered.files["revoked.resp"] ?? [])
        let revokedStatus = try revokedResponse.status(for: revokedRequest, certificate: revoked, issuer: issuer)
        #expect(revokedStatus.isRevoked)
        #expect(revokedStatus.revocation?.reason == .keyCompromise)
        #expect(revokedStatus.revocation?.serialNumber == revoked.serialNumber)

        // The good certificate's answer does not answer for the revoked one, nor is it taken with another nonce.
        let crossed = #expect(throws: RevocationError.self) {
            _ = try goodResponse.status(for: revokedRequest, certificate: revoked, issuer: issuer)
        }
        #expect(crossed?.code == "no_matching_response" || crossed?.code == "nonce_mismatch")
        let other = try OCSPRequest(certificate: good, issuer: issuer)
        let replayed = #expect(throws: RevocationError.self) {
            _ = try goodResponse.status(for: other, certificate: good, issuer: issuer)
        }
        #expect(replayed?.code == "nonce_mismatch")
    }
}
