/// An error raised when parsing a pin or building a ``PinSet``.
///
/// The description quotes the offending input so that a bad entry in a configuration file can be found.
public struct PinError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem was found; compare with the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The text has neither the `sha256/` prefix nor the form of a hex certificate fingerprint.
        public static let unknownFormat = Code("unknownFormat")
        /// The text after `sha256/` is not valid base64.
        public static let invalidBase64 = Code("invalidBase64")
        /// The decoded digest is not 32 bytes long.
        public static let wrongLength = Code("wrongLength")
        /// A hex fingerprint holds a character that is not a hex digit.
        public static let invalidHex = Code("invalidHex")
        /// A pin set was given no pins.
        public static let emptyPinSet = Code("emptyPinSet")
        /// An enforcing pin set has a single pin and the caller did not opt out of the two-pin rule.
        public static let tooFewPins = Code("tooFewPins")
        /// The code's stable label.
        public var description: String { self.name }
    }

    /// What is wrong: compare with the static members of ``Code``.
    public let code: Code
    /// The input that was refused (pins are public values, never secrets).
    public let input: String
    private let detail: String

    init(_ code: Code, input: String, detail: String) {
        self.code = code
        self.input = input
        self.detail = detail
    }

    /// The input and what is wrong with it.
    public var description: String {
        "invalid pin \"\(self.input)\": \(self.detail)"
    }
}
