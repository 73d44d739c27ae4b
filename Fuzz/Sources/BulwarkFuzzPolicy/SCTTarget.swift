import Crypto
import Foundation
import X509

@testable import BulwarkPolicy

/// Certificate Transparency SCT lists (issue 40's parser and verifier), mutated from the SCT lists of four real web
/// certificates (fastly.com, google.com, apple.com, bing.com, from x509-limbo's online:: cases; Fuzz/Corpus/sct).
/// Input: the TLS bytes of a `SignedCertificateTimestampList`. Oracles:
/// - parsing ends in SCTs or a `CertificateTransparencyError` with a code, never a crash, and never more than
///   `SignedCertificateTimestamp.maximumCount` SCTs;
/// - an SCT that Bulwark finds signed by one of fastly.com's two logs, over fastly.com's precertificate, verifies
///   independently: the RFC 6962 signed structure assembled here and checked with swift-crypto directly. No mutation
///   forges an SCT.
enum SCTTarget {
    static let leaf = try! Certificate(
        pemEncoded: """
            -----BEGIN CERTIFICATE-----
            MIIFOzCCBCOgAwIBAgISePWkcbp4M+2jxv6XmgDZeOdmMA0GCSqGSIb3DQEBCwUA
            MEUxCzAJBgNVBAYTAlVTMRIwEAYDVQQKEwlDZXJ0YWlubHkxIjAgBgNVBAMTGUNl
            cnRhaW5seSBJbnRlcm1lZGlhdGUgUjEwHhcNMjYwMjI3MDM0NzQ4WhcNMjYwMzI5
            MDM0NzQ3WjAZMRcwFQYDVQQDEw53d3cuZmFzdGx5LmNvbTCCASIwDQYJKoZIhvcN
            AQEBBQADggEPADCCAQoCggEBANBl8byZ+R3f+c4uZ2IBWqn/ygOhFynGPe9LA+Hd
            9o7ugInIWQA8LB+MO4Ic90qdmqkIKeFJilgyZfYrYrkkle9IUmTj9DgdErHAbDjJ
            n4Uzp8xXteiaUJv9uFZ2uWjD5kUnX9nunIdNe8aX4vKX5kIU/oqyUX8Elkh0lENE
            5Oyal5XZuirkNLJZIxGk7EmicTs3iiit4Pw0UzeGuwzbK0l4m3RHQJ5HrsEcIKIb
            IgnLAvn1UaV83ePAp878tYk7xoQvOLmQTuIjxL31iObkzIXImy3xO8Xb66eiCFRV
            UZDA1rfAmxWmUOM6XhUAvnFFHcyY27UirooNjXpuQKwiP1kCAwEAAaOCAk8wggJL
            MA4GA1UdDwEB/wQEAwIFoDATBgNVHSUEDDAKBggrBgEFBQcDATAMBgNVHRMBAf8E
            AjAAMB0GA1UdDgQWBBRbOw6x5Ty3+DoBK1pNBp1jL6ZwxjAfBgNVHSMEGDAWgBS9
            l53fodgbJZnjDAQGiWQS12UkxzA3BggrBgEFBQcBAQQrMCkwJwYIKwYBBQUHMAKG
            G2h0dHA6Ly9pbnQtcjEuY2VydGFpbmx5LmNvbTA7BgNVHREENDAyghRkZXZlbG9w
            ZXIuZmFzdGx5LmNvbYIKZmFzdGx5LmNvbYIOd3d3LmZhc3RseS5jb20wEwYDVR0g
            BAwwCjAIBgZngQwBAgEwQgYDVR0fBDswOTA3oDWgM4YxaHR0cDovL2NybHMuY2Vy
            dGFpbmx5LmNvbS8xNzE4MjI2MjQ1MzAwMjUxNC83LmNybDCCAQUGCisGAQQB1nkC
            BAIEgfYEgfMA8QB2AJaXZL9VWJet90OHaDcIQnfp8DrV9qTzNm5GpD8PyqnGAAAB
            nJ1rRU0AAAQDAEcwRQIhAPDOpG4qfaEI6FZSUHrj0yNTga7IgoI6kuh9mUy0RTs1
            AiALlf2FmMFLo6oX8J367V4odXahppgpEPM3FpSIjbjg+QB3AGQRxGykEuyniRyi
            Ai4AvKtPKAfUHjUnq+r+1QPJfc3wAAABnJ1rRxcAAAQDAEgwRgIhAK1uA4E1TbxC
            pm7LPn5z/FZtnJtkNQWbIkB7+xAJ04URAiEAgKE9BylpJmAX0Xk1g1ULBTfTvKjz
            0VA+2Vq1GcUcH8MwDQYJKoZIhvcNAQELBQADggEBABUHsmJE96eXpXcpfslQLIyO
            5wBSLQ0l5/446mFtCm5vWHtaQb8XXpAXtxfc8c/1qf5WibCUT/ziMppevesrpv8p
            zM+sm7KuuZ+wHLjXW8H+i3LFarn9Qrirgu2KO5ST4VlkYn7Y24n4GhE9+SCVIFMJ
            dhkRJ10Zv27M0X4uOiC9CMEYcBBUWam1ggTI/+0hbwGyVBKFbk15om+s8A9PaDBj
            hzfurxMDYNc3+GYv6fjXSwiU2pmnE2NVxiBWdl+tCjAFcg/+P8oxl/jGrQwOj64W
            N1nQj7J28rKQ3DiGW0Hm/Zy2EEpD5HYFUjW6DKoKyhIgSA4U/7lPBARkifaPoRI=
            -----END CERTIFICATE-----
            """
    )
    static let issuer = try! Certificate(
        pemEncoded: """
            -----BEGIN CERTIFICATE-----
            MIIEoDCCA4igAwIBAgIIEYMc3ky1c+UwDQYJKoZIhvcNAQELBQAwgY8xCzAJBgNV
            BAYTAlVTMRAwDgYDVQQIEwdBcml6b25hMRMwEQYDVQQHEwpTY290dHNkYWxlMSUw
            IwYDVQQKExxTdGFyZmllbGQgVGVjaG5vbG9naWVzLCBJbmMuMTIwMAYDVQQDEylT
            dGFyZmllbGQgUm9vdCBDZXJ0aWZpY2F0ZSBBdXRob3JpdHkgLSBHMjAeFw0yMjA2
            MjIwMDAwMDBaFw0zMjA2MjEyMzU5NTlaMEUxCzAJBgNVBAYTAlVTMRIwEAYDVQQK
            EwlDZXJ0YWlubHkxIjAgBgNVBAMTGUNlcnRhaW5seSBJbnRlcm1lZGlhdGUgUjEw
            ggEiMA0GCSqGSIb3DQEBAQUAA4IBDwAwggEKAoIBAQCW0khmsa1kAMrw6Q6kPsiZ
            6LfWXQcpcDnu1+Ql7+FYYyBKT3zFSsjx+ZTI2yRG2sFOwbBMchtQf5MGUoQfNznR
            ANlqUNXdWlMrkso93JburzqBEoNGy8utK0TNnepMbb1yc4YuXk/nMRZaBPA2Lh8u
            twUG3vMvNQHsliV48CQ+4CJutM34rvI9AfJeI2CkcxBUlCyYatGcA12nvCr7dGdy
            EKeG5G4XyBak48571FtQqNqkSkCQlqmv93LVoOHqzEQKcJWw8zPxZc0dnORZVmgL
            l3Ws/QltCsIf6OTyQOfGHi81ehr6P4j1KQ56MfgWcqBqdeIANxVcb0ZVVb3SiEhT
            AgMBAAGjggFHMIIBQzASBgNVHRMBAf8ECDAGAQH/AgEAMA4GA1UdDwEB/wQEAwIB
            hjAdBgNVHSUEFjAUBggrBgEFBQcDAQYIKwYBBQUHAwIwHQYDVR0OBBYEFL2Xnd+h
            2BslmeMMBAaJZBLXZSTHMB8GA1UdIwQYMBaAFHwMMh+n2TB/xH1oo2Kooc6rB1sn
            MF4GCCsGAQUFBwEBBFIwUDBOBggrBgEFBQcwAoZCaHR0cDovL2NlcnRpZmljYXRl
            cy5zdGFyZmllbGR0ZWNoLmNvbS9yZXBvc2l0b3J5L3Nmcm9vdC1nMi5jcnQuY2Vy
            MDsGA1UdHwQ0MDIwMKAuoCyGKmh0dHA6Ly9jcmwuc3RhcmZpZWxkdGVjaC5jb20v
            c2Zyb290LWcyLmNybDAhBgNVHSAEGjAYMAgGBmeBDAECATAMBgorBgEEAYOGGQEB
            MA0GCSqGSIb3DQEBCwUAA4IBAQBosoh/lcTPBVC36SxIqjmdnuKwHs4SUDa/o5+y
            AJ22DaZDIFMJS+LLhslCVPAO9lQ5LR0AviC8atueKWOxPUw5aNDodEpIe988xSNa
            LSuPXsAB93FJ5v2BxdCiDHlIZbJPAOVQAo+rP2WgaTcDFX6g6LvK1b/RS9kL+rCB
            OebvFIbOmhfErkXjR7F6p759ftTQ23tT1qoTgegkySRgugEp0mtveWq87UIsGgdI
            e3UVWONiA9l3hTmxRyHkaYLlBzDdVPt4MIUkFrxZAz/8ebh+x2KNfAO6Mxi/vdS0
            9NEqn0ekjRmQK5UvHXoBNHVvZ1VrbMv6hlIMCt++bfb6UBoK
            -----END CERTIFICATE-----
            """
    )
    /// The keys (SubjectPublicKeyInfo, base64) of the two logs whose SCTs fastly.com's certificate carries.
    static let logKeys: [[UInt8]] = [
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEOh/Iu87VkEc0ysoBBCchHOIpPZK7kUXHWj6l1PIS5ujmQ7rze8I4r/wjigVW6wMKMMxjbNk8vvV7lLqU07+ITA==",
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE7Lw0OeKajbeZepHxBXJS2pOJXToHi5ntgKUW2nMhIOuGlofFxtkXum65TBNY1dGD+HrfHge8Fc3ASs0qMXEHVQ==",
    ].map { Array(Data(base64Encoded: $0)!) }
    static let tbs = try! SignedCertificateTimestamp.precertificateTBS(of: leaf)
    static let issuerKeyHash = Array(SHA256.hash(data: issuer.subjectPublicKeyInfoDER))

    static func run(_ input: FuzzInput) {
        let scts: [SignedCertificateTimestamp]
        do {
            scts = try SignedCertificateTimestamp.list(Array(input.rest))
        } catch {
            if error.code.isEmpty { violated("typed error", "an error without a code") }
            return
        }
        if scts.count > SignedCertificateTimestamp.maximumCount {
            violated("bounded list", "\(scts.count) SCTs parsed")
        }
        for sct in scts {
            for key in Self.logKeys {
                guard sct.isSigned(forTBSCertificate: Self.tbs, issuerKeyHash: Self.issuerKeyHash, logKey: key) else {
                    continue
                }
                if tracing { print("sct: verified, log \(sct.logIDBase64)") }
                if !Self.independentlyVerified(sct, key: key) {
                    violated("only a logged SCT verifies", "\(sct) verified by Bulwark, not by swift-crypto directly")
                }
            }
        }
    }

    /// RFC 6962 3.2's `digitally-signed` structure for a precertificate entry, assembled here, checked with
    /// swift-crypto's P-256 verifier (both logs use ECDSA P-256).
    static func independentlyVerified(_ sct: SignedCertificateTimestamp, key: [UInt8]) -> Bool {
        guard sct.version == 0, sct.hashAlgorithm == 4, sct.signatureAlgorithm == 3,
            Array(SHA256.hash(data: key)) == sct.logID,
            let publicKey = try? P256.Signing.PublicKey(derRepresentation: key),
            let signature = try? P256.Signing.ECDSASignature(derRepresentation: sct.signature)
        else { return false }
        var data: [UInt8] = [0, 0]
        for shift in stride(from: 56, through: 0, by: -8) {
            data.append(UInt8(truncatingIfNeeded: sct.timestamp >> UInt64(shift)))
        }
        data += [0, 1] + Self.issuerKeyHash
        let count = Self.tbs.count
        data += [UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)] + Self.tbs
        data += [UInt8(sct.extensions.count >> 8 & 0xff), UInt8(sct.extensions.count & 0xff)] + sct.extensions
        return publicKey.isValidSignature(signature, for: SHA256.hash(data: data))
    }
}
