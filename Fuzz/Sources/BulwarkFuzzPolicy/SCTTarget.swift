import Crypto
import Foundation

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
    /// fastly.com's precertificate TBSCertificate (its certificate's, without the SCT list) and the SHA-256 of its
    /// issuer's key, computed once with pyca/cryptography (`tbs_precertificate_bytes`): constants, so that no
    /// certificate is parsed here (parsing the two RSA certificates at start-up made LeakSanitizer report 1,954 bytes
    /// in 18 allocations under swift-crypto's RSA key parsing at the end of a run; not investigated further).
    static let tbs = Array(
        Data(
            base64Encoded: [
                "MIIDGqADAgECAhJ49aRxungz7aPG/peaANl452YwDQYJKoZIhvcNAQELBQAwRTELMAkGA1UEBhMCVVMxEjAQBgNVBAoTCUNl",
                "cnRhaW5seTEiMCAGA1UEAxMZQ2VydGFpbmx5IEludGVybWVkaWF0ZSBSMTAeFw0yNjAyMjcwMzQ3NDhaFw0yNjAzMjkwMzQ3",
                "NDdaMBkxFzAVBgNVBAMTDnd3dy5mYXN0bHkuY29tMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA0GXxvJn5Hd/5",
                "zi5nYgFaqf/KA6EXKcY970sD4d32ju6AichZADwsH4w7ghz3Sp2aqQgp4UmKWDJl9itiuSSV70hSZOP0OB0SscBsOMmfhTOn",
                "zFe16JpQm/24Vna5aMPmRSdf2e6ch017xpfi8pfmQhT+irJRfwSWSHSUQ0Tk7JqXldm6KuQ0slkjEaTsSaJxOzeKKK3g/DRT",
                "N4a7DNsrSXibdEdAnkeuwRwgohsiCcsC+fVRpXzd48Cnzvy1iTvGhC84uZBO4iPEvfWI5uTMhcibLfE7xdvrp6IIVFVRkMDW",
                "t8CbFaZQ4zpeFQC+cUUdzJjbtSKuig2Nem5ArCI/WQIDAQABo4IBRjCCAUIwDgYDVR0PAQH/BAQDAgWgMBMGA1UdJQQMMAoG",
                "CCsGAQUFBwMBMAwGA1UdEwEB/wQCMAAwHQYDVR0OBBYEFFs7DrHlPLf4OgErWk0GnWMvpnDGMB8GA1UdIwQYMBaAFL2Xnd+h",
                "2BslmeMMBAaJZBLXZSTHMDcGCCsGAQUFBwEBBCswKTAnBggrBgEFBQcwAoYbaHR0cDovL2ludC1yMS5jZXJ0YWlubHkuY29t",
                "MDsGA1UdEQQ0MDKCFGRldmVsb3Blci5mYXN0bHkuY29tggpmYXN0bHkuY29tgg53d3cuZmFzdGx5LmNvbTATBgNVHSAEDDAK",
                "MAgGBmeBDAECATBCBgNVHR8EOzA5MDegNaAzhjFodHRwOi8vY3Jscy5jZXJ0YWlubHkuY29tLzE3MTgyMjYyNDUzMDAyNTE0",
                "LzcuY3Js",
            ].joined()
        )!
    )
    static let issuerKeyHash = Array(Data(base64Encoded: "oW7smChMJRcnzTObF7K+HzInReAPTxB/L1h6eZTmw9Q=")!)
    /// The keys (SubjectPublicKeyInfo, base64) of the two logs whose SCTs fastly.com's certificate carries.
    static let logKeys: [[UInt8]] = [
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEOh/Iu87VkEc0ysoBBCchHOIpPZK7kUXHWj6l1PIS5ujmQ7rze8I4r/wjigVW6wMKMMxjbNk8vvV7lLqU07+ITA==",
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE7Lw0OeKajbeZepHxBXJS2pOJXToHi5ntgKUW2nMhIOuGlofFxtkXum65TBNY1dGD+HrfHge8Fc3ASs0qMXEHVQ==",
    ].map { Array(Data(base64Encoded: $0)!) }

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
