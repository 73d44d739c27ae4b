/// An error raised when a host pattern or a host name is refused.
///
/// Raised by ``HostPattern/init(_:)``, ``HostPattern/exact(_:)`` and ``HostName/canonicalize(_:)``. Compare
/// ``code`` with the static members of ``Code`` to find out which rule was broken; the ``description`` quotes the
/// refused input and says what is wrong with it, for example:
///
/// ```text
/// invalid host pattern "a*.example.com": an asterisk is only allowed as the whole leftmost label ("*." or "**.")
/// ```
public struct HostPatternError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem was found; compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: Hashable, Sendable {
            case empty
            case emptyLabel
            case labelTooLong
            case nameTooLong
            case percentEncoding
            case userInfo
            case urlComponent
            case whitespaceOrControl
            case invalidCharacter
            case misplacedWildcard
            case wildcardWithoutBase
            case wildcardOverIPAddress
            case invalidIPv4
            case invalidIPv6
        }

        private let backing: Backing

        private init(_ backing: Backing) {
            self.backing = backing
        }

        /// The input is the empty string.
        public static let empty = Code(.empty)
        /// A label is empty: two dots in a row (`a..b`), a leading dot, or more than one trailing dot.
        public static let emptyLabel = Code(.emptyLabel)
        /// A label is longer than 63 octets (measured after punycode encoding).
        public static let labelTooLong = Code(.labelTooLong)
        /// The name is longer than 253 octets (measured after punycode encoding, without a trailing dot).
        public static let nameTooLong = Code(.nameTooLong)
        /// The input holds a `%`: percent-encoding and IPv6 zone identifiers are not accepted.
        public static let percentEncoding = Code(.percentEncoding)
        /// The input holds an `@`, as in user information (`user@host`).
        public static let userInfo = Code(.userInfo)
        /// The input holds a scheme, port, path, query or fragment (`:`, `/`, `\`, `?`, `#`) rather than a bare host.
        public static let urlComponent = Code(.urlComponent)
        /// The input holds whitespace, a control character or an invisible formatting character.
        public static let whitespaceOrControl = Code(.whitespaceOrControl)
        /// The input holds a character that is not allowed in a host name (allowed after mapping: `a-z`, `0-9`,
        /// `-`, `_`, and non-ASCII letters, marks and digits).
        public static let invalidCharacter = Code(.invalidCharacter)
        /// A pattern holds an asterisk somewhere other than as the whole leftmost label (`*.` or `**.`).
        public static let misplacedWildcard = Code(.misplacedWildcard)
        /// A wildcard pattern has nothing after the wildcard (`*.` or `**.`).
        public static let wildcardWithoutBase = Code(.wildcardWithoutBase)
        /// A wildcard pattern's base is an IP address or ends in a numeric label; wildcards only apply to names.
        public static let wildcardOverIPAddress = Code(.wildcardOverIPAddress)
        /// The name's last label is numeric but the name is not a dotted-quad IPv4 address of four decimal numbers
        /// 0-255 without leading zeros (for example `127.1`, `2130706433`, `0x7f.0.0.1` or `010.0.0.1`).
        public static let invalidIPv4 = Code(.invalidIPv4)
        /// The input looks like an IPv6 address (it has brackets, or at least two colons and only hex digits, colons
        /// and dots) but does not parse as one.
        public static let invalidIPv6 = Code(.invalidIPv6)

        /// The name of the code, such as `emptyLabel`.
        public var description: String {
            switch self.backing {
            case .empty: return "empty"
            case .emptyLabel: return "emptyLabel"
            case .labelTooLong: return "labelTooLong"
            case .nameTooLong: return "nameTooLong"
            case .percentEncoding: return "percentEncoding"
            case .userInfo: return "userInfo"
            case .urlComponent: return "urlComponent"
            case .whitespaceOrControl: return "whitespaceOrControl"
            case .invalidCharacter: return "invalidCharacter"
            case .misplacedWildcard: return "misplacedWildcard"
            case .wildcardWithoutBase: return "wildcardWithoutBase"
            case .wildcardOverIPAddress: return "wildcardOverIPAddress"
            case .invalidIPv4: return "invalidIPv4"
            case .invalidIPv6: return "invalidIPv6"
            }
        }
    }

    /// Which rule the input broke.
    public let code: Code
    /// The refused input, exactly as it was given (host names and patterns are public values, never secrets).
    public let input: String
    /// Whether the input was read as a host pattern (`true`) or as a host name (`false`).
    public let isPattern: Bool
    private let detail: String

    init(_ code: Code, input: String, isPattern: Bool, detail: String) {
        self.code = code
        self.input = input
        self.isPattern = isPattern
        self.detail = detail
    }

    /// A copy of this error with a different code and detail, keeping the input.
    func with(_ code: Code, detail: String) -> HostPatternError {
        HostPatternError(code, input: self.input, isPattern: self.isPattern, detail: detail)
    }

    /// Names the input and what is wrong with it, e.g.
    /// `invalid host "exa mple.com": whitespace, control and invisible formatting characters are not allowed`.
    public var description: String {
        "invalid \(self.isPattern ? "host pattern" : "host") \"\(Self.quoted(self.input))\": \(self.detail)"
    }

    /// The input with control characters, quotes and backslashes escaped so that the description stays on one line
    /// and cannot be forged by the input.
    private static func quoted(_ text: String) -> String {
        ControlCharacters.escaped(text, quotingDelimiters: true)
    }
}
