extension RedirectRecord {
    /// The security events of this hop, for any transport to hand to its ``EventMonitor``:
    ///
    /// - refused: one `redirect_refused` event, `reason` = the refusal's label;
    /// - followed: `insecure_option_used` (`https_to_http_redirect`) when the hop downgrades, `credential_stripped`
    ///   (`origin_change`, or `earlier_origin_change` when a previous hop changed the origin) when credentials were
    ///   removed, then `redirect_followed`.
    ///
    /// Every event names `from` and `to` in its details (URLs without query, fragment or user information) and
    /// never carries a header value.
    public func securityEvents(requestID: UInt64? = nil) -> [SecurityEvent] {
        let parsed = try? RequestURL(self.url)
        let host = parsed?.host
        let from = parsed?.redacted ?? URLRedaction.redacted(self.url.absoluteString)
        switch self.decision {
        case .refuse(let refusal):
            return [
                SecurityEvent(
                    kind: .redirectRefused,
                    host: host,
                    requestID: requestID,
                    reason: refusal.shortDescription,
                    message: refusal.description,
                    details: [
                        .from: .text(refusal.from), .to: .text(refusal.to ?? ""), .status: .number(Int(self.status)),
                        .reason: .text(refusal.shortDescription),
                    ]
                )
            ]
        case .follow(let follow):
            let to = URLRedaction.redacted(follow.url)
            let details: SecurityEvent.Details = [
                .from: .text(from), .to: .text(to), .status: .number(Int(self.status)), .method: .text(follow.method),
            ]
            var events: [SecurityEvent] = []
            if follow.isDowngrade {
                events.append(
                    SecurityEvent(
                        kind: .insecureOptionUsed,
                        host: host,
                        requestID: requestID,
                        reason: "https_to_http_redirect",
                        message: "redirect from \(from) to \(to) followed from https to http (allowsHTTPSToHTTP)",
                        details: details
                    )
                )
            }
            if !follow.strippedCredentials.isEmpty {
                let names = follow.strippedCredentials.joined(separator: ", ")
                let why = follow.changesOrigin ? "the origin changed" : "an earlier hop changed the origin"
                events.append(
                    SecurityEvent(
                        kind: .credentialStripped,
                        host: host,
                        requestID: requestID,
                        reason: follow.changesOrigin ? "origin_change" : "earlier_origin_change",
                        message: "\(names) removed on the redirect from \(from) to \(to): \(why)",
                        details: details.merging([.headers: .list(follow.strippedCredentials)])
                    )
                )
            }
            events.append(
                SecurityEvent(
                    kind: .redirectFollowed,
                    host: host,
                    requestID: requestID,
                    message: "\(self.status) from \(from) to \(to) followed with \(follow.method)",
                    details: details
                )
            )
            return events
        }
    }
}
