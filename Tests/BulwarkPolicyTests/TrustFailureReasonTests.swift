import BulwarkPolicy
import Foundation
import Testing
import X509

/// ``TrustFailureReason`` and ``TrustNotice`` as public API: stable codes, equality and hashing by value, accessors
/// and the texts they had as enums.
@Suite struct TrustFailureReasonTests {
    static let date = Date(timeIntervalSince1970: 1_700_000_000)
    static let later = Date(timeIntervalSince1970: 1_800_000_000)

    static func mismatch(host: String = "api.bulwark.test") throws -> PinMismatch {
        PinMismatch(
            host: host,
            verifiedChain: [],
            expectedPins: [try Pin(publicKeySHA256: Array(repeating: 7, count: 32))]
        )
    }

    /// Every reason with the code it must keep: events, metrics and `bulwark` output carry these strings.
    static func reasons() throws -> [(TrustFailureReason, String)] {
        [
            (.emptyChain, "empty_chain"),
            (.chainTooLong(presented: 12, limit: 10), "chain_too_long"),
            (.untrustedChain(details: ["no issuer"]), "untrusted_chain"),
            (.expired(certificate: "CN=a", notValidAfter: Self.date, evaluatedAt: Self.later), "expired"),
            (.notYetValid(certificate: "CN=a", notValidBefore: Self.later, evaluatedAt: Self.date), "not_yet_valid"),
            (.weakKey(certificate: "CN=a", keyType: "RSA", bits: 1024, minimumBits: 2048), "weak_key"),
            (.weakSignature(certificate: "CN=a", algorithm: "SHA-1 with RSA"), "weak_signature"),
            (.hostnameMismatch(host: "a.test", names: ["DNS:b.test"]), "hostname_mismatch"),
            (.invalidHost(host: "a..test", detail: "empty label"), "invalid_host"),
            (.pinMismatch(try Self.mismatch()), "pin_mismatch"),
            (.certificateNotPinned(try Self.mismatch()), "certificate_not_pinned"),
            (.hostNotEvaluated(host: "a.test"), "host_not_evaluated"),
            (.misconfigured(detail: "no evaluators"), "misconfigured"),
        ]
    }

    @Test func codesAreStable() throws {
        for (reason, code) in try Self.reasons() {
            #expect(reason.code == code)
            #expect(reason.shortDescription == code)
        }
        #expect(Set(try Self.reasons().map(\.0.code)).count == 13)
    }

    @Test func equalAndHashedByValue() throws {
        let reasons = try Self.reasons().map(\.0)
        #expect(Set(reasons).count == reasons.count)
        for (index, reason) in reasons.enumerated() {
            let again = try Self.reasons()[index].0
            #expect(reason == again)
            #expect(reason.hashValue == again.hashValue)
        }
        #expect(TrustFailureReason.chainTooLong(presented: 12, limit: 10) != .chainTooLong(presented: 11, limit: 10))
        #expect(
            TrustFailureReason.hostnameMismatch(host: "a.test", names: [])
                != .hostnameMismatch(host: "b.test", names: [])
        )
        #expect(TrustFailureReason.pinMismatch(try Self.mismatch()) != .certificateNotPinned(try Self.mismatch()))
        #expect(Set([TrustFailureReason.emptyChain, .emptyChain]).count == 1)
    }

    @Test func accessorsReadTheDataOfTheirReasonsOnly() throws {
        let expired = TrustFailureReason.expired(certificate: "CN=a", notValidAfter: Self.date, evaluatedAt: Self.later)
        #expect(expired.certificate == "CN=a")
        #expect(expired.host == nil)
        #expect(TrustFailureReason.weakSignature(certificate: "CN=w", algorithm: "MD5").certificate == "CN=w")
        #expect(TrustFailureReason.hostnameMismatch(host: "a.test", names: []).host == "a.test")
        #expect(TrustFailureReason.hostNotEvaluated(host: "b.test").host == "b.test")
        #expect(TrustFailureReason.untrustedChain(details: ["x", "y"]).details == ["x", "y"])
        #expect(TrustFailureReason.emptyChain.details == [])
        #expect(TrustFailureReason.misconfigured(detail: "why").detail == "why")
        #expect(TrustFailureReason.invalidHost(host: "h", detail: "bad").detail == "bad")
        #expect(TrustFailureReason.pinMismatch(try Self.mismatch()).pinMismatch == (try Self.mismatch()))
        #expect(TrustFailureReason.certificateNotPinned(try Self.mismatch()).pinMismatch == (try Self.mismatch()))
        #expect(TrustFailureReason.emptyChain.pinMismatch == nil)
        #expect(TrustFailureReason.emptyChain.certificate == nil)
    }

    @Test func descriptionsAreTheSentencesTheEnumHad() {
        #expect(TrustFailureReason.emptyChain.description == "the server presented no certificate")
        #expect(
            TrustFailureReason.chainTooLong(presented: 12, limit: 10).description
                == "the server presented 12 certificates; at most 10 are accepted"
        )
        #expect(
            TrustFailureReason.untrustedChain(details: ["a", "b"]).description
                == "no valid path from the server's certificate to a trusted root was found: a; b"
        )
        #expect(
            TrustFailureReason.hostnameMismatch(host: "a.test", names: []).description
                == "certificate is not valid for host a.test; it is valid for: no subject alternative names"
        )
        #expect(
            TrustFailureReason.weakKey(certificate: "CN=a", keyType: "RSA", bits: 1024, minimumBits: 2048).description
                == "certificate CN=a has a key too weak to trust: RSA 1024-bit key; the minimum is 2048 bits"
        )
        #expect(
            TrustFailureReason.misconfigured(detail: "no evaluators").description
                == "trust evaluator misconfigured: no evaluators"
        )
    }

    /// Every notice with the code it must keep.
    static func notices() throws -> [(TrustNotice, String)] {
        let pin = try Pin(publicKeySHA256: Array(repeating: 9, count: 32))
        let subject = try DistinguishedName { CommonName("api.bulwark.test") }
        return [
            (.pinMatched(host: "api.bulwark.test", pin: pin, subject: subject), "pin_matched"),
            (.reportOnlyPinViolation(try Self.mismatch()), "report_only_pin_violation"),
            (.pinSetExpired(host: "api.bulwark.test", expiration: "2026-01-01T00:00:00Z"), "pin_set_expired"),
            (.validationDisabled(host: "api.bulwark.test"), "validation_disabled"),
            (.hostNotValidated(host: "api.bulwark.test"), "host_not_validated"),
            (.defaultValidationSkipped(host: "api.bulwark.test"), "default_validation_skipped"),
        ]
    }

    @Test func noticeCodesAreStable() throws {
        for (notice, code) in try Self.notices() {
            #expect(notice.code == code)
            #expect(notice.shortDescription == code)
            #expect(notice.host == "api.bulwark.test")
        }
    }

    @Test func noticesAreEqualAndHashedByValue() throws {
        let notices = try Self.notices().map(\.0)
        #expect(Set(notices).count == notices.count)
        for (index, notice) in notices.enumerated() {
            let again = try Self.notices()[index].0
            #expect(notice == again)
            #expect(notice.hashValue == again.hashValue)
        }
        #expect(TrustNotice.validationDisabled(host: "a.test") != .validationDisabled(host: "b.test"))
        #expect(TrustNotice.validationDisabled(host: "a.test") != .hostNotValidated(host: "a.test"))
    }

    @Test func noticeAccessorsAndDescriptions() throws {
        let pin = try Pin(publicKeySHA256: Array(repeating: 9, count: 32))
        let subject = try DistinguishedName { CommonName("api.bulwark.test") }
        let matched = TrustNotice.pinMatched(host: "api.bulwark.test", pin: pin, subject: subject)
        #expect(matched.pin == pin)
        #expect(matched.subject == subject)
        #expect(matched.pinMismatch == nil)
        #expect(matched.description == "pin \(pin) matched \(subject) on the verified chain for api.bulwark.test")
        #expect(TrustNotice.reportOnlyPinViolation(try Self.mismatch()).pinMismatch == (try Self.mismatch()))
        let expired = TrustNotice.pinSetExpired(host: "a.test", expiration: "2026-01-01T00:00:00Z")
        #expect(expired.expiration == "2026-01-01T00:00:00Z")
        #expect(expired.pin == nil)
        #expect(
            expired.description == "the pin set for a.test expired at 2026-01-01T00:00:00Z and is not enforced"
        )
        #expect(
            TrustNotice.validationDisabled(host: "a.test").description
                == "WARNING: certificate validation is disabled for a.test; any server can impersonate it"
        )
    }
}
