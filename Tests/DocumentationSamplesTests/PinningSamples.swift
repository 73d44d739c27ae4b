import Bulwark
import Foundation
import X509

/// The Swift code blocks of the "Pinning and key rotation" article (Bulwark.docc/PinningAndKeyRotation.md).
enum PinningSamples {
    /// The pins of a chain, from the certificates. Runs in `SampleRunTests` on a test chain.
    static func pinsOfChain(chain: [Certificate]) -> [String] {
        // docs:begin pinning-pins-of-chain
        for certificate in chain {
            let summary = CertificateSummary(certificate)
            print(summary.pinLine)  // sha256/…: CN=…, the same value `bulwark pin` and OkHttp print
        }
        let intermediatePin = Pin.publicKey(of: chain[1])
        // docs:end
        return chain.map { CertificateSummary($0).pinLine } + [intermediatePin.description]
    }

    /// A pin set with a backup key and an expiration date. Compile-only.
    static func pinSet() throws -> ServerTrustManager {
        // docs:begin pinning-pin-set
        let pins = try PinSet(
            [
                "sha256/MIszjUGVGjcC16y/oogirigiSbnKDJzQdUuIDfPugLg=",  // the intermediate CA in use
                "sha256/LOUIbIk5ZUo2ZAFZukZzDCNVkKbhZRzx/hdUqBhjs6U=",  // the key you will rotate to, kept offline
            ],
            expiration: ISO8601DateFormatter().date(from: "2027-06-01T00:00:00Z")  // then: default validation only
        )
        let trust = try ServerTrustManager(evaluators: ["api.example.com": .publicKeys(pins)])
        // docs:end
        return trust
    }

    /// A report-only rollout with failure reports. Compile-only.
    static func reportOnly(candidatePins: [String]) throws -> BulwarkClient.Configuration {
        // docs:begin pinning-report-only
        let observed = try PinSet(candidatePins, enforcement: .reportOnly)
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: ["api.example.com": .publicKeys(observed)])
        )
        configuration.pinFailureReporting = .init(reportURIs: [URL(string: "https://pins.example.com/report")!])
        // docs:end
        return configuration
    }

    /// Signed policy updates for a running client. Compile-only.
    static func policyUpdates(
        client: BulwarkClient,
        trustedKeyLines: String,
        bundleServerPins: PinSet,
        directory: String
    ) async throws -> PolicyUpdater {
        // docs:begin pinning-policy-updater
        let updater = PolicyUpdater(
            client: client,
            configuration: .init(
                url: "https://policy.example.com/bulwark-bundle.json",
                trustedKeys: try PolicyTrustedKeys(fileContents: trustedKeyLines, threshold: 2),
                directory: directory,  // the last good bundle and the highest version, kept across restarts
                fetch: .init(
                    trust: try ServerTrustManager(evaluators: ["policy.example.com": .publicKeys(bundleServerPins)])
                )
            )
        )
        updater.start()  // the stored bundle, verified again; or the built-in policy
        let outcome = await updater.update()  // .applied(version:), .unchanged, .refused(reason), .fellBack(reason)
        // docs:end
        _ = outcome
        return updater
    }

    /// Certificate pinning. Compile-only.
    static func pinnedCertificates(serverCertificatePEM: String) throws -> ServerTrustManager {
        // docs:begin pinning-certificates
        let pinned = try Certificate(pemEncoded: serverCertificatePEM)
        let trust = try ServerTrustManager(evaluators: [
            "device.local.example": .pinnedCertificates([pinned], acceptSelfSignedCertificates: true)
        ])
        // docs:end
        return trust
    }
}
