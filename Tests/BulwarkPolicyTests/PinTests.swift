import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import SwiftASN1
import Testing
import X509

@testable import BulwarkPolicy

@Suite("Pins and pin sets")
struct PinTests {
    static let digest = Data((0..<32).map { UInt8($0) })
    static let text = "sha256/" + digest.base64EncodedString()

    @Test func publicKeyPinRoundTrips() throws {
        let pin = try Pin(Self.text)
        #expect(pin.kind == .publicKey)
        #expect(pin.digest == Array(Self.digest))
        #expect(pin.description == Self.text)
        #expect(try Pin(pin.description) == pin)
    }

    @Test func certificatePinParsesFromOpenSSLFingerprintAndRoundTrips() throws {
        let hex = Self.digest.map { String(format: "%02X", $0) }.joined(separator: ":")
        let pin = try Pin(hex)
        #expect(pin.kind == .certificate)
        #expect(pin.fingerprint == hex)
        #expect(try Pin(pin.description) == pin)
        #expect(try Pin(hex.replacingOccurrences(of: ":", with: "").lowercased()) == pin)
    }

    @Test(arguments: [
        ("sha256/AAAA", PinError.Code.wrongLength),
        ("sha256/" + Data(count: 33).base64EncodedString(), .wrongLength),
        ("sha256/not base64!!", .invalidBase64),
        ("sha1/" + Data(count: 20).base64EncodedString(), .unknownFormat),
        ("md5/abc", .unknownFormat),
        ("", .unknownFormat),
        (String(repeating: "Z", count: 64), .unknownFormat),
        (String(repeating: "A", count: 66), .wrongLength),
    ])
    func badPinsAreTypedErrorsNamingTheInput(input: String, code: PinError.Code) {
        do {
            _ = try Pin(input)
            Issue.record("\(input) parsed")
        } catch {
            #expect(error.code == code, "\(input): \(error)")
            #expect(error.description.contains("\"\(input)\""))
        }
    }

    @Test func enforcingPinSetNeedsTwoPinsUnlessOptedOut() throws {
        #expect(throws: PinError.self) { try PinSet([Self.text]) }
        do {
            _ = try PinSet([Self.text, Self.text])
            Issue.record("duplicate pins counted twice")
        } catch {
            #expect(error.code == .tooFewPins)
        }
        #expect(try PinSet([Self.text], allowSinglePin: true).pins.count == 1)
        #expect(try PinSet([Self.text], enforcement: .reportOnly).pins.count == 1)
        do {
            _ = try PinSet([String](), enforcement: .reportOnly)
            Issue.record("empty pin set accepted")
        } catch {
            #expect(error.code == .emptyPinSet)
        }
    }

    @Test func subjectPublicKeyInfoOfMalformedTBSIsNil() {
        #expect(Certificate.subjectPublicKeyInfo(inTBSCertificate: []) == nil)
        #expect(Certificate.subjectPublicKeyInfo(inTBSCertificate: [0x30, 0x03, 0x02, 0x01, 0x01]) == nil)
        #expect(Certificate.subjectPublicKeyInfo(inTBSCertificate: [0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF]) == nil)
        #expect(Certificate.subjectPublicKeyInfo(inTBSCertificate: [0x30, 0x02, 0x02, 0x05]) == nil)
    }

    @Test func pinSetExpiry() throws {
        let now = Date()
        let set = try PinSet([Self.text], expiration: now, allowSinglePin: true)
        #expect(!set.isExpired(at: now - 1))
        #expect(set.isExpired(at: now))
        #expect(!(try PinSet([Self.text], allowSinglePin: true).isExpired(at: .distantFuture)))
    }
}

/// Pins computed by Bulwark equal the ones `openssl` computes for the same certificate (runs `openssl`).
@Suite("Pins agree with OpenSSL", .tags(.externalPeers))
struct PinOpenSSLAgreementTests {
    @Test(arguments: TestKeyAlgorithm.allCases)
    func pinsEqualOpenSSLs(key: TestKeyAlgorithm) async throws {
        let leaf = try CertificateFactory.issueLeaf(from: nil, key: key)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bulwark-pin-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("cert.pem").path
        try leaf.certificatePEM.write(toFile: file, atomically: true, encoding: .utf8)

        let spki = try await ProcessRunner.pipeline(
            "openssl x509 -in '\(file)' -pubkey -noout | openssl pkey -pubin -outform der "
                + "| openssl dgst -sha256 -binary | base64"
        )
        #expect(Pin.publicKey(of: leaf.certificate).description == "sha256/" + spki)
        // The SPKI cut out of the certificate's bytes is the re-serialized key.
        var serializer = DER.Serializer()
        try serializer.serialize(leaf.certificate.publicKey)
        #expect(leaf.certificate.subjectPublicKeyInfoDER == serializer.serializedBytes)
        #expect(Certificate.subjectPublicKeyInfo(inTBSCertificate: leaf.certificate.tbsCertificateBytes) != nil)
        let fingerprint = try await ProcessRunner.pipeline("openssl x509 -in '\(file)' -noout -fingerprint -sha256")
        #expect(fingerprint.hasSuffix("=" + Pin.certificate(of: leaf.certificate).fingerprint), "\(fingerprint)")
    }
}
