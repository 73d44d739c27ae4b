/// Maps host patterns to values; lookup walks the host's labels from the right through a label trie, so its cost
/// depends on the number of labels in the host, never on the number of patterns.
///
/// When several patterns match a host, the most specific one wins (see ``HostPattern/specificity``): an exact
/// pattern beats every wildcard, a deeper base beats a shallower one, and `*.` beats `**.` over the same base. A
/// wildcard never matches an IP address.
///
/// ```swift
/// var matcher = HostMatcher<String>()
/// matcher.insert("any", for: try HostPattern("**.example.com"))
/// matcher.insert("one", for: try HostPattern("*.example.com"))
/// matcher.match("api.example.com")?.value  // "one"
/// matcher.match("example.com")?.value      // "any"
/// ```
public struct HostMatcher<Value: Sendable>: Sendable {
    /// The label trie; it holds indices into ``entryPatterns`` and ``entryValues``, never a `Value`, so walking it
    /// needs no generic code even when this type is used unspecialized from another module.
    private var trie = HostLabelTrie()
    /// All patterns, in the order they were first inserted.
    private var entryPatterns: [HostPattern] = []
    /// The value of each pattern, at the same index.
    private var entryValues: [Value] = []

    /// An empty matcher.
    public init() {}

    /// A matcher holding `entries`; later duplicates of the same pattern replace earlier ones.
    public init(_ entries: [(HostPattern, Value)]) {
        for (pattern, value) in entries {
            self.insert(value, for: pattern)
        }
    }

    /// Associates `value` with `pattern`, replacing the value of an equal pattern inserted before.
    public mutating func insert(_ value: Value, for pattern: HostPattern) {
        let index = self.trie.insert(pattern, entry: self.entryPatterns.count)
        if index == self.entryPatterns.count {
            self.entryPatterns.append(pattern)
            self.entryValues.append(value)
        } else {
            self.entryValues[index] = value
        }
    }

    /// The number of distinct patterns.
    public var count: Int { self.entryPatterns.count }

    /// Whether the matcher holds no pattern.
    public var isEmpty: Bool { self.entryPatterns.isEmpty }

    /// The distinct patterns, in the order they were first inserted.
    public var patterns: [HostPattern] { self.entryPatterns }

    /// The value of the most specific pattern matching `host` (canonicalized first), or nil.
    ///
    /// A host that cannot be canonicalized (see ``HostName/canonicalize(_:)``) matches nothing.
    public func match(_ host: String) -> (pattern: HostPattern, value: Value)? {
        guard let canonical = try? HostName.canonicalize(host) else {
            return nil
        }
        return self.match(canonicalHost: canonical)
    }

    /// The value of the most specific pattern matching `canonicalHost`, which must already be in canonical form
    /// (see ``HostName/canonicalize(_:)``), or nil.
    public func match(canonicalHost: String) -> (pattern: HostPattern, value: Value)? {
        guard let index = self.trie.find(canonicalHost) else {
            return nil
        }
        return (self.entryPatterns[index], self.entryValues[index])
    }
}

/// The label trie behind ``HostMatcher``: one node per label suffix of some pattern base (`com`, `example.com`, ...),
/// node 0 being the root (the empty suffix). Each node records which entry, if any, holds the exact, `*.` and `**.`
/// pattern over its suffix.
///
/// Children are found by a 64-bit FNV-1a hash of their label (hashing a few raw bytes is much cheaper than hashing a
/// `Substring`), then confirmed by comparing the label's bytes; siblings whose labels share a hash are chained.
private struct HostLabelTrie: Sendable {
    private struct Node: Sendable {
        /// The first child node for each label hash.
        var children: [UInt64: Int32] = [:]
        /// This node's own (leftmost) label.
        var label: [UInt8]
        /// The next sibling whose label has the same hash, or -1.
        var nextWithSameHash: Int32 = -1
        /// The entry of the exact pattern whose base is this suffix, or -1.
        var exact: Int32 = -1
        /// The entry of the `*.` pattern over this suffix, or -1.
        var singleLabel: Int32 = -1
        /// The entry of the `**.` pattern over this suffix, or -1.
        var anyDepth: Int32 = -1
    }

    private var nodes: [Node] = [Node(label: [])]

    /// Records `pattern` under the entry index `entry`, unless an equal pattern is recorded already.
    ///
    /// - Returns: The entry index of the pattern: `entry`, or that of the equal pattern inserted before.
    mutating func insert(_ pattern: HostPattern, entry: Int) -> Int {
        let base = Array(pattern.base.utf8)
        var node = 0
        var end = base.count
        while true {
            var start = end
            var hash = Self.hashSeed
            while start > 0 && base[start - 1] != UInt8(ascii: ".") {
                start -= 1
                hash = Self.hash(hash, base[start])
            }
            node = self.child(of: node, hash: hash, label: Array(base[start..<end]))
            guard start > 0 else { break }
            end = start - 1
        }
        let existing: Int32
        switch pattern.kind {
        case .exact: existing = self.nodes[node].exact
        case .singleLabelWildcard: existing = self.nodes[node].singleLabel
        case .anyDepthWildcard: existing = self.nodes[node].anyDepth
        }
        if existing >= 0 {
            return Int(existing)
        }
        let index = Int32(entry)
        switch pattern.kind {
        case .exact: self.nodes[node].exact = index
        case .singleLabelWildcard: self.nodes[node].singleLabel = index
        case .anyDepthWildcard: self.nodes[node].anyDepth = index
        }
        return entry
    }

    /// The child of `parent` for `label`, created if needed.
    private mutating func child(of parent: Int, hash: UInt64, label: [UInt8]) -> Int {
        var last = -1
        var candidate = Int(self.nodes[parent].children[hash] ?? -1)
        while candidate >= 0 {
            if self.nodes[candidate].label == label {
                return candidate
            }
            last = candidate
            candidate = Int(self.nodes[candidate].nextWithSameHash)
        }
        let created = self.nodes.count
        self.nodes.append(Node(label: label))
        if last >= 0 {
            self.nodes[last].nextWithSameHash = Int32(created)
        } else {
            self.nodes[parent].children[hash] = Int32(created)
        }
        return created
    }

    /// The entry index of the most specific pattern matching `canonicalHost`, or nil.
    func find(_ canonicalHost: String) -> Int? {
        var host = canonicalHost
        return host.withUTF8 { self.find($0) }
    }

    /// Walks the labels of `host` from the right, keeping the most specific match seen so far: a deeper match
    /// replaces a shallower one, `*.` replaces `**.` over the same suffix, and an exact match ends the walk.
    private func find(_ host: UnsafeBufferPointer<UInt8>) -> Int? {
        var best: Int32 = -1
        var node = 0
        var end = host.count
        // Wildcards never match IP addresses. Canonical IP hosts contain a colon (IPv6) or end in a numeric label
        // (IPv4), and no wildcard base does, so the walk cannot reach one anyway; this keeps it so for any input.
        var wildcardsAllowed = true
        var isLastLabel = true
        while true {
            var start = end
            var hash = Self.hashSeed
            var isNumeric = true
            while start > 0 && host[start - 1] != UInt8(ascii: ".") {
                start -= 1
                let byte = host[start]
                hash = Self.hash(hash, byte)
                if byte == UInt8(ascii: ":") {
                    wildcardsAllowed = false
                }
                isNumeric = isNumeric && byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
            }
            if isLastLabel {
                wildcardsAllowed = wildcardsAllowed && !isNumeric
                isLastLabel = false
            }
            guard let child = self.child(of: node, hash: hash, label: host, start, end) else {
                break
            }
            node = child
            guard start > 0 else {
                // Every label is consumed: the host equals this node's suffix.
                if self.nodes[node].exact >= 0 {
                    return Int(self.nodes[node].exact)
                }
                if self.nodes[node].anyDepth >= 0 {
                    best = self.nodes[node].anyDepth
                }
                break
            }
            // Labels remain to the left (at least one, non-empty, in a canonical host).
            let dot = start - 1
            if dot > 0 {
                if self.nodes[node].anyDepth >= 0 {
                    best = self.nodes[node].anyDepth
                }
                if self.nodes[node].singleLabel >= 0
                    && !UnsafeBufferPointer(rebasing: host[..<dot]).contains(UInt8(ascii: "."))
                {
                    best = self.nodes[node].singleLabel
                }
            }
            end = dot
        }
        return wildcardsAllowed && best >= 0 ? Int(best) : nil
    }

    /// The existing child of `parent` whose label is `host[start..<end]`, if any.
    private func child(
        of parent: Int,
        hash: UInt64,
        label host: UnsafeBufferPointer<UInt8>,
        _ start: Int,
        _ end: Int
    )
        -> Int?
    {
        guard let first = self.nodes[parent].children[hash] else {
            return nil
        }
        var candidate = Int(first)
        while candidate >= 0 {
            let matches = self.nodes[candidate].label.withUnsafeBufferPointer { label in
                label.count == end - start && label.elementsEqual(UnsafeBufferPointer(rebasing: host[start..<end]))
            }
            if matches {
                return candidate
            }
            candidate = Int(self.nodes[candidate].nextWithSameHash)
        }
        return nil
    }

    private static var hashSeed: UInt64 { 0xcbf2_9ce4_8422_2325 }

    /// One step of FNV-1a; labels are hashed from their last byte to their first.
    private static func hash(_ hash: UInt64, _ byte: UInt8) -> UInt64 {
        (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
    }
}
