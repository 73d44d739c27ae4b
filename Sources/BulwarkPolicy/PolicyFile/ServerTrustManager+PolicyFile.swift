import Foundation

extension ServerTrustManager {
    /// A manager that decides as the policy file at `path` says (see ``PolicyFile``).
    ///
    /// - Parameters:
    ///   - path: The policy file (`bulwark-policy/1`); relative certificate paths start at its folder.
    ///   - revocationFetcher: What fetches CRLs and OCSP answers for evaluators with a revocation check; nil is
    ///     accepted only when every such check says `"networkAccessDisabled": true`. (`import Bulwark` adds
    ///     `ServerTrustManager(policyFile:)`, which fetches with Bulwark's own transport.)
    /// - Throws: ``PolicyFileError`` naming the JSON pointer of the first problem.
    public init(policyFile path: String, revocationFetcher: (any RevocationFetching)?) throws(PolicyFileError) {
        try self.init(policy: try PolicyFile(contentsOfFile: path), revocationFetcher: revocationFetcher)
    }

    /// A manager that decides as `policy` says.
    ///
    /// - Parameters:
    ///   - policy: A decoded policy file.
    ///   - revocationFetcher: What fetches CRLs and OCSP answers; nil is accepted only when every revocation check
    ///     of the policy says `"networkAccessDisabled": true`.
    /// - Throws: ``PolicyFileError`` with ``PolicyFileError/Code/revocationFetcherMissing`` when a check needs a
    ///   fetcher and none was given.
    public init(policy: PolicyFile, revocationFetcher: (any RevocationFetching)?) throws(PolicyFileError) {
        var entries: [(HostPattern, any ServerTrustEvaluating)] = []
        for host in policy.hosts {
            let pointer = "/hosts/" + PolicyFile.pointerToken(host.pattern.description)
            entries.append(
                (
                    host.pattern,
                    try host.evaluator.makeEvaluator(fetcher: revocationFetcher, pointer: pointer, policy: policy)
                )
            )
        }
        if let other = policy.otherHosts {
            self.init(
                allHostsMustBeEvaluated: false,
                patterns: entries,
                defaultEvaluator: try other.makeEvaluator(
                    fetcher: revocationFetcher,
                    pointer: "/otherHosts",
                    policy: policy
                )
            )
        } else {
            self.init(patterns: entries)
        }
    }
}

extension PolicyFile.Evaluator {
    /// The evaluator this entry describes.
    ///
    /// - Parameter fetcher: What fetches revocation data; nil only when no revocation check of this entry needs the
    ///   network.
    /// - Throws: ``PolicyFileError`` when a revocation check needs a fetcher and none was given.
    public func makeEvaluator(
        revocationFetcher fetcher: (any RevocationFetching)?
    ) throws(PolicyFileError) -> any ServerTrustEvaluating {
        try self.makeEvaluator(fetcher: fetcher, pointer: "", policy: nil)
    }

    func makeEvaluator(
        fetcher: (any RevocationFetching)?,
        pointer: String,
        policy: PolicyFile?
    ) throws(PolicyFileError) -> any ServerTrustEvaluating {
        let base: any ServerTrustEvaluating
        switch self.kind {
        case .publicKeys:
            base = PublicKeysTrustEvaluator(
                pinSet: self.pinSet ?? Self.placeholderPinSet,
                roots: self.roots.trustRoots,
                performDefaultValidation: self.performDefaultValidation,
                validateHost: self.validateHost,
                options: self.options
            )
        case .pinnedCertificates:
            base = PinnedCertificatesTrustEvaluator(
                certificates: self.certificates.flatMap(\.certificates),
                roots: self.roots.trustRoots,
                acceptSelfSignedCertificates: self.acceptSelfSignedCertificates,
                performDefaultValidation: self.performDefaultValidation,
                validateHost: self.validateHost,
                options: self.options
            )
        case .composite:
            var members: [any ServerTrustEvaluating] = []
            for (index, member) in self.members.enumerated() {
                members.append(
                    try member.makeEvaluator(
                        fetcher: fetcher,
                        pointer: pointer + "/evaluators/\(index)",
                        policy: policy
                    )
                )
            }
            base = CompositeTrustEvaluator(members)
        case .disabled:
            base = DisabledTrustEvaluator()
        default:
            base = DefaultTrustEvaluator(
                roots: self.roots.trustRoots,
                options: self.options,
                validateHost: self.validateHost
            )
        }
        let checked = try self.withRevocation(base, fetcher: fetcher, pointer: pointer, policy: policy)
        guard let mode = self.certificateTransparency, mode != .off else { return checked }
        // Decoding refuses a host asking for CT in a policy without a log list; an evaluator built in code gets the
        // list of the policy it is made for, and none (so every SCT is from an unknown log) without one.
        let logs = policy?.certificateTransparency ?? CertificateTransparencyLogList(logs: [])
        return CertificateTransparencyTrustEvaluator(checked, logs: logs, mode: mode)
    }

    private func withRevocation(
        _ base: any ServerTrustEvaluating,
        fetcher: (any RevocationFetching)?,
        pointer: String,
        policy: PolicyFile?
    ) throws(PolicyFileError) -> any ServerTrustEvaluating {
        guard let revocation = self.revocation else { return base }
        if !revocation.networkAccessDisabled && fetcher == nil {
            throw PolicyFileError(
                .revocationFetcherMissing,
                pointer: pointer + "/revocation",
                line: policy?.line(of: pointer + "/revocation"),
                detail: "this revocation check fetches CRLs and OCSP answers, and no fetcher was given "
                    + "(load the policy through Bulwark's client, which fetches over its own transport, or say "
                    + "\"networkAccessDisabled\": true)"
            )
        }
        return RevocationTrustEvaluator(
            base,
            method: revocation.method,
            mode: revocation.mode,
            fetcher: revocation.networkAccessDisabled ? nil : fetcher
        )
    }

    /// Never used for a decoded policy (a `publicKeys` entry always has pins); an evaluator built in code without
    /// pins gets a set no chain can match rather than no pinning.
    private static let placeholderPinSet: PinSet = {
        let zero = try! Pin(publicKeySHA256: [UInt8](repeating: 0, count: 32))
        return try! PinSet([zero], allowSinglePin: true)
    }()
}
