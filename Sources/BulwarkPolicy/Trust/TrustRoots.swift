import X509

/// The certificates a chain must lead to: the operating system's bundle, your own, or both.
public struct TrustRoots: Sendable, Hashable {
    private enum Storage: Hashable, Sendable {
        case system
        case custom([Certificate])
        case systemAnd([Certificate])
    }

    private let storage: Storage
    /// The store of `.custom` roots, built once: every evaluation needs it, and building it hashes every anchor's
    /// subject. (The system roots are not touched here: ``SystemTrustRootIndex`` reads the system bundle, which only a
    /// client whose policy names the system roots should do.)
    private let customStore: CertificateStore?
    /// The verifier last built for these roots (see ``VerifierMemo``); not part of the value.
    let verifiers = VerifierMemo()
    /// The paths verified for presented chains with these roots (see ``VerifiedPathMemo``); not part of the value.
    let paths = VerifiedPathMemo()

    private init(storage: Storage) {
        self.storage = storage
        if case .custom(let certificates) = storage {
            self.customStore = CertificateStore(certificates)
        } else {
            self.customStore = nil
        }
    }

    /// The store of these roots, where `systemRoots` holds those of the system's that a verification can use (see
    /// ``SystemTrustRootIndex``); nil for roots that do not include the system's.
    func certificateStore(systemRoots: CertificateStore?) -> CertificateStore {
        switch self.storage {
        case .custom(let certificates): return self.customStore ?? CertificateStore(certificates)
        case .system: return systemRoots ?? CertificateStore()
        case .systemAnd(let certificates):
            return (systemRoots ?? CertificateStore()).appending(contentsOf: certificates)
        }
    }

    public static func == (lhs: TrustRoots, rhs: TrustRoots) -> Bool {
        lhs.storage == rhs.storage
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.storage)
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

    /// Whether these roots include the system's.
    var includesSystemRoots: Bool {
        switch self.storage {
        case .system, .systemAnd: return true
        case .custom: return false
        }
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
