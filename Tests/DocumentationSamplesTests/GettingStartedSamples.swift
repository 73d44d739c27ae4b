import Bulwark
import Foundation
import NIOCore
import X509

/// The Swift code blocks of the "Getting started" article (Bulwark.docc/GettingStarted.md).
enum GettingStartedSamples {
    /// A client that pins one API host. Compile-only (its pins are placeholders).
    static func makeClient() throws -> BulwarkClient {
        // docs:begin getting-started-client
        let trust = try ServerTrustManager(evaluators: [
            "api.example.com": .publicKeys(
                try PinSet([
                    "sha256/MIszjUGVGjcC16y/oogirigiSbnKDJzQdUuIDfPugLg=",  // the intermediate CA's key
                    "sha256/LOUIbIk5ZUo2ZAFZukZzDCNVkKbhZRzx/hdUqBhjs6U=",  // a backup key, kept offline
                ])
            )
        ])
        let client = BulwarkClient(configuration: .init(trust: trust))
        // docs:end
        return client
    }

    /// One GET: status, a header, the body. Runs in `SampleRunTests` against a local server (`url` is its `/hello`).
    static func get(client: BulwarkClient, url: String) async throws -> String {
        // docs:begin getting-started-get
        let response = try await client.execute(BulwarkRequest(url: url), timeout: .seconds(30))
        print(response.status, response.headers.first(name: "content-type") ?? "no content type")
        guard response.status == .ok else {
            throw URLError(.badServerResponse)
        }
        let body = try await response.body.collect(upTo: 1 << 20)  // at most 1 MiB, or `body_too_large`
        let text = String(buffer: body)
        // docs:end
        return text
    }

    /// A POST with headers and a body. Runs in `SampleRunTests` against a local server (`url` is its `/echo`).
    static func post(client: BulwarkClient, url: String) async throws -> BulwarkResponse {
        // docs:begin getting-started-post
        var request = BulwarkRequest(url: url, method: .POST)
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .string(#"{"name":"Ada"}"#)
        let response = try await client.execute(request, timeout: .seconds(30))
        // docs:end
        return response
    }

    /// Errors by code. Runs in `SampleRunTests` against a local server whose key the client does not pin (the test
    /// reads the refusal from the client's event monitor).
    static func handleErrors(client: BulwarkClient, request: BulwarkRequest) async {
        // docs:begin getting-started-errors
        do {
            let response = try await client.execute(request, timeout: .seconds(30))
            for try await _ in response.body {}
        } catch let error as BulwarkError {
            switch error.code {
            case .trustRefused:
                // The handshake was refused before any request byte was sent. The refusal names the host, the
                // verified chain as `sha256/…: subject` lines and the pins that were expected.
                print(error.trustRefusal.map(String.init(describing:)) ?? error.description)
            case .connectFailed, .connectTimeout, .readTimeout, .deadlineExceeded:
                print("try again later:", error)  // no query, user information or header value in the text
            default:
                print("request failed:", error.shortDescription)  // a bounded label, fit for metrics
            }
        } catch {
            print("request failed:", error)  // an error of your own code, or of a custom body stream
        }
        // docs:end
    }

    /// A development server under a private CA, reached at another address. Compile-only.
    static func privateCA(caPEM: String) throws -> BulwarkClient.Configuration {
        // docs:begin getting-started-private-ca
        let devCA = try Certificate(pemEncoded: caPEM)
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: [
                "api.dev.example": .default(roots: .custom([devCA]))
            ])
        )
        configuration.resolveOverrides[.init(host: "api.dev.example", port: 443)] = "127.0.0.1"
        // docs:end
        return configuration
    }

    /// Shutting down. Compile-only.
    static func shutdown(client: BulwarkClient) async {
        // docs:begin getting-started-shutdown
        await client.shutdown()
        // docs:end
    }
}
