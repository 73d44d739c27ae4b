import Foundation

extension SecurityEvent {
    /// The `request_refused_out_of_scope` event: a ``CredentialStore`` that refuses requests outside every scope
    /// refused one to `url`.
    public static func requestRefusedOutOfScope(url: URL, host: String, requestID: UInt64? = nil) -> SecurityEvent {
        let target = URLRedaction.redacted(url)
        return SecurityEvent(
            kind: .requestRefusedOutOfScope,
            host: host,
            requestID: requestID,
            reason: "out_of_credential_scope",
            message: "request to \(target) refused: it is outside the scope of every credential",
            details: [.target: .text(target)]
        )
    }

    /// The `credential_stripped` event (reason `out_of_scope`) of a redirect hop to `to` that did not get the
    /// credentials in `headers`, attached to the hop from `from`, because `to` is outside their scope.
    public static func credentialsLeftBehind(
        headers: [String],
        from: URL,
        to: URL,
        requestID: UInt64? = nil
    )
        -> SecurityEvent
    {
        let fromText = URLRedaction.redacted(from)
        let toText = URLRedaction.redacted(to)
        let list = headers.joined(separator: ", ")
        return SecurityEvent(
            kind: .credentialStripped,
            host: (try? RequestURL(to))?.host,
            requestID: requestID,
            reason: "out_of_scope",
            message:
                "\(list) not attached on the redirect from \(fromText) to \(toText): outside the credential's scope",
            details: [.from: .text(fromText), .to: .text(toText), .headers: .list(headers)]
        )
    }

    /// The `credential_stripped` event (reason `left_scope_earlier`) of a redirect hop to `to`, inside a credential's
    /// scope, that got no store credential because an earlier request of the chain was outside the scope.
    public static func credentialsWithheldAfterScopeExit(
        from: URL,
        to: URL,
        requestID: UInt64? = nil
    )
        -> SecurityEvent
    {
        let fromText = URLRedaction.redacted(from)
        let toText = URLRedaction.redacted(to)
        return SecurityEvent(
            kind: .credentialStripped,
            host: (try? RequestURL(to))?.host,
            requestID: requestID,
            reason: "left_scope_earlier",
            message: "credentials not attached on the redirect from \(fromText) to \(toText): the redirect chain was "
                + "outside their scope earlier",
            details: [.from: .text(fromText), .to: .text(toText)]
        )
    }

    /// The `credential_stripped` event (reason `not_carried_before`) of a redirect hop to `to`, inside the scope of a
    /// credential that the request before it did not carry: a response chose the hop, so it may not add credentials.
    public static func credentialsNotCarriedBefore(from: URL, to: URL, requestID: UInt64? = nil) -> SecurityEvent {
        let fromText = URLRedaction.redacted(from)
        let toText = URLRedaction.redacted(to)
        return SecurityEvent(
            kind: .credentialStripped,
            host: (try? RequestURL(to))?.host,
            requestID: requestID,
            reason: "not_carried_before",
            message: "credentials not attached on the redirect from \(fromText) to \(toText): the request before it "
                + "did not carry them, and a redirect never adds a credential",
            details: [.from: .text(fromText), .to: .text(toText)]
        )
    }

    /// The `credential_stripped` event (reason `ambiguous_path`) of a request to `url` that got no credential of a
    /// base-URL scope on its origin because common servers read its path differently (`/v1/..;/admin` is `/admin` to
    /// Tomcat, `/v1//../admin` is `/admin` to nginx); see ``CredentialScope/PathAmbiguity``.
    public static func credentialsWithheldForAmbiguousPath(
        url: URL,
        ambiguity: CredentialScope.PathAmbiguity,
        requestID: UInt64? = nil
    ) -> SecurityEvent {
        // The path as sent, not with its dot segments removed: the event shows what was ambiguous.
        let target = URLRedaction.redacted(url.absoluteString)
        return SecurityEvent(
            kind: .credentialStripped,
            host: (try? RequestURL(url))?.host,
            requestID: requestID,
            reason: "ambiguous_path",
            message: "credentials scoped to a base URL not attached to \(target): the path is ambiguous, "
                + "\(ambiguity.explanation)",
            details: [.target: .text(target), .ambiguity: .text(ambiguity.rawValue)]
        )
    }
}
