import Bulwark
import Foundation

/// The Swift code blocks of the "Redirects" article (Bulwark.docc/Redirects.md).
enum RedirectSamples {
    /// Allowing more hosts and a port. Compile-only.
    static func configure(configuration: inout BulwarkClient.Configuration) throws {
        // docs:begin redirects-configure
        configuration.redirects = try RedirectPolicy(allowing: ["login.example.com", "**.cdn.example.com"])
        configuration.redirects.allowedPorts = [8443]
        configuration.redirects.maximumHops = 3
        // docs:end
    }

    /// One hop decided offline. Runs in `SampleRunTests` (no network: the policy is a value).
    static func decideOffline() throws -> RedirectDecision {
        // docs:begin redirects-decide
        let policy = try RedirectPolicy(allowing: ["**.example.com"])
        let start = URL(string: "https://api.example.com/login")!
        let hop = RedirectHop(
            request: RedirectRequest(
                method: "POST",
                url: start,
                headers: [HeaderField(name: "Authorization", value: "Bearer …")],
                body: .replayable
            ),
            status: 302,
            locations: ["https://cdn.example.com/x"],
            chain: RedirectChain(startingAt: start)
        )
        switch policy.decide(hop) {
        case .follow(let next):
            // GET https://cdn.example.com/x: 302 turned the POST into a GET, and the origin changed, so
            // `authorization` is in next.strippedCredentials.
            print(next.method, next.url, "stripped:", next.strippedCredentials)
        case .refuse(let refusal):
            print(refusal.shortDescription, refusal)  // a bounded reason, then from, to and why
        }
        // docs:end
        return policy.decide(hop)
    }

    /// A per-hop handler. Compile-only.
    static func handler(configuration: inout BulwarkClient.Configuration) {
        // docs:begin redirects-handler
        configuration.redirects.handler = { hop, next in
            // Called only for hops the rules would follow. A modified hop is checked again, and credentials
            // stripped again: a handler cannot send them where the rules would not.
            next.url.path.hasPrefix("/download/") ? .follow : .refuse("only downloads may redirect")
        }
        // docs:end
    }

    /// A refused hop returned instead of thrown, and the history of a response. Runs in `SampleRunTests` against a
    /// local server whose redirect leaves the allowed hosts.
    static func history(client: BulwarkClient, request: BulwarkRequest) async throws -> [RedirectRecord] {
        // docs:begin redirects-history
        let response = try await client.execute(request, timeout: .seconds(30))
        for record in response.redirects {
            // https://api.example.com/old 301 follow
            print(record.url, record.status, record.decision.shortDescription)
        }
        if let refusal = response.redirects.last?.decision.refusal {
            print("stopped at a redirect:", refusal.reason)  // `onRefusal = .returnRedirectResponse` returns it
        }
        // docs:end
        return response.redirects
    }

    /// Not following at all. Compile-only.
    static func doNotFollow(configuration: inout BulwarkClient.Configuration) {
        // docs:begin redirects-do-not-follow
        configuration.redirects = .doNotFollow  // every 3xx response is returned as it is
        // docs:end
    }
}
