import BulwarkPolicy

/// Host names and host patterns (IDN and punycode, IPv4 and IPv6 forms).
///
/// Input: `PATTERN\nHOST` (without a newline, the whole text is tried as both). Oracles:
/// - canonicalization is idempotent and its output is in canonical form: `a-z 0-9 - _ .` (and `:` for IPv6 only),
///   no empty label, no trailing dot, labels of at most 63 octets, names of at most 253;
/// - Punycode round-trips: whatever `encode` returns, `decode` turns back into the same text;
/// - a pattern's canonical text parses to the same pattern, and the pattern matches its own canonical examples
///   (`base`; `x.base` for `*.`; `base`, `x.base`, `x.y.base` for `**.`) and not the ones its kind excludes;
/// - a host a pattern matches canonicalizes to the base or to labels in front of it.
enum HostsTarget {
    static func run(_ input: FuzzInput) {
        let text = input.restText
        let parts = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let patternText = parts[0]
        let hostText = parts.count > 1 ? parts[1] : parts[0]

        for candidate in Set([text, patternText, hostText]) {
            self.checkCanonicalization(candidate)
            if let encoded = Punycode.encode(candidate), Punycode.decode(encoded) != candidate {
                violated("punycode round trip", "encode then decode changed \(candidate.debugDescription)")
            }
        }
        guard let pattern = try? HostPattern(patternText) else { return }
        self.checkPattern(pattern)
        if pattern.matches(hostText) {
            guard let host = try? HostName.canonicalize(hostText) else {
                violated("match implies canonical host", "\(pattern) matched \(hostText.debugDescription)")
            }
            let isBaseOrBelow = host == pattern.base || host.hasSuffix("." + pattern.base)
            if !isBaseOrBelow || (pattern.kind != .exact && HostName.isIPAddress(host)) {
                violated("match is the base or below it", "\(pattern) matched \(host.debugDescription)")
            }
        }
    }

    static func checkCanonicalization(_ text: String) {
        guard let canonical = try? HostName.canonicalize(text) else { return }
        let again: String
        do {
            again = try HostName.canonicalize(canonical)
        } catch {
            violated("canonical host is accepted", "\(text.debugDescription) -> \(canonical): \(error)")
        }
        if again != canonical {
            violated("canonicalization is idempotent", "\(text.debugDescription) -> \(canonical) -> \(again)")
        }
        let isIP = HostName.isIPAddress(canonical)
        let allowed = canonical.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): return true
            case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."): return true
            case UInt8(ascii: ":"): return isIP
            default: return false
            }
        }
        if !allowed {
            violated("canonical characters", "\(text.debugDescription) -> \(canonical.debugDescription)")
        }
        if canonical.contains(":") { return }  // IPv6: no labels to check
        let labels = canonical.split(separator: ".", omittingEmptySubsequences: false)
        if canonical.utf8.count > 253 || labels.contains(where: { $0.isEmpty || $0.utf8.count > 63 }) {
            violated("canonical length and labels", "\(text.debugDescription) -> \(canonical.debugDescription)")
        }
    }

    static func checkPattern(_ pattern: HostPattern) {
        let reparsed: HostPattern
        do {
            reparsed = try HostPattern(pattern.description)
        } catch {
            violated("pattern text parses", "\(pattern.description.debugDescription): \(error)")
        }
        if reparsed != pattern {
            violated("pattern text round trip", "\(pattern) reparsed as \(reparsed)")
        }
        let base = pattern.base
        let expectations: [(host: String, matches: Bool)]
        switch pattern.kind {
        case .exact:
            expectations = [(base, true)]
            if (try? HostPattern.exact(base)) != pattern {
                violated("exact pattern of its base", "\(pattern)")
            }
        case .singleLabelWildcard:
            expectations = [(base, false), ("x." + base, true), ("x.y." + base, false)]
        case .anyDepthWildcard:
            expectations = [(base, true), ("x." + base, true), ("x.y." + base, true)]
        }
        for (host, expected) in expectations where pattern.matches(canonicalHost: host) != expected {
            violated("pattern matches its canonical examples", "\(pattern) on \(host): expected \(expected)")
        }
        // The same examples spelled the way a server might send them: upper case, a trailing dot (names only).
        for (host, expected) in expectations where !HostName.isIPAddress(base) {
            guard (try? HostName.canonicalize(host)) == host else { continue }  // over a length limit
            if pattern.matches(host.uppercased() + ".") != expected {
                violated("pattern matches spellings of its examples", "\(pattern) on \(host.uppercased()).")
            }
        }
    }
}
