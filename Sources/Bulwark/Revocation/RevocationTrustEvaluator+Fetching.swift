import BulwarkPolicy

/// The revocation check as a leading-dot evaluator, over Bulwark's HTTP fetcher: `.revocation(.default())`.
extension ServerTrustEvaluating where Self == RevocationTrustEvaluator {
    /// `base` must trust the chain, and no certificate of the verified path may be revoked; see
    /// ``/BulwarkPolicy/RevocationTrustEvaluator``. Composes with every evaluator: `.revocation(.default())`,
    /// `.revocation(.publicKeys(pins), mode: .soft)`.
    ///
    /// - Parameters:
    ///   - base: The evaluator that must trust the chain first.
    ///   - method: The sources consulted, in order (`.any`: OCSP, then a CRL).
    ///   - mode: `.hard` (the default) refuses a chain whose status cannot be established; `.soft` reports it with a
    ///     `revocation_unknown` event and goes on.
    ///   - store: Loaded lists, and the cache of fetched lists and OCSP answers (one per evaluator by default, which
    ///     every connection of a client shares).
    ///   - networkAccessDisabled: Consult only loaded lists and cached answers (Alamofire's
    ///     `.networkAccessDisabled`), for fleets that cannot reach the CAs.
    ///   - fetcher: What fetches from distribution points and responders (``HTTPRevocationFetcher/shared``: plain
    ///     `http://`, 3 s, same-origin redirects only).
    public static func revocation(
        _ base: any ServerTrustEvaluating,
        method: RevocationTrustEvaluator.Method = .any,
        mode: RevocationTrustEvaluator.Mode = .hard,
        store: RevocationStore = RevocationStore(),
        networkAccessDisabled: Bool = false,
        fetcher: any RevocationFetching = HTTPRevocationFetcher.shared
    ) -> Self {
        RevocationTrustEvaluator(
            base,
            method: method,
            mode: mode,
            store: store,
            fetcher: networkAccessDisabled ? nil : fetcher
        )
    }
}

/// A revocation check after any evaluator: `.publicKeys(pins).checkingRevocation(mode: .soft)`.
extension ServerTrustEvaluating {
    /// This evaluator, followed by a revocation check of the chains it trusts: the same as
    /// ``revocation(_:method:mode:store:networkAccessDisabled:fetcher:)`` with `self` as base.
    public func checkingRevocation(
        method: RevocationTrustEvaluator.Method = .any,
        mode: RevocationTrustEvaluator.Mode = .hard,
        store: RevocationStore = RevocationStore(),
        networkAccessDisabled: Bool = false,
        fetcher: any RevocationFetching = HTTPRevocationFetcher.shared
    ) -> RevocationTrustEvaluator {
        .revocation(
            self,
            method: method,
            mode: mode,
            store: store,
            networkAccessDisabled: networkAccessDisabled,
            fetcher: fetcher
        )
    }
}
