import BulwarkPolicy
import Crypto
import Foundation
import X509

/// Certificate revocation lists (issue 18's parser and checker), mutated from lists a real CA made
/// (`openssl ca -gencrl`: an empty list, one revoking a certificate for key compromise, one with an issuing
/// distribution point; Fuzz/Corpus/crl). Input: the DER bytes of a list. Oracles:
/// - parsing ends in a list or a `RevocationError` (typed by the signature of the initializer), never a crash;
/// - a parsed list is consistent: every revoked serial is found by `entry(for:)`, and parsing the same bytes again
///   gives the same issuer, times and count;
/// - a list that vouches for a certificate (``CertificateRevocationList/status(of:issuer:at:clockSkew:)`` returns)
///   carries a signature that verifies, checked here directly with swift-crypto, with the CA's key over the bytes it
///   signed: no mutation forges a list;
/// - the certificate the seeds revoke is reported revoked by any list that vouches and lists its serial.
enum CRLTarget {
    /// The CA of the seeds (test-only, generated for this target) and two certificates it issued.
    static let authority = try! Certificate(
        pemEncoded: """
            -----BEGIN CERTIFICATE-----
            MIIBgDCCASagAwIBAgIUSYb9E31aztu9W67k4tpTey0Jz7owCgYIKoZIzj0EAwIw
            HjEcMBoGA1UEAwwTQnVsd2FyayBGdXp6IENSTCBDQTAeFw0yNjExMjQxMTM2Mjla
            Fw00NjExMTkxMTM2MjlaMB4xHDAaBgNVBAMME0J1bHdhcmsgRnV6eiBDUkwgQ0Ew
            WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAATgrnl2SMaFOg//N749104+C3fvZ5Zx
            RadfC0tQwREFLJxMKCTa7q4zCA5Powtm0Dr9B6rhFfgOMVaM1heJuBj7o0IwQDAP
            BgNVHRMBAf8EBTADAQH/MA4GA1UdDwEB/wQEAwIBBjAdBgNVHQ4EFgQUPFhmZjq8
            bNwXlXhnEdcgXF92pPwwCgYIKoZIzj0EAwIDSAAwRQIhAKD4+/eB6W9Eh0iIeLBQ
            gcRd1tt/zCbVitYkIFprwD+wAiATCUlO/b9ZusZvf8/tKArM2x9cgyjvU8Nw6sJ1
            K7FeMg==
            -----END CERTIFICATE-----
            """
    )
    static let good = try! Certificate(
        pemEncoded: """
            -----BEGIN CERTIFICATE-----
            MIIBvTCCAWOgAwIBAgICEAAwCgYIKoZIzj0EAwIwHjEcMBoGA1UEAwwTQnVsd2Fy
            ayBGdXp6IENSTCBDQTAeFw0yNjExMjQxMTM2MjlaFw00NjAxMjMxMTM2MjlaMBwx
            GjAYBgNVBAMMEWdvb2QuYnVsd2Fyay50ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0D
            AQcDQgAEjZD+YkgPMxAg1d/urTCy8Xh6qhdLYEDy5oUNM24zQlIBRbnFQ0e/QrvT
            nBVmt9v1keZEvx7D0RkccNcNU9LxMaOBkjCBjzAMBgNVHRMBAf8EAjAAMA4GA1Ud
            DwEB/wQEAwIHgDAvBgNVHR8EKDAmMCSgIqAghh5odHRwOi8vY3JsLmJ1bHdhcmsu
            dGVzdC9jYS5jcmwwHQYDVR0OBBYEFBEqedR/VIADVd7b1nyAD4x2NNt6MB8GA1Ud
            IwQYMBaAFDxYZmY6vGzcF5V4ZxHXIFxfdqT8MAoGCCqGSM49BAMCA0gAMEUCIQCp
            8VDTtKuAkywrYoH8/IjlWBHdRyFBhVBZqj2r5xz32QIgK8/3VZCIZVOAAHBcsLv+
            OWqKQ+U/YDJkFzxwlKf7Nmg=
            -----END CERTIFICATE-----
            """
    )
    static let revoked = try! Certificate(
        pemEncoded: """
            -----BEGIN CERTIFICATE-----
            MIIBvzCCAWagAwIBAgICEAEwCgYIKoZIzj0EAwIwHjEcMBoGA1UEAwwTQnVsd2Fy
            ayBGdXp6IENSTCBDQTAeFw0yNjExMjQxMTM2MjlaFw00NjAxMjMxMTM2MjlaMB8x
            HTAbBgNVBAMMFHJldm9rZWQuYnVsd2Fyay50ZXN0MFkwEwYHKoZIzj0CAQYIKoZI
            zj0DAQcDQgAEoGZc3jM7o4tLTT6zG5GEoeLBXwpH5OR2B/bE39L8HFPD4hyT3sdT
            K6zb84aiM0LKf2XKxeBgjyzjAqk3hNhHMKOBkjCBjzAMBgNVHRMBAf8EAjAAMA4G
            A1UdDwEB/wQEAwIHgDAvBgNVHR8EKDAmMCSgIqAghh5odHRwOi8vY3JsLmJ1bHdh
            cmsudGVzdC9jYS5jcmwwHQYDVR0OBBYEFJwtazy9y+TSrMQnJIDYjzX01awiMB8G
            A1UdIwQYMBaAFDxYZmY6vGzcF5V4ZxHXIFxfdqT8MAoGCCqGSM49BAMCA0cAMEQC
            IEmGBx2SN7aZIWhaXWXE6rpqRoqyzEvu6Bsq0O1C1xfzAiB/rki+pgF/6/QvTAj4
            ZaTmobqZzGQQopC78zWxCNVX1Q==
            -----END CERTIFICATE-----
            """
    )
    static let key = try! P256.Signing.PublicKey(authority.publicKey)!

    static func run(_ input: FuzzInput) {
        let bytes = Array(input.rest)
        let list: CertificateRevocationList
        do {
            list = try CertificateRevocationList(derEncoded: bytes)
        } catch {
            if error.code.isEmpty { violated("typed error", "an error without a code") }
            return
        }
        guard let again = try? CertificateRevocationList(derEncoded: bytes), again.count == list.count,
            again.issuer == list.issuer, again.thisUpdate == list.thisUpdate, again.nextUpdate == list.nextUpdate
        else {
            violated("deterministic parse", "parsing the same bytes twice gave different lists")
        }
        let time = list.thisUpdate + 60
        for certificate in [Self.good, Self.revoked] {
            guard let status = try? list.status(of: certificate, issuer: Self.authority, at: time) else { continue }
            guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: list.signature),
                Self.key.isValidSignature(signature, for: SHA256.hash(data: list.signedBytes))
            else {
                violated("only a signed list vouches", "a list whose signature does not verify returned \(status)")
            }
            let listed = list.entry(for: certificate.serialNumber) != nil
            if status.isRevoked != listed {
                violated("status follows the list", "revoked \(status.isRevoked), listed \(listed)")
            }
        }
    }
}
