extension SecurityEvent {
    /// The value of one of an event's ``SecurityEvent/details``: text, a number, a list of text or a flag.
    ///
    /// Read it with the typed accessors (``text``, ``number``, ``list``, ``flag``), which return nil for a value of
    /// another type: `event.details[.headers]?.list` is the list of header names as the event was built, never a
    /// string split again. ``description`` is the value's stable text form, the one the tamper-evident log and the
    /// log monitors write: text as it is, a number in decimal, a flag as `true` or `false`, a list joined by `, ` and
    /// lines joined by newlines. It never changes for a given value, so logs written before stay comparable.
    ///
    /// A struct rather than a public enum, so that a later kind of value is not a breaking change to monitors that
    /// switch over them.
    public struct DetailValue: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral,
        ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral
    {
        private enum Storage: Hashable, Sendable {
            case text(String)
            case number(Int)
            case list([String])
            case lines([String])
            case flag(Bool)
        }

        private let storage: Storage

        private init(_ storage: Storage) { self.storage = storage }

        /// A text value (a URL, a label, a method).
        public static func text(_ value: String) -> DetailValue { DetailValue(.text(value)) }

        /// A number (a status code, a port, a count).
        public static func number(_ value: Int) -> DetailValue { DetailValue(.number(value)) }

        /// A list of short items (header names), written joined by `, `.
        public static func list(_ items: [String]) -> DetailValue { DetailValue(.list(items)) }

        /// A list of items that may themselves hold commas (certificate chains: `sha256/…: CN=a, O=b` per
        /// certificate), written one per line.
        public static func lines(_ items: [String]) -> DetailValue { DetailValue(.lines(items)) }

        /// A yes-or-no value, written `true` or `false`.
        public static func flag(_ value: Bool) -> DetailValue { DetailValue(.flag(value)) }

        /// A text value.
        public init(stringLiteral value: String) { self.init(.text(value)) }

        /// A number.
        public init(integerLiteral value: Int) { self.init(.number(value)) }

        /// A flag.
        public init(booleanLiteral value: Bool) { self.init(.flag(value)) }

        /// The text, if this is a text value.
        public var text: String? {
            if case .text(let value) = self.storage { return value }
            return nil
        }

        /// The number, if this is a number.
        public var number: Int? {
            if case .number(let value) = self.storage { return value }
            return nil
        }

        /// The items, if this is a list (made by ``list(_:)`` or ``lines(_:)``).
        public var list: [String]? {
            switch self.storage {
            case .list(let items), .lines(let items): items
            default: nil
            }
        }

        /// The flag, if this is a flag.
        public var flag: Bool? {
            if case .flag(let value) = self.storage { return value }
            return nil
        }

        /// The stable text form: text as it is, a number in decimal, a flag as `true` or `false`, a list joined by
        /// `, `, lines joined by newlines.
        public var description: String {
            switch self.storage {
            case .text(let value): value
            case .number(let value): String(value)
            case .list(let items): items.joined(separator: ", ")
            case .lines(let items): items.joined(separator: "\n")
            case .flag(let value): value ? "true" : "false"
            }
        }

        /// This value with `transform` applied to its text, or to each item of a list; numbers and flags unchanged.
        func mappingText(_ transform: (String) -> String) -> DetailValue {
            switch self.storage {
            case .text(let value): .text(transform(value))
            case .list(let items): .list(items.map(transform))
            case .lines(let items): .lines(items.map(transform))
            case .number, .flag: self
            }
        }
    }
}
