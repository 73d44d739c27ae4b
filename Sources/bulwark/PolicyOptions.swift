import ArgumentParser
import Bulwark
import Foundation
import X509

/// The options shared by commands that connect: roots, pins, TLS version, address overrides.
struct PolicyOptions: ParsableArguments {
    @Option(name: .customLong("ca"), help: "A PEM or DER file of trust anchors, added to the system roots.")
    var caFiles: [String] = []

    @Option(
        name: .customLong("pin"),
        help: "A sha256/BASE64 public-key pin. Give at least two (a backup) unless --allow-single-pin."
    )
    var pins: [String] = []

    @Flag(help: "Accept a single --pin (TrustKit and Bulwark refuse that by default: a key change locks you out).")
    var allowSinglePin = false

    @Flag(help: "Offer TLS 1.3 only.")
    var tls13 = false

    @Option(help: "Connect HOST:PORT to ADDR instead of resolving HOST, as curl's --resolve.")
    var resolve: [String] = []

    /// A client configuration whose policy covers exactly `host`, with revocation checking as `revocation` says.
    func configuration(host: String, revocation: RevocationOption = .off) throws -> BulwarkClient.Configuration {
        var anchors: [Certificate] = []
        for file in self.caFiles {
            anchors += try CertificateLoader.certificates(atPath: file)
        }
        let roots: TrustRoots = anchors.isEmpty ? .system : .systemAnd(anchors)
        let evaluator: any ServerTrustEvaluating
        if self.pins.isEmpty {
            evaluator = DefaultTrustEvaluator(roots: roots)
        } else {
            evaluator = PublicKeysTrustEvaluator(
                pinSet: try PinSet(self.pins, allowSinglePin: self.allowSinglePin),
                roots: roots
            )
        }
        let checked: any ServerTrustEvaluating =
            switch revocation {
            case .off: evaluator
            case .soft: evaluator.checkingRevocation(mode: .soft)
            case .hard: evaluator.checkingRevocation(mode: .hard)
            }
        var configuration = BulwarkClient.Configuration(
            trust: ServerTrustManager(patterns: [(try HostPattern.exact(host), checked)])
        )
        if self.tls13 { configuration.tls.minimumVersion = .tls13 }
        for entry in self.resolve {
            let parts = entry.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3, Int(parts[1]) != nil else {
                throw ValidationError("--resolve takes HOST:PORT:ADDR, got \"\(entry)\"")
            }
            _ = try HostName.canonicalize(parts[0])
            configuration.resolveOverrides[BulwarkClient.Endpoint(host: parts[0], port: Int(parts[1]) ?? 0)] =
                BulwarkClient.ResolvedAddress(parts[2])
        }
        return configuration
    }
}

/// `--revocation`: whether and how strictly certificates are checked for revocation (OCSP, then CRL).
enum RevocationOption: String, ExpressibleByArgument, CaseIterable {
    /// Every certificate of the verified chain needs a "not revoked" answer.
    case hard
    /// Only a definite "revoked" refuses; an unknown status is reported.
    case soft
    /// No revocation check.
    case off

    static let help = ArgumentHelp(
        "Check the verified chain for revoked certificates: hard (an unknown status refuses), soft (only a revoked "
            + "certificate refuses) or off.",
        discussion: "The check asks each certificate's OCSP responder, then fetches its CRL, over http:// (the "
            + "answers are signed), with a 3 s timeout per fetch.",
        valueName: "hard|soft|off"
    )
}

/// Exit statuses per failure class, shared by `fetch` and `inspect`.
enum FailureExit {
    static func code(for error: any Error) -> Int32 {
        if error is PinError || error is HostPatternError || error is CertificateLoadingError {
            return 2
        }
        guard let error = error as? BulwarkError else { return 1 }
        switch error.code {
        case .invalidURL, .plainHTTPNotAllowed: return 2
        case .connectFailed: return 3
        case .tlsHandshakeFailed: return 4
        case .trustRefused, .hostNotAllowed: return 5
        case .connectTimeout, .tlsHandshakeTimeout, .readTimeout, .deadlineExceeded: return 6
        default: return 7
        }
    }

    static let help = """
        Exit status: 0 success, 1 other failure, 2 bad URL or arguments, 3 cannot connect, 4 TLS handshake \
        failed, 5 the trust policy refused the server (or the host is not in --allow-host), 6 a timeout, 7 the response failed.
        """
}
