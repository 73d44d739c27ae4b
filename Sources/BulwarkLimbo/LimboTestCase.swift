import Foundation

/// One test case of the x509-limbo suite, with the fields Bulwark's harness reads.
struct LimboTestCase: Decodable, Sendable, Equatable {
    struct PeerName: Decodable, Sendable, Equatable {
        var kind: String
        var value: String
    }

    var id: String
    var features: [String]?
    var validationKind: String
    var trustedCerts: [String]
    var untrustedIntermediates: [String]
    var peerCertificate: String
    var validationTime: String?
    var keyUsage: [String]?
    var extendedKeyUsage: [String]?
    var expectedResult: String
    var expectedPeerName: PeerName?
    var maxChainDepth: Int?
    /// PEM revocation lists to check the chain against (cases with the `has-crl` feature).
    var crls: [String]?

    enum CodingKeys: String, CodingKey {
        case id
        case features
        case validationKind = "validation_kind"
        case trustedCerts = "trusted_certs"
        case untrustedIntermediates = "untrusted_intermediates"
        case peerCertificate = "peer_certificate"
        case validationTime = "validation_time"
        case keyUsage = "key_usage"
        case extendedKeyUsage = "extended_key_usage"
        case expectedResult = "expected_result"
        case expectedPeerName = "expected_peer_name"
        case maxChainDepth = "max_chain_depth"
        case crls
    }

    /// bettertls cases or the rest ("core").
    var group: String { self.id.hasPrefix("bettertls::") ? "bettertls" : "core" }
}

struct LimboFile: Decodable {
    var version: Int
    var testcases: [LimboTestCase]
}
