/// Which rules a chain is held to beyond signatures and names: the web PKI's (what a TLS client does) or RFC 5280's
/// path validation alone.
public struct ValidationProfile: Hashable, Sendable, CustomStringConvertible {
    private enum Backing: Hashable, Sendable {
        case webPKI
        case rfc5280
    }

    private let backing: Backing

    /// RFC 5280 plus the web PKI's rules (`WebPKIPolicy`: extended key usage, key identifiers, critical basic
    /// constraints, key sizes, no SHA-1): what every handshake uses.
    public static let webPKI = ValidationProfile(backing: .webPKI)

    /// RFC 5280 path validation alone (section 6.1 with the default inputs: any policy, no explicit policy required,
    /// mapping and any-policy not inhibited), for checking a chain that is not a TLS server's, such as NIST's PKITS.
    /// Certificate policies are not processed: a path in which a CA requires an explicit policy is refused, naming
    /// the certificate, because its outcome would depend on them.
    public static let rfc5280 = ValidationProfile(backing: .rfc5280)

    /// `webpki` or `rfc5280`, as the command line spells them.
    public var description: String {
        switch self.backing {
        case .webPKI: "webpki"
        case .rfc5280: "rfc5280"
        }
    }
}

/// What the leaf certificate is checked for: a TLS server, a TLS client, or any use.
public struct CertificatePurpose: Hashable, Sendable, CustomStringConvertible {
    enum Backing: Hashable, Sendable {
        case server
        case client
        case any
    }

    let backing: Backing

    /// A TLS server: under ``ValidationProfile/webPKI`` its extended key usage must list `serverAuth`; under
    /// ``ValidationProfile/rfc5280`` an extended key usage, when present, must allow it.
    public static let server = CertificatePurpose(backing: .server)
    /// A TLS client: as ``server``, with `clientAuth`.
    public static let client = CertificatePurpose(backing: .client)
    /// Any use: the extended key usage is not consulted.
    public static let any = CertificatePurpose(backing: .any)

    /// `server`, `client` or `any`, as the command line spells them.
    public var description: String {
        switch self.backing {
        case .server: "server"
        case .client: "client"
        case .any: "any"
        }
    }
}
