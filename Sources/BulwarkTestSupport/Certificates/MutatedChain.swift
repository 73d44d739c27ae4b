import BulwarkPolicy
import Foundation
import X509

/// The property of a chain that a mutation changes.
public enum MutationKind: String, Sendable, Hashable, CaseIterable, Comparable {
    /// Nothing is changed: a valid chain (a check that both verifiers accept what they must).
    case baseline
    /// The validity period.
    case validity
    /// The key usage extension.
    case keyUsage
    /// The extended key usage extension.
    case extendedKeyUsage
    /// The basic constraints extension.
    case basicConstraints
    /// The path length constraint.
    case pathLength
    /// DNS and IP name constraints.
    case nameConstraints
    /// The subject alternative names.
    case subjectAlternativeName
    /// The signature algorithm.
    case signatureAlgorithm
    /// The key type and size.
    case keySize
    /// Critical and unknown extensions.
    case criticalExtension
    /// How the chain is sent (order, missing or extra certificates).
    case chainShape
    /// Two mutations of different kinds at once.
    case combined

    /// Orders kinds as they are declared.
    public static func < (lhs: Self, rhs: Self) -> Bool {
        Self.allCases.firstIndex(of: lhs)! < Self.allCases.firstIndex(of: rhs)!
    }
}

/// One chain made by ``ChainMutationEngine``: what a server presents, the root a client trusts, the host it asks
/// for, and what was changed.
public struct MutatedChain: Sendable {
    /// The position in the engine's sequence.
    public var index: Int
    /// The kind of change.
    public var kind: MutationKind
    /// What was changed, as `target: change` (for a combined case, two of them joined by ` + `).
    public var variants: [String]
    /// The name the client asks for: a DNS name or an IP address.
    public var host: String
    /// The root the client trusts.
    public var root: Certificate
    /// The leaf first, then whatever else the server sends.
    public var presented: [Certificate]

    /// The variants joined with ` + `.
    public var label: String { self.variants.joined(separator: " + ") }

    /// Whether `host` is an IP address (OpenSSL then needs `-verify_ip` instead of `-verify_hostname`).
    public var hostIsIPAddress: Bool {
        IPAddress(self.host) != nil
    }
}
