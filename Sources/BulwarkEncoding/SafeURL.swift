import Foundation

/// A URL that is safe to place in a URL-valued HTML attribute (`href`, `src`, `action`, `formaction`, …): an
/// absolute `http` or `https` URL, or a relative reference, which can only resolve to the scheme of its page.
///
/// Encoding a URL for its attribute stops it from breaking out of the attribute, but not from running: the browser
/// decodes character references before it parses the URL, so `javascript:alert(1)` runs however it is encoded. A
/// `SafeURL` refuses every scheme but `http` and `https` (compared ignoring case), so `javascript:`, `vbscript:`,
/// `data:`, `file:` and the rest never reach the attribute. Browsers drop tabs and newlines anywhere in a URL and
/// control characters and spaces around it (`java\tscript:` is `javascript:` to them), so those are refused rather
/// than interpreted, and so are NUL and, in byte input, invalid UTF-8. A colon before the first `/`, `?` or `#`
/// must end a valid scheme; otherwise the text is refused instead of being read as a relative path. An `&` before the
/// first `/` or `?` is refused too: should the URL reach markup without attribute encoding, a character reference
/// there (`jav&#x09;ascript:`, `javascript&colon;`) could hide a scheme.
///
/// ```swift
/// SafeURL("https://example.com/a?b=c")  // allowed
/// SafeURL("/help#top")                  // allowed (relative)
/// SafeURL("JavaScript:alert(1)")        // nil
/// SafeURL.check(" javascript:alert(1)") // .failure(Refusal(code: .whitespace))
/// ```
///
/// In ``SafeHTML``, `\(url: text)` writes a refused URL as ``refusedPlaceholder``, an inert URL, so the page still
/// renders.
public struct SafeURL: Hashable, Sendable, CustomStringConvertible {
    /// Why a text was refused as a URL attribute value. Refusals never quote the URL (it may carry a token in its
    /// query); they name the problem and, for a scheme, the scheme.
    public struct Refusal: Error, Hashable, Sendable, CustomStringConvertible {
        /// What kind of problem was found; compare with the static members.
        public struct Code: Hashable, Sendable, CustomStringConvertible {
            private let name: String
            private init(_ name: String) { self.name = name }
            /// The text is empty.
            public static let empty = Code("empty")
            /// The bytes are not valid UTF-8.
            public static let invalidUTF8 = Code("invalidUTF8")
            /// The text holds a NUL character.
            public static let nullByte = Code("nullByte")
            /// The text holds a control character (C0, including tab and newlines, or DEL).
            public static let controlCharacter = Code("controlCharacter")
            /// The text holds an ASCII space.
            public static let whitespace = Code("whitespace")
            /// A colon before the first `/`, `?` or `#` does not end a valid scheme.
            public static let invalidScheme = Code("invalidScheme")
            /// An `&` comes before the first `/` or `?`, where a character reference could hide a scheme.
            public static let characterReference = Code("characterReference")
            /// The scheme is valid but neither `http` nor `https`.
            public static let disallowedScheme = Code("disallowedScheme")
            /// The code's stable label.
            public var description: String { self.name }
        }

        /// Which rule the text broke.
        public let code: Code
        /// The refused scheme, lower-cased, for ``Code/disallowedScheme``; nil otherwise.
        public let scheme: String?

        init(_ code: Code, scheme: String? = nil) {
            self.code = code
            self.scheme = scheme
        }

        /// Names the problem, e.g. `URL refused for an HTML attribute: the scheme "javascript" is not http or https`.
        public var description: String {
            let reason: String
            switch self.code {
            case .empty: reason = "it is empty"
            case .invalidUTF8: reason = "it is not valid UTF-8"
            case .nullByte: reason = "it holds a NUL character"
            case .controlCharacter: reason = "it holds a control character"
            case .whitespace: reason = "it holds a space"
            case .invalidScheme: reason = "a colon before the first \"/\", \"?\" or \"#\" does not end a valid scheme"
            case .characterReference: reason = "an \"&\" before the first \"/\" or \"?\" could hide a scheme"
            default: reason = "the scheme \"\(self.scheme ?? "")\" is not http or https"
            }
            return "URL refused for an HTML attribute: \(reason)"
        }
    }

    /// What ``SafeHTML`` writes for a URL it refuses: a URL that loads nothing and runs nothing.
    public static let refusedPlaceholder = "about:invalid#bulwark-refused-url"

    /// The URL, exactly as given.
    public let string: String

    private init(checked string: String) {
        self.string = string
    }

    /// The URL if it is safe for a URL attribute, nil otherwise; see ``check(_:)`` for the reason.
    public init?(_ text: String) {
        guard case .success(let url) = Self.check(text) else { return nil }
        self = url
    }

    /// The URL's absolute string if it is safe for a URL attribute, nil otherwise.
    public init?(_ url: URL) {
        self.init(url.absoluteString)
    }

    /// The URL if `bytes` are valid UTF-8 and safe for a URL attribute, nil otherwise.
    public init?(utf8 bytes: some Collection<UInt8>) {
        guard case .success(let url) = Self.check(utf8: bytes) else { return nil }
        self = url
    }

    /// Decides whether `text` is safe for a URL attribute.
    public static func check(_ text: String) -> Result<SafeURL, Refusal> {
        guard !text.isEmpty else { return .failure(Refusal(.empty)) }
        var schemeEnd: String.UTF8View.Index?
        var sawDelimiter = false
        var sawPathOrQuery = false
        let utf8 = text.utf8
        for index in utf8.indices {
            let byte = utf8[index]
            switch byte {
            case 0x00: return .failure(Refusal(.nullByte))
            case 0x01...0x1F, 0x7F: return .failure(Refusal(.controlCharacter))
            case UInt8(ascii: " "): return .failure(Refusal(.whitespace))
            case UInt8(ascii: "/"), UInt8(ascii: "?"):
                sawDelimiter = true
                sawPathOrQuery = true
            case UInt8(ascii: "#"): sawDelimiter = true
            case UInt8(ascii: "&") where !sawPathOrQuery: return .failure(Refusal(.characterReference))
            case UInt8(ascii: ":") where !sawDelimiter && schemeEnd == nil: schemeEnd = index
            default: break
            }
        }
        guard let schemeEnd else {
            return .success(SafeURL(checked: text))
        }
        let scheme = utf8[..<schemeEnd]
        guard let first = scheme.first, Self.isLetter(first),
            scheme.allSatisfy({ Self.isLetter($0) || Self.isDigit($0) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E })
        else {
            return .failure(Refusal(.invalidScheme))
        }
        let lowered = String(decoding: scheme, as: UTF8.self).lowercased()
        guard lowered == "http" || lowered == "https" else {
            return .failure(Refusal(.disallowedScheme, scheme: lowered))
        }
        return .success(SafeURL(checked: text))
    }

    /// Decides whether `bytes` are valid UTF-8 and safe for a URL attribute; invalid UTF-8 is refused, never
    /// repaired.
    public static func check(utf8 bytes: some Collection<UInt8>) -> Result<SafeURL, Refusal> {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.utf8.elementsEqual(bytes) else {
            return .failure(Refusal(.invalidUTF8))
        }
        return self.check(text)
    }

    /// The URL encoded for an HTML attribute value (see ``HTMLEncoder/attribute(_:)``).
    public var attributeValue: String {
        HTMLEncoder.attribute(self.string)
    }

    /// The URL, exactly as given.
    public var description: String { self.string }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
