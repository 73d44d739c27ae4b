import BulwarkTestSupport

/// Several clients' requests taken in turn, one request at a time, each on a new connection (`connection: close`):
/// the clients share every moment of the machine, so a slow stretch of it (a neighbour's burst, steal time) lands on
/// all of them alike instead of on one client's leg, where legs of the same work differ by 10 % on this machine.
///
/// A request overlaps the end of the one before it (that connection's close, work after its response), so each
/// request is kept with the client whose request came just before it; ``InterleavedRatio`` takes that into account.
/// Each turn takes the clients in a new random order (a fixed rotation of three clients had each follow one of the
/// others twice as often as the third, which moved a ratio by 2 %), from a generator whose seed is reported.
struct InterleavedSamples: Sendable {
    struct Request: Sendable {
        /// Index in ``labels``.
        let client: Int
        /// The client whose request came just before this one (nil for the first).
        let previous: Int?
        let turn: Int
        let nanoseconds: UInt64
    }

    let labels: [String]
    let requests: [Request]
    let seed: UInt64

    /// Runs the turns for `seconds` and checks with `server` that every request came on a connection of its own.
    static func measure(
        clients: [any BenchClient],
        server: any LegServer,
        path: String,
        expectedBytes: Int,
        seconds: Double,
        seed: UInt64
    ) async throws -> InterleavedSamples {
        server.resetRecording()
        var generator = SplitMix64(seed: seed)
        var requests: [Request] = []
        requests.reserveCapacity(1 << 14)
        var order = Array(clients.indices)
        var previous: Int?
        var turn = 0
        let deadline = nowNanos() + UInt64(seconds * 1e9)
        while nowNanos() < deadline {
            order.shuffle(using: &generator)
            for index in order {
                let latency = try await timedGet(clients[index], path, expectedBytes: expectedBytes, close: true)
                requests.append(Request(client: index, previous: previous, turn: turn, nanoseconds: latency))
                previous = index
            }
            turn += 1
        }
        let total = requests.count
        let connections = server.requestConnectionCount ?? total
        guard server.acceptedConnections >= total, server.completedHandshakes >= total,
            server.receivedRequestCount >= total, connections >= total
        else {
            throw BenchError(
                "interleaved: \(total) requests, but the server accepted \(server.acceptedConnections) connections, "
                    + "completed \(server.completedHandshakes) handshakes, received \(server.receivedRequestCount) "
                    + "requests on \(connections) connections"
            )
        }
        return InterleavedSamples(labels: clients.map(\.label), requests: requests, seed: seed)
    }
}

/// How much faster one client's interleaved requests were than another's, as a ratio of request rates at
/// concurrency 1 (the other's time per request over this one's).
///
/// The headline ``ratio`` compares what a leg of each client alone would cost: a request's latency is taken to be
/// the client's own cost plus what the request before it left behind (its close, work after its response). With
/// `mean(c, p)` the mean latency of client `c`'s requests that came after client `p`'s, a client's own cost plus
/// its own leftover is estimated from every pairing as `rowMean(c) + columnMean(c) − mean of all pairings`. Turns
/// with a request slower than 5 × the median of all requests (a stall of the machine) are left out of it whole.
struct InterleavedRatio {
    /// From every pairing: the leg-like estimate.
    let ratio: Double
    /// From requests that came after a request of the same client only (about one in `clients²`).
    let selfRatio: Double
    /// Plain means of all kept requests, whoever came before them.
    let allOrdersRatio: Double
    /// Medians of all requests.
    let p50Ratio: Double
    let requests: Int
    let referenceRequests: Int
    let stalledTurns: Int
    let seed: UInt64

    /// Nil when either client made no interleaved request (not measured in this run).
    init?(_ samples: InterleavedSamples?, of label: String, over reference: String) {
        guard let samples, let measured = samples.labels.firstIndex(of: label),
            let base = samples.labels.firstIndex(of: reference)
        else { return nil }
        let all = samples.requests.map(\.nanoseconds).sorted()
        guard !all.isEmpty else { return nil }
        let limit = 5 * quantile(sorted: all, 0.5)
        let stalled = Set(samples.requests.filter { $0.nanoseconds > limit }.map(\.turn))
        let count = samples.labels.count
        var sums = [[Double]](repeating: [Double](repeating: 0, count: count), count: count)
        var counts = [[Int]](repeating: [Int](repeating: 0, count: count), count: count)
        for request in samples.requests where !stalled.contains(request.turn) {
            guard let previous = request.previous else { continue }
            sums[request.client][previous] += Double(request.nanoseconds)
            counts[request.client][previous] += 1
        }
        guard counts.allSatisfy({ $0.allSatisfy { $0 > 0 } }) else { return nil }
        let cell = { (client: Int, previous: Int) in sums[client][previous] / Double(counts[client][previous]) }
        let pairs = (0..<count).flatMap { client in (0..<count).map { (client, $0) } }
        let grand = pairs.reduce(0.0) { $0 + cell($1.0, $1.1) } / Double(pairs.count)
        func legLike(_ client: Int) -> Double {
            let row = (0..<count).reduce(0.0) { $0 + cell(client, $1) } / Double(count)
            let column = (0..<count).reduce(0.0) { $0 + cell($1, client) } / Double(count)
            return row + column - grand
        }
        func plainMean(_ client: Int) -> Double {
            let row = (0..<count).reduce(0.0) { $0 + sums[client][$1] }
            return row / Double(counts[client].reduce(0, +))
        }
        func median(_ client: Int) -> Double {
            let own = samples.requests.filter { $0.client == client }.map(\.nanoseconds).sorted()
            return Double(quantile(sorted: own, 0.5))
        }
        self.ratio = legLike(base) / legLike(measured)
        self.selfRatio = cell(base, base) / cell(measured, measured)
        self.allOrdersRatio = plainMean(base) / plainMean(measured)
        self.p50Ratio = median(base) / median(measured)
        self.requests = samples.requests.filter { $0.client == measured }.count
        self.referenceRequests = samples.requests.filter { $0.client == base }.count
        self.stalledTurns = stalled.count
        self.seed = samples.seed
    }

    func fields(prefix: String) -> [(String, JSON)] {
        [
            (prefix, .number(self.ratio)), (prefix + "_self", .number(self.selfRatio)),
            (prefix + "_all_orders", .number(self.allOrdersRatio)), (prefix + "_p50", .number(self.p50Ratio)),
            (prefix + "_requests", .array([.number(Double(self.requests)), .number(Double(self.referenceRequests))])),
            (prefix + "_stalled_turns", .number(Double(self.stalledTurns))),
            (prefix + "_seed", .string(String(self.seed))),
        ]
    }

    var text: String {
        "\(format(self.ratio, digits: 3)) (after the same client \(format(self.selfRatio, digits: 3)), all orders "
            + "\(format(self.allOrdersRatio, digits: 3)), medians \(format(self.p50Ratio, digits: 3)); "
            + "\(self.requests) / \(self.referenceRequests) connections, \(self.stalledTurns) stalled turns left out)"
    }
}

/// A small seeded generator (SplitMix64), so that a run's order of turns can be repeated from its reported seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { self.state = seed }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
