import Foundation
import X509

/// A Bulwark policy as data: the file `bulwark-policy.json`, format `"bulwark-policy/1"`.
///
/// It says everything a ``ServerTrustManager`` and a client configuration can say that is not a secret: host
/// patterns and their evaluators (pins, pinned certificates, roots, revocation), the minimum TLS version, the host
/// allowlist, the redirect policy, the names of credential scopes (the credentials themselves come from code) and
/// which client certificate files go to which hosts.
///
/// ```json
/// {
///   "format": "bulwark-policy/1",
///   "hosts": {
///     "api.example.com": {
///       "evaluator": "publicKeys",
///       "pins": ["sha256/…", "sha256/…"],
///       "expires": "2027-06-30"
///     },
///     "**.example.com": { "evaluator": "default" }
///   }
/// }
/// ```
///
/// Decoding is strict: an unknown member, a value of the wrong type, a bad pin, a bad pattern or a certificate that
/// cannot be loaded is a ``PolicyFileError`` naming the JSON pointer and the line. ``encoded()`` writes a file that
/// decodes to an equal value. The schema is `schemas/bulwark-policy-1.schema.json` in the repository.
public struct PolicyFile: Hashable, Sendable {
    /// The format this type reads and writes.
    public static let format = "bulwark-policy/1"
    /// The largest policy file read (1 MiB).
    public static let maximumSize = 1 << 20

    /// Whether the file opts in to options that weaken validation (the `disabled` evaluator, https-to-http
    /// redirects). Without it such options are refused.
    ///
    /// > Warning: `"insecure": true` lets a policy file turn validation off for the hosts it names.
    public var insecure: Bool = false
    /// The host patterns and their evaluators, in the order written.
    public var hosts: [Host] = []
    /// The evaluator of hosts matching no pattern; nil (the default) refuses such hosts (`allHostsMustBeEvaluated`).
    public var otherHosts: Evaluator? = nil
    /// The lowest TLS version offered; nil keeps the client's default (TLS 1.2).
    public var minimumTLSVersion: TLSVersion? = nil
    /// The hosts requests may go to; nil allows every host the trust policy accepts.
    public var allowlist: [AllowlistEntry]? = nil
    /// The redirect policy; nil keeps the client's default (the starting host only, https only, five hops).
    public var redirects: Redirects? = nil
    /// Credential scopes by name. The credentials are attached in code: `store.add(token, scope: scope)`.
    public var credentialScopes: [CredentialScopeEntry] = []
    /// Which client certificate (mutual TLS) goes to which hosts, as file paths.
    public var clientCertificates: [ClientCertificate] = []
    /// The proxy requests go through; nil keeps the client's default (none).
    public var proxy: Proxy? = nil
    /// The Certificate Transparency logs trusted by the hosts whose evaluator says `"certificateTransparency"`; nil
    /// for none (such a host is then refused when the file is read).
    public var certificateTransparency: CertificateTransparencyLogList? = nil
    /// Where each value was written (line per JSON pointer) and the directory relative file paths start from.
    package var source = Source()

    /// An empty policy (it refuses every host until hosts are added).
    public init() {}

    /// A host pattern and its evaluator.
    public struct Host: Hashable, Sendable {
        /// The pattern, as ``HostPattern`` reads it.
        public var pattern: HostPattern
        /// What decides the host's chains.
        public var evaluator: Evaluator

        /// A host entry.
        public init(pattern: HostPattern, evaluator: Evaluator) {
            self.pattern = pattern
            self.evaluator = evaluator
        }
    }

    /// A TLS version.
    public struct TLSVersion: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// TLS 1.2 (`"1.2"`).
        public static let tls12 = TLSVersion("1.2")
        /// TLS 1.3 (`"1.3"`).
        public static let tls13 = TLSVersion("1.3")

        static let all: [TLSVersion] = [.tls12, .tls13]

        /// `1.2` or `1.3`, as written in the file.
        public var description: String { self.name }
    }

    /// One allowlist entry: a pattern, and optionally the schemes and ports allowed for it.
    public struct AllowlistEntry: Hashable, Sendable {
        /// The hosts allowed.
        public var pattern: HostPattern
        /// Lower-case schemes; nil allows any.
        public var schemes: [String]?
        /// Effective ports; nil allows any.
        public var ports: [Int]?

        /// An allowlist entry.
        public init(pattern: HostPattern, schemes: [String]? = nil, ports: [Int]? = nil) {
            self.pattern = pattern
            self.schemes = schemes
            self.ports = ports
        }
    }

    /// The redirect policy: which redirects are followed.
    public struct Redirects: Hashable, Sendable {
        /// Whether redirects are followed at all.
        public var follow: Bool = true
        /// Hosts a redirect may lead to besides the starting host.
        public var allowedHosts: [HostPattern] = []
        /// The most redirects followed for one request.
        public var maximumHops: Int = 5
        /// Ports a redirect may move to.
        public var allowedPorts: [Int] = []
        /// The schemes a redirect may lead to (`https`, and `http` for plain-HTTP requests).
        public var allowedSchemes: [String] = ["https"]
        /// Whether https-to-http redirects are followed; needs `"insecure": true`.
        ///
        /// > Warning: Everything after such a hop travels unencrypted.
        public var allowsHTTPSToHTTP: Bool = false

        /// The default redirect policy.
        public init() {}
    }

    /// A named credential scope: where the credential a program attaches under this name may be sent.
    public struct CredentialScopeEntry: Hashable, Sendable {
        /// How the scope is described.
        public enum Rule: Hashable, Sendable {
            /// Everything under a base URL (``CredentialScope/under(_:)-(String)``).
            case under(String)
            /// Hosts matching patterns, over schemes, on ports (nil: the scheme's default port).
            case hosts([HostPattern], schemes: [String], ports: [Int]?)
        }

        /// The name code refers to (`store.add(token, scope: policy.credentialScope(named: "api")!)`).
        public var name: String
        /// Where the credential may go.
        public var rule: Rule
        /// The scope, built once when the file is read.
        public var scope: CredentialScope

        /// A named scope.
        public init(name: String, rule: Rule, scope: CredentialScope) {
            self.name = name
            self.rule = rule
            self.scope = scope
        }
    }

    /// A client certificate for the hosts matching a pattern, given as file paths only (relative paths start at the
    /// policy file's directory). A key or passphrase is never written into the policy itself.
    public struct ClientCertificate: Hashable, Sendable {
        /// The hosts the certificate is offered to.
        public var pattern: HostPattern
        /// A PEM certificate chain (leaf first), with ``keyFile``.
        public var certificateFile: String?
        /// The private key of ``certificateFile`` (PEM or DER).
        public var keyFile: String?
        /// A PKCS#12 file holding the chain and the key, instead of the two above.
        public var pkcs12File: String?
        /// A file holding the passphrase of the key or of the PKCS#12 file.
        public var passphraseFile: String?

        /// A client certificate entry.
        public init(
            pattern: HostPattern,
            certificateFile: String? = nil,
            keyFile: String? = nil,
            pkcs12File: String? = nil,
            passphraseFile: String? = nil
        ) {
            self.pattern = pattern
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.pkcs12File = pkcs12File
            self.passphraseFile = passphraseFile
        }
    }

    /// The credential scope called `name`, or nil.
    public func credentialScope(named name: String) -> CredentialScope? {
        self.credentialScopes.first(where: { $0.name == name })?.scope
    }

    /// The line a JSON pointer's value starts on in the file this policy was read from, or nil.
    public func line(of pointer: String) -> Int? {
        self.source.lines[pointer]
    }

    /// `path` resolved against the directory of the policy file (an absolute path is kept).
    public func resolvedPath(_ path: String) -> String {
        guard !path.hasPrefix("/"), let directory = self.source.directory else { return path }
        return URL(fileURLWithPath: directory).appending(path: path).path
    }

    /// Where a policy's values were written. Never part of a policy's equality: two policies that say the same
    /// are equal wherever they were read from.
    package struct Source: Hashable, Sendable {
        /// The line of each JSON pointer.
        package var lines: [String: Int] = [:]
        /// The directory of the policy file, for relative paths; nil when read from bytes.
        package var directory: String? = nil

        package init() {}

        package static func == (lhs: Source, rhs: Source) -> Bool { true }

        package func hash(into hasher: inout Hasher) {}
    }
}

extension PolicyFile {
    /// What decides a host's chains: one of the kinds, with its settings, optionally followed by a revocation
    /// check.
    public struct Evaluator: Hashable, Sendable {
        /// Which evaluator.
        public struct Kind: Hashable, Sendable, CustomStringConvertible {
            private let name: String
            private init(_ name: String) { self.name = name }

            /// Chain and host validation (``DefaultTrustEvaluator``): `"default"`.
            public static let `default` = Kind("default")
            /// Public-key pinning (``PublicKeysTrustEvaluator``): `"publicKeys"`.
            public static let publicKeys = Kind("publicKeys")
            /// Certificate pinning (``PinnedCertificatesTrustEvaluator``): `"pinnedCertificates"`.
            public static let pinnedCertificates = Kind("pinnedCertificates")
            /// Every member must trust the chain (``CompositeTrustEvaluator``): `"composite"`.
            public static let composite = Kind("composite")
            /// No validation at all: `"disabled"`, only with `"insecure": true`.
            public static let disabled = Kind("disabled")

            static let all: [Kind] = [.default, .publicKeys, .pinnedCertificates, .composite, .disabled]

            /// The name written in the file.
            public var description: String { self.name }
        }

        /// Which evaluator.
        public var kind: Kind
        /// The trust anchors (`default`, `publicKeys`, `pinnedCertificates`).
        public var roots: Roots = Roots()
        /// Whether the leaf must be valid for the host.
        ///
        /// > Warning: `false` accepts a certificate for any name.
        public var validateHost: Bool = true
        /// Whether the chain must lead to `roots` (`publicKeys`, `pinnedCertificates`).
        ///
        /// > Warning: `false` trusts whatever chains to a pinned key or certificate.
        public var performDefaultValidation: Bool = true
        /// The pins (`publicKeys`).
        public var pinSet: PinSet? = nil
        /// The pinned certificates (`pinnedCertificates`).
        public var certificates: [CertificateSource] = []
        /// Whether pinned certificates are also anchors (`pinnedCertificates`).
        public var acceptSelfSignedCertificates: Bool = false
        /// The members (`composite`).
        public var members: [Evaluator] = []
        /// Limits applied while verifying.
        public var options: ValidationOptions = ValidationOptions()
        /// A revocation check after the evaluator trusts a chain; nil for none.
        public var revocation: Revocation? = nil
        /// A Certificate Transparency check (against the file's log list) after the evaluator trusts a chain; nil for
        /// none.
        public var certificateTransparency: CertificateTransparencyTrustEvaluator.Mode? = nil

        /// An evaluator of `kind` with the default settings.
        public init(kind: Kind) {
            self.kind = kind
        }
    }

    /// Trust anchors: the system's, certificates of your own, or both.
    public struct Roots: Hashable, Sendable {
        /// Whether the system's roots are anchors.
        public var system: Bool = true
        /// Further anchors.
        public var certificates: [CertificateSource] = []

        /// The system roots.
        public init() {}

        /// The roots as ``TrustRoots``.
        public var trustRoots: TrustRoots {
            let anchors = self.certificates.flatMap(\.certificates)
            if anchors.isEmpty { return .system }
            return self.system ? .systemAnd(anchors) : .custom(anchors)
        }
    }

    /// Certificates written inline as PEM, or read from a file (relative to the policy file).
    public struct CertificateSource: Hashable, Sendable {
        /// The inline PEM text, or nil.
        public let pem: String?
        /// The file path as written, or nil.
        public let file: String?
        /// The certificates, loaded when the policy was read.
        public let certificates: [Certificate]

        package init(pem: String?, file: String?, certificates: [Certificate]) {
            self.pem = pem
            self.file = file
            self.certificates = certificates
        }

        /// Certificates from PEM text.
        public static func pem(_ text: String) throws(CertificateLoadingError) -> CertificateSource {
            CertificateSource(
                pem: text,
                file: nil,
                certificates: try CertificateLoader.certificates(fromPEM: text, source: "inline PEM")
            )
        }

        public static func == (lhs: CertificateSource, rhs: CertificateSource) -> Bool {
            lhs.pem == rhs.pem && lhs.file == rhs.file && lhs.certificates == rhs.certificates
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(self.pem)
            hasher.combine(self.file)
        }
    }

    /// A revocation check (``RevocationTrustEvaluator``) after the evaluator trusts a chain.
    public struct Revocation: Hashable, Sendable {
        /// The sources consulted.
        public var method: RevocationTrustEvaluator.Method = .any
        /// Hard or soft.
        public var mode: RevocationTrustEvaluator.Mode = .hard
        /// Only loaded lists and cached answers, no fetching.
        public var networkAccessDisabled: Bool = false

        /// OCSP then CRL, hard, with network access.
        public init() {}
    }
}
