/// Why the SCTs of a certificate could not be read.
///
/// A struct over a private enum, so that new failures can be added without breaking a `switch` of users. Tell
/// failures apart by ``code``; ``description`` says in words what was wrong.
public struct CertificateTransparencyError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Backing: Hashable, Sendable {
        case malformedList(detail: String)
        case malformedLogList(detail: String)
    }

    private let backing: Backing

    /// The certificate's SCT list is malformed; `detail` says where.
    public static func malformedList(_ detail: String) -> Self { Self(backing: .malformedList(detail: detail)) }

    /// A log list cannot be read; `detail` says where.
    public static func malformedLogList(_ detail: String) -> Self { Self(backing: .malformedLogList(detail: detail)) }

    /// `malformed_sct_list` or `malformed_log_list`.
    public var code: String {
        switch self.backing {
        case .malformedList: "malformed_sct_list"
        case .malformedLogList: "malformed_log_list"
        }
    }

    public var description: String {
        switch self.backing {
        case .malformedList(let detail): "the certificate's SCT list is malformed: \(detail)"
        case .malformedLogList(let detail): "the Certificate Transparency log list cannot be read: \(detail)"
        }
    }
}
