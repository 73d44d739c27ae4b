import X509

/// Checks that a certificate is valid for a host (RFC 6125 as browsers apply it).
///
/// - Only the subject alternative name counts; the legacy common-name fallback is never used.
/// - A DNS name matches case-insensitively, ignoring one trailing dot.
/// - A wildcard is accepted only as the whole leftmost label (`*.example.com`), matches exactly one label, and
///   never covers a single-label base (`*.com`).
/// - An IP address host matches only an IP address SAN with the same bytes, never a DNS name.
enum ServerIdentity {
    /// `nil` when the leaf, the first certificate of a non-empty `chain`, is valid for `host`; otherwise the
    /// reason. The leaf is copied out of the chain only to name its subject alternative names when they do not
    /// match (a `Certificate` copy retains two dozen references, and this runs on every handshake).
    ///
    /// A success is remembered with the leaf's decoded extensions (``ParsedExtensions/hostMatched(_:)``), keyed by
    /// the exact host text: a server presents the same leaf for the same host on every connection, and the answer
    /// is a pure function of the two. A failure is worked out afresh every time.
    static func check(leafOf chain: some RandomAccessCollection<Certificate>, host: String) -> TrustFailureReason? {
        let parsed = ParsedExtensions.of(chain, at: chain.startIndex)
        if parsed.hostMatched(host) { return nil }
        guard let failure = Self.evaluate(leafOf: chain, parsed: parsed, host: host) else {
            parsed.rememberMatchedHost(host)
            return nil
        }
        return failure
    }

    /// ``check(leafOf:host:)`` worked out in full, from the leaf's decoded extensions `parsed`.
    static func evaluate(
        leafOf chain: some RandomAccessCollection<Certificate>,
        parsed: ParsedExtensions,
        host: String
    ) -> TrustFailureReason? {
        let canonical: String
        do {
            canonical = try HostName.canonicalize(host)
        } catch {
            return .invalidHost(host: host, detail: String(describing: error))
        }
        let names: SubjectAlternativeNames
        do {
            guard let decoded = try parsed.subjectAlternativeNames.get() else {
                return .hostnameMismatch(host: canonical, names: [])
            }
            names = decoded
        } catch {
            return .hostnameMismatch(host: canonical, names: ["<unparsable subject alternative names>"])
        }
        if let address = Self.addressBytes(canonical) {
            for case .ipAddress(let bytes) in names where Array(bytes.bytes) == address {
                return nil
            }
        } else {
            for case .dnsName(let name) in names where Self.matches(dnsName: name, host: canonical) {
                return nil
            }
        }
        return .hostnameMismatch(host: canonical, names: chain[chain.startIndex].subjectAlternativeNameStrings)
    }

    /// Whether a SAN DNS name matches a canonical (lower-case, no trailing dot) host.
    static func matches(dnsName: String, host: String) -> Bool {
        var name = dnsName.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        guard !name.isEmpty, name.utf8.allSatisfy({ $0 < 0x80 }) else { return false }
        // Byte searches: with Foundation imported, `contains("*")` resolves to NSString's range(of:), ten times
        // slower, and this runs for every SAN name in every handshake.
        let asterisk = UInt8(ascii: "*")
        let dot = UInt8(ascii: ".")
        if !name.utf8.contains(asterisk) {
            return name == host
        }
        guard name.hasPrefix("*.") else { return false }
        let base = name.dropFirst(2)
        guard !base.utf8.contains(asterisk), base.utf8.contains(dot), !base.hasPrefix("."), !base.hasSuffix(".") else {
            return false
        }
        guard let firstDot = host.firstIndex(of: ".") else { return false }
        let firstLabel = host[..<firstDot]
        return !firstLabel.isEmpty && host[host.index(after: firstDot)...] == base
    }

    /// The bytes of a canonical host that is an IP address (see ``IPAddress``), nil for a DNS name.
    static func addressBytes(_ text: String) -> [UInt8]? {
        IPAddress(text)?.bytes
    }
}
