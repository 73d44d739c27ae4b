import BulwarkPolicy
import Foundation
import Testing

/// Signed policy bundles: every refusal the verifier makes, each with its own reason, and key rotation.
@Suite("Policy bundles")
struct PolicyBundleTests {
    static let policy = Array(#"{"format":"bulwark-policy/1","hosts":{"a.example.com":{"evaluator":"default"}}}"#.utf8)
    static let today = PolicyFile.parseDay("2026-11-24")!

    let a = PolicySigningKey.generate(name: "a")
    let b = PolicySigningKey.generate(name: "b")
    let c = PolicySigningKey.generate(name: "c")

    func sign(
        _ keys: [PolicySigningKey],
        version: UInt64 = 2,
        expires: String = "2026-12-31",
        trustedKeys: PolicyTrustedKeys? = nil
    ) throws -> [UInt8] {
        try PolicyBundle(policy: Self.policy, version: version, expires: expires, trustedKeys: trustedKeys)
            .signed(by: keys)
    }

    func verifier(_ keys: [PolicySigningKey], threshold: Int = 1, highest: UInt64? = nil) throws -> PolicyBundleVerifier
    {
        PolicyBundleVerifier(
            trustedKeys: try PolicyTrustedKeys(keys: keys.map(\.publicKey), threshold: threshold),
            highestVersion: highest
        )
    }

    func refusal(_ result: Result<PolicyBundleVerifier.Verified, PolicyBundleRefusal>) -> PolicyBundleRefusal.Reason? {
        if case .failure(let refusal) = result { return refusal.reason }
        return nil
    }

    @Test func aBundleSignedByATrustedKeyVerifiesWithItsExactPolicyBytes() throws {
        let bytes = try self.sign([self.a])
        let verified = try self.verifier([self.a, self.b]).verify(bytes, at: Self.today).get()
        #expect(verified.bundle.policy == Self.policy)
        #expect(verified.bundle.version == 2)
        #expect(verified.signers == [self.a.publicKey])
        #expect(verified.expiresAt == PolicyFile.parseDay("2027-01-01"))
    }

    @Test func aFlippedByteInThePolicyIsSignatureInvalid() throws {
        let bytes = try self.sign([self.a])
        // The attacker changes one byte of the policy inside the signed payload, keeping the signature.
        var file = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let signedText = try #require(file["signed"] as? String)
        let signed = try #require(Data(base64Encoded: signedText))
        var payload = try #require(try JSONSerialization.jsonObject(with: signed) as? [String: Any])
        let policyText = try #require(payload["policy"] as? String)
        var policy = try #require(Data(base64Encoded: policyText))
        policy[policy.count / 2] ^= 0x01
        payload["policy"] = policy.base64EncodedString()
        file["signed"] = try JSONSerialization.data(withJSONObject: payload).base64EncodedString()
        let tampered = Array(try JSONSerialization.data(withJSONObject: file))
        #expect(self.refusal(try self.verifier([self.a]).verify(tampered, at: Self.today)) == .signatureInvalid)
    }

    @Test func everySingleByteFlipOfTheFileIsRefused() throws {
        let bytes = try self.sign([self.a])
        let verifier = try self.verifier([self.a])
        var accepted = 0
        for index in stride(from: 0, to: bytes.count, by: 7) {
            var flipped = bytes
            flipped[index] ^= 0x01
            if case .success = verifier.verify(flipped, at: Self.today) { accepted += 1 }
        }
        #expect(accepted == 0)
    }

    @Test func aSignatureByAnUnknownKeyIsUnknownKey() throws {
        let bytes = try self.sign([self.c])
        #expect(self.refusal(try self.verifier([self.a, self.b]).verify(bytes, at: Self.today)) == .unknownKey)
    }

    @Test func fewerSignaturesThanTheThresholdIsBelowThreshold() throws {
        let bytes = try self.sign([self.a, self.c])
        let verifier = try self.verifier([self.a, self.b], threshold: 2)
        #expect(self.refusal(verifier.verify(bytes, at: Self.today)) == .belowThreshold)
        // The same key twice counts once.
        var file = try #require(try JSONSerialization.jsonObject(with: Data(try self.sign([self.a]))) as? [String: Any])
        let signatures = try #require(file["signatures"] as? [Any])
        file["signatures"] = signatures + signatures
        let doubled = Array(try JSONSerialization.data(withJSONObject: file))
        #expect(self.refusal(verifier.verify(doubled, at: Self.today)) == .belowThreshold)
        // Two distinct trusted keys meet it.
        let both = try self.sign([self.a, self.b])
        #expect(try verifier.verify(both, at: Self.today).get().signers.count == 2)
    }

    @Test func anOlderVersionReplayedIsRollback() throws {
        let old = try self.sign([self.a], version: 3)
        let verifier = try self.verifier([self.a], highest: 4)
        #expect(self.refusal(verifier.verify(old, at: Self.today)) == .rollback)
        // The version in force verifies again (a restart), a newer one is accepted.
        #expect(try verifier.verify(try self.sign([self.a], version: 4), at: Self.today).get().bundle.version == 4)
        #expect(try verifier.verify(try self.sign([self.a], version: 5), at: Self.today).get().bundle.version == 5)
    }

    @Test func anExpiredBundleIsExpired() throws {
        let bytes = try self.sign([self.a], expires: "2026-11-23")
        #expect(self.refusal(try self.verifier([self.a]).verify(bytes, at: Self.today)) == .expired)
        // Valid through the last day, in UTC.
        let lastDay = try self.sign([self.a], expires: "2026-11-24")
        #expect(throws: Never.self) { try self.verifier([self.a]).verify(lastDay, at: Self.today).get() }
    }

    @Test func aTruncatedFileIsMalformed() throws {
        let bytes = try self.sign([self.a])
        for length in [0, 1, bytes.count / 3, bytes.count / 2, bytes.count - 2] {
            let result = try self.verifier([self.a]).verify(Array(bytes.prefix(length)), at: Self.today)
            #expect(self.refusal(result) == .malformed, "cut at \(length)")
        }
    }

    @Test func aTenMebibyteFileIsTooLargeBeforeParsing() throws {
        var bytes = try self.sign([self.a])
        bytes += [UInt8](repeating: 0x20, count: 10 << 20)
        let started = ContinuousClock.now
        #expect(self.refusal(try self.verifier([self.a]).verify(bytes, at: Self.today)) == .tooLarge)
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test func anotherFormatIsUnsupportedFormat() throws {
        let text = #"{"format":"bulwark-policy-bundle/9","signed":"","signatures":[]}"#
        let result = try self.verifier([self.a]).verify(Array(text.utf8), at: Self.today)
        #expect(self.refusal(result) == .unsupportedFormat)
    }

    @Test func keyRotationSignedByTheCurrentKeysIsAccepted() throws {
        let next = try PolicyTrustedKeys(keys: [self.b.publicKey, self.c.publicKey], threshold: 2)
        // Signed by the current key, and by each new key (proof of possession).
        let rotation = try self.sign([self.a, self.b, self.c], version: 3, trustedKeys: next)
        let verified = try self.verifier([self.a]).verify(rotation, at: Self.today).get()
        #expect(verified.bundle.trustedKeys == next)
        // Under the new set, a bundle by the old key alone no longer verifies; one by both new keys does.
        let rotated = PolicyBundleVerifier(trustedKeys: next, highestVersion: 3)
        #expect(self.refusal(rotated.verify(try self.sign([self.a], version: 4), at: Self.today)) == .unknownKey)
        #expect(throws: Never.self) {
            try rotated.verify(try self.sign([self.b, self.c], version: 4), at: Self.today).get()
        }
    }

    @Test func keyRotationSignedByTheNewKeysOnlyIsRefused() throws {
        let next = try PolicyTrustedKeys(keys: [self.b.publicKey], threshold: 1)
        let rotation = try self.sign([self.b], version: 3, trustedKeys: next)
        #expect(self.refusal(try self.verifier([self.a]).verify(rotation, at: Self.today)) == .unknownKey)
        // Nor is one signed by one old key when the current threshold is two.
        let partial = try self.sign([self.a, self.b], version: 3, trustedKeys: next)
        let verifier = try self.verifier([self.a, self.c], threshold: 2)
        #expect(self.refusal(verifier.verify(partial, at: Self.today)) == .belowThreshold)
    }

    @Test func refusalsHaveDistinctCodes() {
        let reasons: [PolicyBundleRefusal.Reason] = [
            .tooLarge, .malformed, .unsupportedFormat, .signatureInvalid, .unknownKey, .belowThreshold, .rollback,
            .expired, .rotationNotProven, .versionReused, .wrongChannel, .fetchFailed, .invalidPolicy, .insecurePolicy,
            .storageFailed,
        ]
        #expect(Set(reasons.map(\.code)).count == reasons.count)
    }

    @Test func aPrivateKeyFileRoundTripsAndIsNeverPrinted() throws {
        let contents = self.a.keyFileContents()
        let text = contents.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        #expect(text.hasPrefix("bulwark-policy-private-key/1 ed25519 "))
        #expect(text.hasSuffix("\n"))
        let secretPart = String(text.dropFirst("bulwark-policy-private-key/1 ed25519 ".count).dropLast())
        let reloaded = try PolicySigningKey(keyFile: contents)
        #expect(reloaded.publicKey == self.a.publicKey)
        var dumped = ""
        dump(reloaded, to: &dumped)
        for shown in [String(describing: reloaded), String(reflecting: reloaded), dumped] {
            #expect(!shown.contains(secretPart))
            #expect(shown.contains(self.a.publicKey.base64))
        }
        let broken = #expect(throws: PolicyBundleError.self) {
            try PolicySigningKey(keyFile: SecretBytes(utf8: "bulwark-policy-private-key/1 ed25519 AAAA\n"))
        }
        #expect(broken?.code == .invalidPrivateKey)
    }

    @Test func aPublicKeyIsOneLine() throws {
        let line = self.a.publicKey.line
        #expect(line.hasPrefix("bulwark-policy-key/1 ed25519 "))
        #expect(line.hasSuffix(" a"))
        #expect(!line.contains("\n"))
        #expect(try PolicyPublicKey(line: line) == self.a.publicKey)
        let trusted = try PolicyTrustedKeys(fileContents: "# trusted\n\(line)\n\n\(self.b.publicKey.line)\n")
        #expect(trusted.keys == [self.a.publicKey, self.b.publicKey])
        #expect(throws: PolicyBundleError.self) { try PolicyTrustedKeys(fileContents: line, threshold: 2) }
    }
}
