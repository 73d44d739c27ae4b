import Bulwark
import BulwarkTestHelpers
import BulwarkTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Random redirect graphs over several local origins, run through the real client against real servers.
///
/// Each graph has 2-8 nodes; a node is an origin (one of nine: allowlisted or not, same or other port, https or an
/// `http` port nothing listens on), a kind (a redirect with a status, a final page, a 300/304, a redirect without
/// `Location`) and one successor. A walk from node 0 is turned into URLs: the test server's `/redirect/N?to=URL`
/// route carries each node's successor in its URL, so an edge back to an earlier node becomes a new, longer URL; an
/// edge from a node to itself is a real loop, sent as a fragment-only `Location`. Locations are absolute,
/// scheme-relative or path-only when the origin allows it.
@Suite("Redirect property: random graphs over local origins", .serialized)
struct RedirectPropertyTests {
    static let graphCount = 200
    static let seed: UInt64 = 0xB01_3A4C

    struct Origin: Sendable {
        let scheme: String
        let host: String
        let port: Int
        /// The canonical origin the client uses for it.
        let canonical: String
        var prefix: String { "\(self.scheme)://\(self.host):\(self.port)" }
    }

    enum Kind {
        case redirect(Int)
        case final(String)
        case notRedirect(Int)
        case missingLocation
    }

    struct Node {
        let origin: Int
        let kind: Kind
        let next: Int
        /// 0 absolute, 1 scheme-relative, 2 path-only (used only when the origin allows it).
        let form: Int
    }

    @Test("200 random redirect graphs: credentials never leave their origin, refused hops are never contacted")
    func randomGraphs() async throws {
        let harness = try RedirectHarness()
        let serverA = try await harness.server()
        let serverB = try await harness.server(alpn: ["http/1.1"])
        let serverC = try await harness.server(alpn: ["h2"])
        let reserved = try ExternalPeers.ClosedPort()
        defer { withExtendedLifetime(reserved) {} }
        let closed = reserved.port
        let servers = [serverA, serverB, serverC]
        func origin(_ scheme: String, _ host: String, _ port: Int) -> Origin {
            let canonical = host.lowercased().hasSuffix(".") ? String(host.lowercased().dropLast()) : host.lowercased()
            return Origin(scheme: scheme, host: host, port: port, canonical: "\(scheme)://\(canonical):\(port)")
        }
        let origins = [
            origin("https", "a.bulwark.test", serverA.port),  // 0: the start
            origin("https", "A.BULWARK.TEST.", serverA.port),  // 1: the start, spelled otherwise
            origin("https", "b.bulwark.test", serverB.port),  // 2: allowlisted host, listed port
            origin("https", "a.bulwark.test", serverB.port),  // 3: the start host on a listed port
            origin("https", "c.bulwark.test", serverC.port),  // 4: allowlisted host, unlisted port
            origin("https", "www.attacker.test", serverB.port),  // 5: not allowlisted
            origin("https", "evil.bulwark.test", serverA.port),  // 6: not allowlisted, on the start's server
            origin("http", "a.bulwark.test", closed),  // 7: downgrade, nothing listens
            origin("http", "b.bulwark.test", closed),  // 8: downgrade, nothing listens
        ]
        let monitor = RecordingEventMonitor()
        let hosts = ["a.bulwark.test", "b.bulwark.test", "c.bulwark.test", "evil.bulwark.test", "www.attacker.test"]
        let throwing = try harness.client(hosts: hosts, ports: servers.map(\.port) + [closed], monitor: monitor) {
            $0.redirects.allowedHosts = [try! HostPattern("b.bulwark.test"), try! HostPattern("c.bulwark.test")]
            $0.redirects.allowedPorts = [serverA.port, serverB.port]
        }
        let returning = try harness.client(hosts: hosts, ports: servers.map(\.port) + [closed], monitor: monitor) {
            $0.redirects = throwing.configuration.redirects
            $0.redirects.onRefusal = .returnRedirectResponse
        }

        var random = SeededGenerator(seed: Self.seed)
        var reasons: [String: Int] = [:]
        var crossOriginFollows = 0
        var requestsSent = 0
        for graph in 0..<Self.graphCount {
            for server in servers { server.resetRecording() }
            let nodes = Self.randomGraph(origins: origins.count, using: &random)
            let start = Self.url(of: nodes, origins: origins)
            let secret = "secret-\(graph)"
            let (method, body) = Self.randomRequestShape(graph: graph, using: &random)
            let request = BulwarkRequest(
                url: start,
                method: method,
                headers: [
                    "Authorization": "Bearer \(secret)", "Cookie": "session=\(secret)",
                    "Proxy-Authorization": "Basic \(secret)", "X-Graph": String(graph),
                ],
                body: body
            )
            let eventsBefore = monitor.events.count
            let client = Bool.random(using: &random) ? throwing : returning
            let history: [RedirectRecord]
            do {
                let response = try await client.execute(request)
                _ = try await response.body.collect(upTo: 1 << 20)
                history = response.redirects
                if let last = history.last?.decision.follow {
                    #expect(response.url == last.url, "graph \(graph): the response comes from the last hop")
                }
            } catch let error as BulwarkError where error.code == .redirectRefused {
                #expect(client === throwing, "graph \(graph): only the throwing client throws")
                history = error.redirects
            }

            // The requests the chain should have sent, in order: the start and every followed hop.
            let expected = [request.url] + history.compactMap(\.decision.follow?.url)
            var recorded: [(server: Int, request: RecordedRequest)] = []
            for (index, server) in servers.enumerated() {
                recorded += server.requests.map { (index, $0) }
            }
            requestsSent += recorded.count
            #expect(
                recorded.count == expected.count,
                "graph \(graph): \(recorded.count) requests for \(expected.count) URLs"
            )
            let startOrigin = origins[0].canonical
            var leftOrigin = false
            for (position, url) in expected.enumerated() {
                let target = Self.canonicalOrigin(url)
                leftOrigin = leftOrigin || target != startOrigin
                let wanted = Self.pathAndQuery(url)
                let hostHeader = "\(url.host()!.lowercased()):\(url.port!)"
                let match = recorded.first {
                    servers[$0.server].port == url.port && $0.request.uri == wanted
                        && $0.request.value(forHeader: "host")?.lowercased() == hostHeader
                }
                guard let match else {
                    Issue.record("graph \(graph): \(url) was followed but never received")
                    continue
                }
                let credentials = ["authorization", "cookie", "proxy-authorization"].compactMap {
                    match.request.value(forHeader: $0)
                }
                if leftOrigin {
                    #expect(credentials.isEmpty, "graph \(graph): credentials reached \(url) after leaving the origin")
                } else {
                    #expect(credentials.count == 3, "graph \(graph): credentials dropped within the origin at \(url)")
                }
                if position > 0, let follow = history[position - 1].decision.follow {
                    #expect(match.request.method == follow.method)
                    #expect(
                        follow.method
                            == Self.expectedMethod(
                                history[position - 1].status,
                                previous: Self.method(at: position - 1, request: request, history: history)
                            )
                    )
                    if follow.changesOrigin { crossOriginFollows += 1 }
                }
            }
            // The headline property, checked on what the servers saw: a credential only ever arrives at its origin.
            for (server, received) in recorded where received.headers.contains(where: { $0.value.contains(secret) }) {
                #expect(servers[server].port == origins[0].port, "graph \(graph): a credential reached another server")
                #expect(received.value(forHeader: "host")?.lowercased() == "a.bulwark.test:\(origins[0].port)")
            }
            // Every refusal is one event naming from, to and why; no event carries a secret or a query.
            let refusals = history.compactMap(\.decision.refusal)
            let events = monitor.events[eventsBefore...]
            #expect(events.filter { $0.kind == .redirectRefused }.count == refusals.count)
            for refusal in refusals {
                reasons[refusal.shortDescription, default: 0] += 1
                #expect(
                    events.contains {
                        $0.kind == .redirectRefused && $0.details[.from]?.text == refusal.from
                            && $0.reason == refusal.shortDescription
                    }
                )
            }
            for event in events {
                let text = String(describing: event) + event.details.values.map(\.description).joined()
                #expect(!text.contains(secret) && !text.contains("?"), "graph \(graph): \(event)")
            }
        }
        print(
            "[redirect property] \(Self.graphCount) graphs, \(requestsSent) requests, "
                + "\(crossOriginFollows) cross-origin follows, refusals: \(reasons.sorted { $0.key < $1.key })"
        )
        // The generator reaches every rule the graphs can exercise.
        for reason in [
            "host_not_allowed", "port_change", "scheme_downgrade", "loop", "too_many_hops", "missing_location",
            "body_not_replayable",
        ] {
            #expect(reasons[reason, default: 0] > 0, "no graph was refused with \(reason)")
        }
        #expect(crossOriginFollows > 20)
        await throwing.shutdown()
        await returning.shutdown()
        for server in servers { try await server.shutdown() }
    }

    // MARK: Generation

    static func randomGraph(origins: Int, using random: inout SeededGenerator) -> [Node] {
        let count = Int.random(in: 2...8, using: &random)
        var nodes: [Node] = []
        for index in 0..<count {
            // The start is always origin 0; later nodes favor the allowlisted origins so chains get long.
            let origin = index == 0 ? 0 : [0, 0, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8].randomElement(using: &random)!
            let kind: Kind
            switch Int.random(in: 0..<20, using: &random) {
            case 0..<14: kind = .redirect([301, 302, 303, 307, 308].randomElement(using: &random)!)
            case 14..<17: kind = .final(["/headers", "/hello"].randomElement(using: &random)!)
            case 17..<19: kind = .notRedirect([300, 304].randomElement(using: &random)!)
            default: kind = .missingLocation
            }
            // Mostly forward edges, sometimes back or to itself.
            let next =
                Int.random(in: 0..<10, using: &random) < 7
                ? min(index + 1, count - 1) : Int.random(in: 0..<count, using: &random)
            nodes.append(Node(origin: origin, kind: kind, next: next, form: Int.random(in: 0..<3, using: &random)))
        }
        return nodes
    }

    /// The URL of node 0: the walk from it, unrolled (at most 8 hops deep).
    static func url(of nodes: [Node], origins: [Origin]) -> String {
        var walk: [Int] = [0]
        while walk.count < 9, case .redirect = nodes[walk.last!].kind, nodes[walk.last!].next != walk.last! {
            walk.append(nodes[walk.last!].next)
        }
        var path = ""
        var origin = origins[nodes[walk.last!].origin]
        for (position, index) in walk.enumerated().reversed() {
            let node = nodes[index]
            let here = origins[node.origin]
            let isLast = position == walk.count - 1
            switch node.kind {
            case .final(let page):
                path = page
            case .notRedirect(let status):
                path = RedirectHarness.redirect(status, to: "/hello")
            case .missingLocation:
                path = "/redirect/\(node.form == 0 ? 307 : 302)"
            case .redirect(let status) where isLast:
                // A walk that ends on a redirect: a self-edge is a real loop; a cut walk ends on a page.
                path =
                    node.next == index
                    ? RedirectHarness.redirect(status, to: "#again") : RedirectHarness.redirect(status, to: "/hello")
            case .redirect(let status):
                let location: String
                let target = "\(origin.prefix)\(path)"
                if node.form == 2 && here.canonical == origin.canonical {
                    location = path
                } else if node.form == 1 && here.scheme == origin.scheme {
                    location = "//\(origin.host):\(origin.port)\(path)"
                } else {
                    location = target
                }
                path = RedirectHarness.redirect(status, to: location)
            }
            origin = here
        }
        return "\(origin.prefix)\(path)"
    }

    static func randomRequestShape(
        graph: Int,
        using random: inout SeededGenerator
    ) -> (
        HTTPMethod, BulwarkRequest.Body?
    ) {
        switch Int.random(in: 0..<6, using: &random) {
        case 0, 1: return (.GET, nil)
        case 2: return (.POST, .string("body of graph \(graph)"))
        case 3: return (.PUT, .string("body of graph \(graph)"))
        case 4: return (.HEAD, nil)
        default: return (.POST, .stream { writer in try await writer.write(ByteBuffer(string: "streamed \(graph)")) })
        }
    }

    // MARK: Oracle helpers

    static func canonicalOrigin(_ url: URL) -> String {
        var host = url.host()!.lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        return "\(url.scheme!.lowercased())://\(host):\(url.port!)"
    }

    static func pathAndQuery(_ url: URL) -> String {
        url.path(percentEncoded: true) + (url.query(percentEncoded: true).map { "?" + $0 } ?? "")
    }

    static func method(at position: Int, request: BulwarkRequest, history: [RedirectRecord]) -> String {
        position == 0 ? request.method.rawValue : history[position - 1].decision.follow!.method
    }

    /// RFC 9110 and Fetch: 303 makes anything but HEAD a GET, 301 and 302 make POST a GET.
    static func expectedMethod(_ status: Int, previous: String) -> String {
        if status == 303 && previous != "HEAD" { return "GET" }
        if (status == 301 || status == 302) && previous == "POST" { return "GET" }
        return previous
    }
}
