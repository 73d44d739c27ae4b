@_spi(Insecure) import BulwarkPolicy
import Foundation

extension BulwarkClient.Configuration {
    /// A configuration that does what the policy file at `path` says; see ``init(policy:)``.
    ///
    /// - Throws: ``/BulwarkPolicy/PolicyFileError`` naming the JSON pointer and line of the first problem.
    public init(policyFile path: String) throws(PolicyFileError) {
        try self.init(policy: try PolicyFile(contentsOfFile: path))
    }

    /// A configuration that does what `policy` says, the rest left at the secure defaults: the trust manager (with
    /// revocation fetched over Bulwark's transport), the minimum TLS version, the host allowlist, the redirect
    /// policy, the client certificates, read from the files the policy names (keys and passphrases straight
    /// into locked memory), and the proxy, with its credentials read from their file.
    ///
    /// Credential scopes are not attached here: the policy names them, and code adds its secrets under them
    /// (`store.add(token, scope: policy.credentialScope(named: "api")!)`).
    ///
    /// - Throws: ``/BulwarkPolicy/PolicyFileError``; a client certificate that cannot be loaded is
    ///   ``/BulwarkPolicy/PolicyFileError/Code/invalidClientCertificate`` at its pointer.
    public init(policy: PolicyFile) throws(PolicyFileError) {
        self.init(trust: try ServerTrustManager(policy: policy))
        if policy.minimumTLSVersion == .tls13 {
            self.tls.minimumVersion = .tls13
        }
        if let allowlist = policy.allowlist {
            self.allowlist = HostAllowlist(
                allowlist.map { .init($0.pattern, schemes: $0.schemes.map(Set.init), ports: $0.ports.map(Set.init)) }
            )
        }
        if let redirects = policy.redirects {
            var redirectPolicy = RedirectPolicy(
                allowedHosts: redirects.allowedHosts,
                maximumHops: redirects.maximumHops
            )
            redirectPolicy.followsRedirects = redirects.follow
            redirectPolicy.allowedPorts = Set(redirects.allowedPorts)
            redirectPolicy.allowedSchemes = Set(redirects.allowedSchemes)
            redirectPolicy.allowsHTTPSToHTTP = redirects.allowsHTTPSToHTTP
            self.redirects = redirectPolicy
        }
        var identities = BulwarkClient.ClientIdentities()
        for entry in policy.clientCertificates {
            identities.set(try Self.loadIdentity(entry, policy: policy), for: entry.pattern)
        }
        self.clientIdentities = identities
        if let proxy = policy.proxy {
            self.proxy = try Self.proxy(proxy.setting, at: "/proxy", policy: policy)
            var overrides = BulwarkClient.ProxyOverrides()
            for host in proxy.hosts {
                let pointer = "/proxy/hosts/" + PolicyFile.pointerToken(host.pattern.description)
                overrides.set(try Self.proxy(host.setting, at: pointer, policy: policy), for: host.pattern)
            }
            self.proxyOverrides = overrides
        }
    }

    /// The proxy a policy's setting names, its credentials read from their file, an HTTPS proxy's CA from its
    /// `caFile`.
    private static func proxy(
        _ setting: PolicyFile.Proxy.Setting,
        at pointer: String,
        policy: PolicyFile
    ) throws(PolicyFileError) -> BulwarkClient.Proxy {
        let proxy = try Self.proxyWithoutCA(setting, at: pointer, policy: policy)
        guard let file = setting.caFile else { return proxy }
        let filePointer = pointer + "/caFile"
        do {
            let certificates = try CertificateLoader.certificates(atPath: policy.resolvedPath(file))
            return proxy.trustingProxy(with: DefaultTrustEvaluator(roots: .custom(certificates)))
        } catch {
            throw PolicyFileError(
                .invalidValue,
                pointer: filePointer,
                line: policy.line(of: filePointer),
                detail: "the proxy's CA file: \(error.description)"
            )
        }
    }

    private static func proxyWithoutCA(
        _ setting: PolicyFile.Proxy.Setting,
        at pointer: String,
        policy: PolicyFile
    ) throws(PolicyFileError) -> BulwarkClient.Proxy {
        switch setting.use {
        case .none: return .none
        case .environment: return .environment
        case .url(let url):
            var credentials: ProxyCredentials?
            if let file = setting.credentialsFile {
                do {
                    credentials = try ProxyCredentials(contentsOfFile: policy.resolvedPath(file))
                } catch {
                    let filePointer = pointer + "/credentialsFile"
                    throw PolicyFileError(
                        .invalidValue,
                        pointer: filePointer,
                        line: policy.line(of: filePointer),
                        detail: error.description
                    )
                }
            }
            let proxy = BulwarkClient.Proxy.url(url, credentials: credentials)
            if let why = proxy.validationError {
                let usePointer = pointer + "/use"
                throw PolicyFileError(
                    .invalidValue,
                    pointer: usePointer,
                    line: policy.line(of: usePointer),
                    detail: why
                )
            }
            return proxy
        }
    }

    private static func loadIdentity(
        _ entry: PolicyFile.ClientCertificate,
        policy: PolicyFile
    ) throws(PolicyFileError) -> ClientIdentity {
        let pointer = "/clientCertificates/" + PolicyFile.pointerToken(entry.pattern.description)
        func failure(_ detail: String) -> PolicyFileError {
            PolicyFileError(.invalidClientCertificate, pointer: pointer, line: policy.line(of: pointer), detail: detail)
        }
        do {
            if let pkcs12 = entry.pkcs12File, let passphraseFile = entry.passphraseFile {
                return try ClientIdentity.pkcs12(
                    try SecretBytes(contentsOfFile: policy.resolvedPath(pkcs12), trimmingTrailingNewlines: false),
                    passphrase: try SecretBytes(contentsOfFile: policy.resolvedPath(passphraseFile))
                )
            }
            guard let certificateFile = entry.certificateFile, let keyFile = entry.keyFile else {
                throw failure("a client certificate needs \"certificate\" and \"key\", or \"pkcs12\"")
            }
            let path = policy.resolvedPath(certificateFile)
            guard let chain = FileManager.default.contents(atPath: path) else {
                throw failure("cannot read the certificate file \"\(path)\"")
            }
            let key = try SecretBytes(contentsOfFile: policy.resolvedPath(keyFile), trimmingTrailingNewlines: false)
            if let passphraseFile = entry.passphraseFile {
                return try ClientIdentity.pem(
                    certificateChain: Array(chain),
                    privateKey: key,
                    passphrase: try SecretBytes(contentsOfFile: policy.resolvedPath(passphraseFile))
                )
            }
            return try ClientIdentity.pem(certificateChain: Array(chain), privateKey: key)
        } catch let error as PolicyFileError {
            throw error
        } catch {
            throw failure(String(describing: error))
        }
    }
}
