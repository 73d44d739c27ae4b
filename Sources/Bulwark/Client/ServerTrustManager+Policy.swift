import BulwarkPolicy

extension ServerTrustManager {
    /// A manager that decides as the policy file at `path` says (format `bulwark-policy/1`; see ``/BulwarkPolicy/PolicyFile``).
    /// Revocation checks the policy asks for fetch CRLs and OCSP answers with ``HTTPRevocationFetcher/shared``.
    ///
    /// ```swift
    /// let client = BulwarkClient(configuration: .init(trust: try ServerTrustManager(policyFile: "bulwark-policy.json")))
    /// ```
    ///
    /// - Throws: ``/BulwarkPolicy/PolicyFileError`` naming the JSON pointer and line of the first problem.
    public init(policyFile path: String) throws(PolicyFileError) {
        try self.init(policyFile: path, revocationFetcher: HTTPRevocationFetcher.shared)
    }

    /// A manager that decides as `policy` says; revocation checks fetch with ``HTTPRevocationFetcher/shared``.
    public init(policy: PolicyFile) throws(PolicyFileError) {
        try self.init(policy: policy, revocationFetcher: HTTPRevocationFetcher.shared)
    }
}
