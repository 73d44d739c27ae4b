import Foundation
import X509

/// A root → intermediate → leaf chain, and the scenarios trust evaluation is tested against.
public struct TestChain: Sendable {
    /// What is wrong with a chain, if anything.
    public enum Scenario: String, Sendable, Hashable, CaseIterable {
        /// A valid chain for the host.
        case valid
        /// The leaf expired yesterday.
        case expiredLeaf
        /// The leaf becomes valid tomorrow.
        case notYetValidLeaf
        /// The leaf names another host.
        case wrongHost
        /// The leaf names the host only as an IP address SAN (`127.0.0.1`).
        case ipAddressSAN
        /// The leaf holds `*.<host>` (valid for one-label subdomains of the host).
        case wildcardSAN
        /// The leaf is self-signed, not issued by the root.
        case selfSignedLeaf
        /// The server does not send the intermediate.
        case missingIntermediate
        /// The leaf's extended key usage is clientAuth only.
        case wrongExtendedKeyUsage
        /// The intermediate claims `CA:false`.
        case intermediateNotCA
        /// The leaf has no extended key usage extension.
        case noExtendedKeyUsage
    }

    /// The self-signed root CA.
    public let root: TestIdentity
    /// Nil for a self-signed leaf.
    public let intermediate: TestIdentity?
    /// The server's certificate and key.
    public let leaf: TestIdentity
    /// What a server presents: the leaf, then the intermediate unless it is missing.
    public let presentedChain: [Certificate]

    /// A chain made elsewhere (by `openssl ca`, say): `presentedChain` is what a server sends, leaf first.
    public init(root: TestIdentity, intermediate: TestIdentity?, leaf: TestIdentity, presentedChain: [Certificate]) {
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.presentedChain = presentedChain
    }

    /// Builds the chain for `scenario`. DNS scenarios name `host`; `.ipAddressSAN` names `ipAddress`;
    /// `.wildcardSAN` names `*.host`.
    public static func make(
        _ scenario: Scenario = .valid,
        host: String = "localhost",
        ipAddress: String = "127.0.0.1",
        key: TestKeyAlgorithm = .p256,
        now: Date = Date()
    ) throws -> TestChain {
        let root = try CertificateFactory.makeRoot(key: key, now: now)
        let intermediate = try CertificateFactory.issueIntermediate(
            from: root,
            key: key,
            isCA: scenario != .intermediateNotCA,
            now: now
        )
        var dnsNames = [host]
        var ipAddresses: [String] = []
        var eku: [ExtendedKeyUsage.Usage] = [.serverAuth]
        var validity = CertificateFactory.Validity.current
        switch scenario {
        case .expiredLeaf: validity = .expired
        case .notYetValidLeaf: validity = .notYetValid
        case .wrongHost: dnsNames = ["other.invalid"]
        case .ipAddressSAN:
            dnsNames = []
            ipAddresses = [ipAddress]
        case .wildcardSAN: dnsNames = ["*.\(host)"]
        case .wrongExtendedKeyUsage: eku = [.clientAuth]
        case .noExtendedKeyUsage: eku = []
        case .valid, .selfSignedLeaf, .missingIntermediate, .intermediateNotCA: break
        }
        let selfSigned = scenario == .selfSignedLeaf
        let leaf = try CertificateFactory.issueLeaf(
            from: selfSigned ? nil : intermediate,
            commonName: dnsNames.first ?? ipAddress,
            dnsNames: dnsNames,
            ipAddresses: ipAddresses,
            extendedKeyUsage: eku,
            key: key,
            validity: validity,
            now: now
        )
        let presented: [Certificate]
        if selfSigned {
            presented = [leaf.certificate]
        } else if scenario == .missingIntermediate {
            presented = [leaf.certificate]
        } else {
            presented = [leaf.certificate, intermediate.certificate]
        }
        return TestChain(
            root: root,
            intermediate: selfSigned ? nil : intermediate,
            leaf: leaf,
            presentedChain: presented
        )
    }
}
