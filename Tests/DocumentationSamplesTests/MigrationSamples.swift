import Bulwark
import Foundation
import NIOCore
import NIOHTTP1

/// The Swift code blocks of the "Migrating from AsyncHTTPClient" article
/// (Bulwark.docc/MigratingFromAsyncHTTPClient.md): each example of AsyncHTTPClient 1.37.0's README, rewritten for
/// Bulwark, in the order of that README.
enum MigrationSamples {
    /// "Request-Response API" with Swift Concurrency. Compile-only (it names apple.com).
    static func requestResponse() async throws {
        // docs:begin migration-request-response
        let client = BulwarkClient(
            configuration: .init(trust: try ServerTrustManager(evaluators: ["apple.com": .default()]))
        )
        let request = BulwarkRequest(url: "https://apple.com/")
        let response = try await client.execute(request, timeout: .seconds(30))
        print("HTTP head", response)
        if response.status == .ok {
            let body = try await response.body.collect(upTo: 1024 * 1024)  // 1 MB
            print("received \(body.readableBytes) bytes")  // handle body
        } else {
            // handle remote error
        }
        await client.shutdown()
        // docs:end
    }

    /// "Request-Response API" with an EventLoopFuture: Bulwark has no future API, so a task completes a promise.
    /// Compile-only.
    static func requestResponseFuture(client: BulwarkClient, eventLoop: any EventLoop) {
        // docs:begin migration-future
        let promise = eventLoop.makePromise(of: BulwarkResponse.self)
        promise.completeWithTask {
            try await client.execute(BulwarkRequest(url: "https://apple.com/"), timeout: .seconds(30))
        }
        promise.futureResult.whenComplete { result in
            switch result {
            case .failure(let error):
                print("request failed:", error)  // process error
            case .success(let response):
                if response.status == .ok {
                    // handle response
                } else {
                    // handle remote error
                }
            }
        }
        // docs:end
    }

    /// "Usage guide": method, header, body. Compile-only.
    static func usageGuide(client: BulwarkClient) async {
        // docs:begin migration-usage-guide
        do {
            var request = BulwarkRequest(url: "https://apple.com/")
            request.method = .POST
            request.headers.add(name: "User-Agent", value: "Swift BulwarkClient")
            request.body = .bytes(ByteBuffer(string: "some data"))

            let response = try await client.execute(request, timeout: .seconds(30))
            if response.status == .ok {
                // handle response
            } else {
                // handle remote error
            }
        } catch {
            // handle error
        }
        // docs:end
    }

    /// "Redirects following". Compile-only.
    static func redirects() throws -> BulwarkClient {
        // docs:begin migration-redirects
        var configuration = BulwarkClient.Configuration(
            trust: try ServerTrustManager(evaluators: ["apple.com": .default(), "www.apple.com": .default()])
        )
        // Redirects are followed by default, to the starting host only; list the other hosts they may reach.
        configuration.redirects = try RedirectPolicy(allowing: ["www.apple.com"])
        let client = BulwarkClient(configuration: configuration)
        // docs:end
        return client
    }

    /// "Timeouts": the client's, then one request's. Compile-only.
    static func timeouts(trust: ServerTrustManager, request: BulwarkRequest) async throws {
        // docs:begin migration-timeouts
        var configuration = BulwarkClient.Configuration(trust: trust)
        configuration.timeouts.connect = .seconds(1)
        configuration.timeouts.idleRead = .seconds(1)
        let client = BulwarkClient(configuration: configuration)
        // docs:end
        // docs:begin migration-deadline
        let response = try await client.execute(request, deadline: .now() + .milliseconds(1))
        // docs:end
        _ = response
    }

    /// "Streaming" with Swift Concurrency. Compile-only (it names apple.com); `countBytes` below runs the same loop.
    static func streaming(client: BulwarkClient) async {
        // docs:begin migration-streaming
        do {
            let request = BulwarkRequest(url: "https://apple.com/")
            let response = try await client.execute(request, timeout: .seconds(30))
            print("HTTP head", response)

            // if defined, the content-length headers announces the size of the body
            let expectedBytes = response.headers.first(name: "content-length").flatMap(Int.init)

            var receivedBytes = 0
            // asynchronously iterates over all body fragments
            // this loop will automatically propagate backpressure correctly
            for try await buffer in response.body {
                // for this example, we are just interested in the size of the fragment
                receivedBytes += buffer.readableBytes

                if let expectedBytes = expectedBytes {
                    // if the body size is known, we calculate a progress indicator
                    let progress = Double(receivedBytes) / Double(expectedBytes)
                    print("progress: \(Int(progress * 100))%")
                }
            }
            print("did receive \(receivedBytes) bytes")
        } catch {
            print("request failed:", error)
        }
        // docs:end
    }

    // docs:begin migration-counting
    /// What AsyncHTTPClient's `CountingDelegate` counted, without a delegate: each step of the delegate is a point
    /// in this function (the head has arrived when `execute` returns; each body part is one iteration).
    static func countBytes(client: BulwarkClient, request: BulwarkRequest) async throws -> Int {
        let response = try await client.execute(request, timeout: .seconds(30))  // didReceiveHead
        var count = 0
        for try await buffer in response.body {  // didReceiveBodyPart, with backpressure
            count += buffer.readableBytes
        }
        return count  // didFinishRequest; an error thrown above is didReceiveError
    }
    // docs:end

    // docs:begin migration-download
    /// What AsyncHTTPClient's `FileDownloadDelegate` does: streams the body to a file, reporting progress.
    static func download(
        client: BulwarkClient,
        _ request: BulwarkRequest,
        to path: String,
        reportProgress: (_ receivedBytes: Int, _ totalBytes: Int?) -> Void
    ) async throws -> Int {
        let response = try await client.execute(request, timeout: .seconds(300))
        guard response.status == .ok else { throw URLError(.badServerResponse) }
        let totalBytes = response.headers.first(name: "content-length").flatMap(Int.init)
        guard FileManager.default.createFile(atPath: path, contents: nil) else { throw URLError(.cannotCreateFile) }
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? file.close() }
        var receivedBytes = 0
        for try await buffer in response.body {
            try file.write(contentsOf: Data(buffer.readableBytesView))
            receivedBytes += buffer.readableBytes
            reportProgress(receivedBytes, totalBytes)
        }
        return receivedBytes
    }
    // docs:end

    /// "Disabling HTTP/2". Compile-only.
    static func http1Only(trust: ServerTrustManager) -> BulwarkClient {
        // docs:begin migration-http1
        var configuration = BulwarkClient.Configuration(trust: trust)
        configuration.tls.applicationProtocols = ["http/1.1"]
        let client = BulwarkClient(configuration: configuration)
        // docs:end
        return client
    }

    /// AsyncHTTPClient's `dnsOverride`. Compile-only.
    static func resolveOverride(configuration: inout BulwarkClient.Configuration) {
        // docs:begin migration-dns-override
        configuration.resolveOverrides[.init(host: "api.example.com", port: 443)] = "10.0.0.7"
        // docs:end
    }

    /// AsyncHTTPClient's `HTTPClientError` checks, as `BulwarkError` codes. Compile-only.
    static func errors(client: BulwarkClient, request: BulwarkRequest) async {
        // docs:begin migration-errors
        do {
            _ = try await client.execute(request, timeout: .seconds(30))
        } catch let error as BulwarkError where error.code == .readTimeout {
            // was: catch let error as HTTPClientError where error == .readTimeout
        } catch let error as BulwarkError where error.code == .trustRefused {
            // was: an NIOSSLError.handshakeFailed(.sslError(…CERTIFICATE_VERIFY_FAILED…)) with no reason
            print(error.trustRefusal?.reasons ?? [])
        } catch {
            // every error `execute` throws is a BulwarkError
        }
        // docs:end
    }
}
