import Bulwark

/// Host-pattern lookup: a `HostMatcher` holding `count` patterns `*.hI.example.com`, queried with a fixed mix of
/// hosts (3 in 4 hit a pattern, 1 in 4 miss under `example.com`).
struct HostMatchBenchmark {
    let count: Int
    let matcher: HostMatcher<Int>
    let hosts: [String]
    /// The value each host must map to (nil for a miss).
    let expected: [Int?]

    init(count: Int) throws {
        self.count = count
        var matcher = HostMatcher<Int>()
        for i in 0..<count {
            matcher.insert(i, for: try HostPattern("*.h\(i).example.com"))
        }
        self.matcher = matcher
        // A fixed linear congruential sequence: the same hosts on every run.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var hosts: [String] = []
        var expected: [Int?] = []
        for n in 0..<4096 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let r = Int(truncatingIfNeeded: state >> 33)
            if n % 4 == 3 {
                hosts.append("api.x\(r % 100_000).example.com")
                expected.append(nil)
            } else {
                let i = r % count
                hosts.append("api.h\(i).example.com")
                expected.append(i)
            }
        }
        self.hosts = hosts
        self.expected = expected
    }

    /// Every host maps to its expected value, through both entry points.
    func verify() throws {
        for (host, want) in zip(self.hosts, self.expected) {
            let got = self.matcher.match(host)?.value
            let gotCanonical = self.matcher.match(canonicalHost: host)?.value
            guard got == want, gotCanonical == want else {
                throw BenchError(
                    "hostmatch-\(self.count): \(host) matched \(String(describing: got)), expected \(String(describing: want))"
                )
            }
        }
    }

    /// Nanoseconds per `match(_:)` (canonicalizes the host first, as `ServerTrustManager` does), measured for
    /// about `seconds`.
    func nanosPerLookup(seconds: Double) -> Double {
        let budget = UInt64(seconds * 1e9)
        let matcher = self.matcher
        var lookups = 0
        var sink = 0
        let start = nowNanos()
        var elapsed: UInt64 = 0
        repeat {
            for host in self.hosts {
                sink &+= matcher.match(host)?.value ?? -1
            }
            lookups += self.hosts.count
            elapsed = nowNanos() - start
        } while elapsed < budget
        blackHole(sink)
        return Double(elapsed) / Double(lookups)
    }

    /// Nanoseconds per `match(canonicalHost:)` (host already canonical: the trie walk alone).
    func nanosPerCanonicalLookup(seconds: Double) -> Double {
        let budget = UInt64(seconds * 1e9)
        let matcher = self.matcher
        var lookups = 0
        var sink = 0
        let start = nowNanos()
        var elapsed: UInt64 = 0
        repeat {
            for host in self.hosts {
                sink &+= matcher.match(canonicalHost: host)?.value ?? -1
            }
            lookups += self.hosts.count
            elapsed = nowNanos() - start
        } while elapsed < budget
        blackHole(sink)
        return Double(elapsed) / Double(lookups)
    }
}
