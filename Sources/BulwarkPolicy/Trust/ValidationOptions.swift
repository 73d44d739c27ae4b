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

    /// The secure defaults.
    public init() {}
}
