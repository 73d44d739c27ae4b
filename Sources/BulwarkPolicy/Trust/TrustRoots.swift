import X509

/// The certificates a chain must lead to: the operating system's bundle, your own, or both.
public struct TrustRoots: Sendable, Hashable {
    private enum Storage: Hashable, Sendable {
        case system
        case custom([Certificate])
        case systemAnd([Certificate])
    }

    private let storage: Storage
    /// Built once: every evaluation needs it, and building it hashes every anchor's subject.
    let certificateStore: CertificateStore

    private init(storage: Storage) {
        self.storage = storage
        switch storage {
        case .system: self.certificateStore = CertificateStore.systemTrustRoots
        case .custom(let certificates): self.certificateStore = CertificateStore(certificates)
        case .systemAnd(let certificates):
            self.certificateStore = CertificateStore.systemTrustRoots.appending(contentsOf: certificates)
        }
    }

    /// The system trust store (on Linux, the distribution's CA bundle).
    public static let system = TrustRoots(storage: .system)

    /// Only the given certificates are trust anchors (a private CA, a test CA).
    public static func custom(_ certificates: [Certificate]) -> TrustRoots {
        TrustRoots(storage: .custom(certificates))
    }

    /// The system trust store plus the given certificates.
    public static func systemAnd(_ certificates: [Certificate]) -> TrustRoots {
        TrustRoots(storage: .systemAnd(certificates))
    }

    /// The certificates given explicitly (not those of the system store).
    var explicitCertificates: [Certificate] {
        switch self.storage {
        case .system: return []
        case .custom(let certificates), .systemAnd(let certificates): return certificates
        }
    }

    /// The same roots with `certificates` added as further anchors.
    func adding(_ certificates: [Certificate]) -> TrustRoots {
        guard !certificates.isEmpty else { return self }
        switch self.storage {
        case .system: return .systemAnd(certificates)
        case .custom(let existing): return .custom(existing + certificates)
        case .systemAnd(let existing): return .systemAnd(existing + certificates)
        }
    }
}
