/// The hosts that bypass a proxy, written as curl reads `NO_PROXY`, `no_proxy` and `--noproxy`.
///
/// - Entries are separated by commas; blanks around an entry are ignored.
/// - `*` alone (the whole list) bypasses the proxy for every host. An asterisk anywhere else is not a wildcard: the
///   entry is compared as written (and so matches no host).
/// - A host name entry matches that host and every subdomain of it: `example.com` and `.example.com` both match
///   `example.com` and `www.example.com`, never `notexample.com`. Case and one trailing dot are ignored.
/// - An IP address entry matches that address; with a `/bits` suffix (a CIDR block, `10.0.0.0/8`, `fe80::/10`) every
///   address of the block. IPv6 entries may be written in brackets. An address entry never matches a host name,
///   and a name entry never matches an address (no DNS lookup is made to compare them).
/// - Ports are not part of an entry (`example.com:8080` matches nothing).
public struct NoProxyList: Sendable, Hashable, CustomStringConvertible {
    /// The list as given.
    public let text: String
    private let matchesEverything: Bool
    private let entries: [Substring]

    /// The list `text`.
    public init(_ text: String) {
        self.text = text
        let trimmed = text.trimmingASCIISpaces()
        self.matchesEverything = trimmed == "*"
        self.entries = trimmed.split(separator: ",").map { Substring($0.description.trimmingASCIISpaces()) }
            .filter { !$0.isEmpty }
    }

    /// The list as given.
    public var description: String { self.text }

    /// Whether requests to `host` bypass the proxy. `host` is a URL's host: a name, an IPv4 address, or an IPv6
    /// address with or without brackets.
    public func matches(_ host: String) -> Bool {
        if self.matchesEverything { return true }
        var name = Substring(host)
        if name.hasPrefix("["), name.hasSuffix("]") { name = name.dropFirst().dropLast() }
        if name.hasSuffix(".") { name = name.dropLast() }
        let lowered = name.lowercased()
        if let address = IPAddress(lowered) {
            return self.entries.contains { Self.matches(address: address, entry: $0) }
        }
        if lowered.contains(":") { return false }
        return self.entries.contains { Self.matches(name: lowered, entry: $0) }
    }

    private static func matches(name: String, entry: Substring) -> Bool {
        var token = entry
        if token.hasSuffix(".") { token = token.dropLast() }
        if token.hasPrefix(".") { token = token.dropFirst() }
        guard !token.isEmpty else { return false }
        let lowered = token.lowercased()
        if lowered == name { return true }
        return name.hasSuffix("." + lowered)
    }

    private static func matches(address: IPAddress, entry: Substring) -> Bool {
        var token = entry
        var bits: Int?
        if let slash = token.firstIndex(of: "/") {
            guard let value = Int(token[token.index(after: slash)...]), value >= 0 else { return false }
            bits = value
            token = token[..<slash]
        }
        if token.hasPrefix("["), token.hasSuffix("]") { token = token.dropFirst().dropLast() }
        guard let network = IPAddress(String(token).lowercased()) else { return false }
        let networkBytes = network.bytes
        let addressBytes = address.bytes
        guard networkBytes.count == addressBytes.count else { return false }
        let width = addressBytes.count * 8
        // As curl: no length, or 0, means the whole address.
        var prefix = bits ?? width
        if prefix == 0 { prefix = width }
        guard prefix <= width else { return false }
        for bit in 0..<prefix {
            let index = bit / 8
            let mask = UInt8(0x80) >> UInt8(bit % 8)
            if networkBytes[index] & mask != addressBytes[index] & mask { return false }
        }
        return true
    }
}
