/// Limits and rules applied when verifying a chain.
public struct ValidationOptions: Sendable, Hashable {
    /// The most certificates a server may present. Longer chains are refused before any signature is checked,
    /// which bounds the work an attacker can cause during a handshake.
    public var maximumPresentedCertificates: Int = 40
    /// The most intermediates a verified path may hold (self-issued ones, as in a key rollover, are not counted);
    /// `nil` for no limit beyond the CAs' path-length constraints.
    public var maximumIntermediates: Int? = nil
    /// Require the leaf's extended key usage to include `serverAuth`, as browsers do. On by default.
    public var requireServerAuthExtendedKeyUsage: Bool = true

    /// Hold trust anchors to the CA/Browser Forum's profile for root certificates (7.1.2.1), which forbids an
    /// extended key usage in a root. Off by default: an anchor whose extended key usage *excludes* `serverAuth`
    /// is always refused, but one that includes it widens nothing, and private or interception CAs you configure
    /// yourself (mitmproxy's marks its root `serverAuth`) legitimately carry one. The x509-limbo harness turns it
    /// on, since its anchors stand for publicly-trusted roots.
    public var enforcesRootProfile: Bool = false

    /// The rules a path is held to: ``ValidationProfile/webPKI`` (the default, what every handshake uses) or
    /// ``ValidationProfile/rfc5280`` (path validation alone, for `bulwark verify --profile rfc5280`).
    public var profile: ValidationProfile = .webPKI

    /// What the leaf is checked for. ``CertificatePurpose/server`` by default; under the web PKI profile,
    /// ``requireServerAuthExtendedKeyUsage`` decides whether `serverAuth` must be listed.
    public var purpose: CertificatePurpose = .server

    /// The secure defaults.
    public init() {}
}
