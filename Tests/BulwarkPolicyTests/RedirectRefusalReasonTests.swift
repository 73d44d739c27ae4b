import BulwarkPolicy
import Testing

/// ``RedirectRefusalReason`` as public API: stable codes, equality and hashing by value, accessors and the texts it
/// had as an enum.
@Suite struct RedirectRefusalReasonTests {
    /// Every reason with the code it must keep: events, metrics and `bulwark redirect-check --json` carry these.
    static let reasons: [(RedirectRefusalReason, String)] = [
        (.notARedirect(status: 300), "not_a_redirect"),
        (.tooManyHops(limit: 5), "too_many_hops"),
        (.missingLocation, "missing_location"),
        (.emptyLocation, "empty_location"),
        (.locationTooLong(length: 9000, limit: 8192), "location_too_long"),
        (.controlCharacter(codePoint: 0x0A), "control_character"),
        (.backslash, "backslash"),
        (.unparsable(detail: "bad"), "unparsable"),
        (.schemeWithoutAuthority(scheme: "https"), "scheme_without_authority"),
        (.userInfo, "userinfo"),
        (.percentInHost, "percent_in_host"),
        (.nonASCIIHost, "non_ascii_host"),
        (.invalidHost(detail: "empty label"), "invalid_host"),
        (.invalidPort, "invalid_port"),
        (.schemeNotAllowed(scheme: "ftp"), "scheme_not_allowed"),
        (.schemeDowngrade, "scheme_downgrade"),
        (.hostNotAllowed(host: "evil.example"), "host_not_allowed"),
        (.portChange(from: 443, to: 8443), "port_change"),
        (.loop(url: "https://a.test/x"), "loop"),
        (.bodyNotReplayable(method: "POST"), "body_not_replayable"),
        (.refusedByHandler(detail: "no"), "refused_by_handler"),
    ]

    @Test func codesAreStable() {
        for (reason, code) in Self.reasons {
            #expect(reason.code == code)
            #expect(reason.shortDescription == code)
        }
        #expect(Set(Self.reasons.map(\.0.code)).count == 21)
    }

    @Test func equalAndHashedByValue() {
        let reasons = Self.reasons.map(\.0)
        #expect(Set(reasons).count == reasons.count)
        #expect(RedirectRefusalReason.loop(url: "https://a.test/x") == .loop(url: "https://a.test/x"))
        #expect(
            RedirectRefusalReason.loop(url: "https://a.test/x").hashValue
                == RedirectRefusalReason.loop(url: "https://a.test/x").hashValue
        )
        #expect(RedirectRefusalReason.loop(url: "https://a.test/x") != .loop(url: "https://a.test/y"))
        #expect(RedirectRefusalReason.portChange(from: 443, to: 8443) != .portChange(from: 8443, to: 443))
        #expect(RedirectRefusalReason.invalidHost(detail: "x") != .unparsable(detail: "x"))
        #expect(Set([RedirectRefusalReason.schemeDowngrade, .schemeDowngrade]).count == 1)
    }

    @Test func accessorsReadTheDataOfTheirReasonsOnly() {
        #expect(RedirectRefusalReason.notARedirect(status: 304).status == 304)
        #expect(RedirectRefusalReason.tooManyHops(limit: 5).limit == 5)
        #expect(RedirectRefusalReason.locationTooLong(length: 9000, limit: 8192).limit == 8192)
        #expect(RedirectRefusalReason.schemeNotAllowed(scheme: "ftp").scheme == "ftp")
        #expect(RedirectRefusalReason.schemeWithoutAuthority(scheme: "https").scheme == "https")
        #expect(RedirectRefusalReason.hostNotAllowed(host: "evil.example").host == "evil.example")
        #expect(RedirectRefusalReason.refusedByHandler(detail: "no").detail == "no")
        #expect(RedirectRefusalReason.invalidHost(detail: "empty label").detail == "empty label")
        #expect(RedirectRefusalReason.schemeDowngrade.host == nil)
        #expect(RedirectRefusalReason.schemeDowngrade.scheme == nil)
        #expect(RedirectRefusalReason.missingLocation.status == nil)
        #expect(RedirectRefusalReason.loop(url: "https://a.test/").detail == nil)
    }

    @Test func descriptionsAreTheSentencesTheEnumHad() {
        #expect(RedirectRefusalReason.tooManyHops(limit: 1).description == "more than 1 redirect")
        #expect(RedirectRefusalReason.tooManyHops(limit: 5).description == "more than 5 redirects")
        #expect(
            RedirectRefusalReason.controlCharacter(codePoint: 0x0A).description
                == "the Location holds a control or invisible formatting character (U+000A)"
        )
        #expect(
            RedirectRefusalReason.hostNotAllowed(host: "evil.example").description
                == "the host evil.example is not in the redirect allowlist"
        )
        #expect(
            RedirectRefusalReason.portChange(from: 443, to: 8443).description
                == "the port changes from 443 to 8443, which is not an allowed redirect port"
        )
        #expect(RedirectRefusalReason.missingLocation.description == "the response has no Location header")
    }
}
