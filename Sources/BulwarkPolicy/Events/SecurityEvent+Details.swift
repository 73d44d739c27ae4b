extension SecurityEvent {
    /// An event's structured specifics: typed values under ``DetailKey``s, in the order they were added.
    ///
    /// ```swift
    /// let event = SecurityEvent(
    ///     kind: .credentialStripped,
    ///     message: "authorization removed on the redirect …",
    ///     details: [.from: .text(from), .to: .text(to), .headers: .list(["authorization"])]
    /// )
    /// event.details[.headers]?.list  // ["authorization"]
    /// ```
    ///
    /// A key appears at most once; setting it again replaces its value in place, and setting it to nil removes it.
    /// Two details are equal when they hold the same keys with the same values in the same order.
    public struct Details: Hashable, Sendable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
        /// One key and its value.
        public typealias Element = (key: DetailKey, value: DetailValue)

        private var keysInOrder: [DetailKey]
        private var valuesByKey: [DetailKey: DetailValue]

        /// No details.
        public init() {
            self.keysInOrder = []
            self.valuesByKey = [:]
        }

        /// The details of a literal, in its order.
        ///
        /// - Precondition: No key appears twice (as for a `Dictionary` literal).
        public init(dictionaryLiteral elements: (DetailKey, DetailValue)...) {
            self.init()
            for (key, value) in elements {
                precondition(self.valuesByKey[key] == nil, "the detail key \(key) appears twice")
                self[key] = value
            }
        }

        /// The value under `key`, or nil. Setting a new key appends it; setting nil removes the key.
        public subscript(key: DetailKey) -> DetailValue? {
            get { self.valuesByKey[key] }
            set {
                if let newValue {
                    if self.valuesByKey.updateValue(newValue, forKey: key) == nil { self.keysInOrder.append(key) }
                } else if self.valuesByKey.removeValue(forKey: key) != nil {
                    self.keysInOrder.removeAll { $0 == key }
                }
            }
        }

        /// These details with those of `other` added: a key of both gets `other`'s value in its place here, a new
        /// key goes at the end.
        public func merging(_ other: Details) -> Details {
            var merged = self
            for (key, value) in other { merged[key] = value }
            return merged
        }

        /// The keys, in order.
        public var keys: [DetailKey] { self.keysInOrder }

        /// The values, in the order of their keys.
        public var values: [DetailValue] { self.keysInOrder.map { self.valuesByKey[$0]! } }

        /// The number of details.
        public var count: Int { self.keysInOrder.count }

        /// Whether there are none.
        public var isEmpty: Bool { self.keysInOrder.isEmpty }

        /// Each detail's stable text (``DetailValue/description``) under its key's ``DetailKey/code``: the form the
        /// tamper-evident log writes.
        public var textByCode: [String: String] {
            var text: [String: String] = [:]
            for (key, value) in self { text[key.code] = value.description }
            return text
        }

        /// The details in order.
        public func makeIterator() -> some IteratorProtocol<Element> {
            self.keysInOrder.lazy.map { (key: $0, value: self.valuesByKey[$0]!) }.makeIterator()
        }

        /// `[code: text, …]`, in order.
        public var description: String {
            if self.isEmpty { return "[:]" }
            return "[" + self.map { "\($0.key.code): \($0.value)" }.joined(separator: ", ") + "]"
        }

        /// Equal when both hold the same keys in the same order with the same values.
        public static func == (lhs: Details, rhs: Details) -> Bool {
            lhs.keysInOrder == rhs.keysInOrder && lhs.valuesByKey == rhs.valuesByKey
        }

        /// Hashes the keys and values in order, consistently with `==`.
        public func hash(into hasher: inout Hasher) {
            for (key, value) in self {
                hasher.combine(key)
                hasher.combine(value)
            }
        }
    }
}
