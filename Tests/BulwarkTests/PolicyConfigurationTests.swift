import BulwarkPolicy
import BulwarkTestSupport
import Foundation
import Testing

@testable import Bulwark

/// `BulwarkClient.Configuration(policy:)`: every client setting a policy file holds reaches the configuration.
@Suite("Client configurations from policy files")
struct PolicyConfigurationTests {
    static func directory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appending(path: "bulwark-policy-config-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test func everyClientSettingReachesTheConfiguration() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ca = try CertificateFactory.makeRoot()
        let leaf = try ClientCertificates.leaf(ca)
        try leaf.certificatePEM.write(to: directory.appending(path: "client.pem"), atomically: true, encoding: .utf8)
        try leaf.privateKeyPEM.write(to: directory.appending(path: "client.key"), atomically: true, encoding: .utf8)
        let path = directory.appending(path: "policy.json").path
        try """
        {
          "format": "bulwark-policy/1",
          "tls": { "minimumVersion": "1.3" },
          "allowlist": ["api.example.com", { "pattern": "**.example.net", "schemes": ["https"], "ports": [8443] }],
          "hosts": { "api.example.com": { "evaluator": "default" }, "**.example.net": { "evaluator": "default" } },
          "redirects": { "allowedHosts": ["**.example.net"], "maximumHops": 2, "allowedPorts": [8443] },
          "credentialScopes": { "api": { "under": "https://api.example.com/v1/" } },
          "clientCertificates": { "api.example.com": { "certificate": "client.pem", "key": "client.key" } }
        }
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let configuration = try BulwarkClient.Configuration(policyFile: path)
        #expect(configuration.tls.minimumVersion == .tls13)
        let allowlist = try #require(configuration.allowlist)
        #expect(allowlist.decision(for: URL(string: "https://api.example.com/")!).isAllowed)
        #expect(allowlist.decision(for: URL(string: "https://cdn.example.net:8443/")!).isAllowed)
        #expect(!allowlist.decision(for: URL(string: "https://cdn.example.net/")!).isAllowed)
        #expect(configuration.redirects.maximumHops == 2)
        #expect(configuration.redirects.allowedHosts.map(\.description) == ["**.example.net"])
        #expect(configuration.redirects.allowedPorts == [8443])
        #expect(configuration.trust.pattern(forHost: "api.example.com")?.description == "api.example.com")
        #expect(configuration.trust.evaluator(forHost: "other.example.org") == nil)
        let identity = try #require(configuration.clientIdentities.identity(forHost: "api.example.com"))
        #expect(identity.identity.fingerprint == (try ClientCertificates.identity(leaf)).fingerprint)
        #expect(configuration.clientIdentities.identity(forHost: "cdn.example.net") == nil)
    }

    @Test func aClientKeyThatCannotBeReadIsRefusedAtItsPointer() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appending(path: "policy.json").path
        try """
        {
          "format": "bulwark-policy/1",
          "hosts": {},
          "clientCertificates": { "api.example.com": { "certificate": "client.pem", "key": "absent.key" } }
        }
        """.write(toFile: path, atomically: true, encoding: .utf8)
        try "not a certificate".write(to: directory.appending(path: "client.pem"), atomically: true, encoding: .utf8)
        let error = #expect(throws: PolicyFileError.self) { try BulwarkClient.Configuration(policyFile: path) }
        #expect(error?.code == .invalidClientCertificate)
        #expect(error?.pointer == "/clientCertificates/api.example.com")
        #expect(error?.line == 4)
    }
}
