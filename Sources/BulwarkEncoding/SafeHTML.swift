import Foundation

/// HTML markup whose every interpolated value is encoded for its context, so that user data can never become markup.
///
/// The literal parts of a `SafeHTML` come from source code only (its literal type is `StaticString`: a `String` made
/// at run time cannot be passed where a literal is expected), and each interpolation encodes its value:
///
/// | interpolation | writes |
/// | --- | --- |
/// | `\(value)` | `value`'s description encoded as HTML text (``HTMLEncoder/text(_:)``) |
/// | `\(attribute: value)` | encoded for an attribute value, quoted or not (``HTMLEncoder/attribute(_:)``) |
/// | `\(url: text)` | a ``SafeURL`` encoded for an attribute, or ``SafeURL/refusedPlaceholder`` if refused |
/// | `\(javaScript: value)` | encoded for the inside of a quoted JavaScript string (``JavaScriptEncoder``) |
/// | `\(urlComponent: value)` | percent-encoded (``URLComponentEncoder``) |
/// | `\(html)` with a `SafeHTML` | the markup as it is (it is safe already) |
/// | `\(raw: text)` | `text` as it is: **the escape hatch**, for trusted markup only |
///
/// The seeds' client-side injection (`loadHTMLString("Test \(injUserData) string", …)` showing the user's
/// `<strong>`) cannot happen with it:
///
/// ```swift
/// let injUserData = "<strong>123</strong>"
/// let page = SafeHTML("Test \(injUserData) string")
/// page.html  // "Test &lt;strong&gt;123&lt;/strong&gt; string"
/// // view.loadHTMLString(page.html, baseURL: nil)
///
/// SafeHTML("<a href=\"\(url: link)\" title=\(attribute: title)>\(name)</a>")
/// ```
///
/// The literal parts are trusted to put each interpolation in the context its label says: `\(value)` between tags,
/// `\(attribute:)` as an attribute value, `\(url:)` as a URL attribute value, `\(javaScript:)` inside a quoted string
/// in a script or event handler. No encoding makes untrusted text safe as a tag or attribute name, a CSS value, or
/// unquoted script.
public struct SafeHTML: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringInterpolation {
    /// The markup.
    public let html: String

    private init(html: String) {
        self.html = html
    }

    /// Markup written as a literal in source code.
    public init(stringLiteral literal: StaticString) {
        self.html = Self.string(literal)
    }

    /// Markup built by interpolation; each value was encoded as it was appended.
    public init(stringInterpolation: StringInterpolation) {
        self.html = stringInterpolation.html
    }

    /// `text` encoded as HTML text: what `SafeHTML("\(text)")` writes.
    public init(text: String) {
        self.html = HTMLEncoder.text(text)
    }

    /// Markup taken as it is, without encoding: **the escape hatch**. Only for markup the application wrote or
    /// sanitized itself; never for anything that holds user data.
    public init(raw trustedMarkup: String) {
        self.html = trustedMarkup
    }

    /// The pieces one after the other, with `separator` between them.
    public init(joining pieces: some Sequence<SafeHTML>, separator: SafeHTML = "") {
        self.html = pieces.map(\.html).joined(separator: separator.html)
    }

    /// The markup.
    public var description: String { self.html }

    /// Both pieces of markup, one after the other.
    public static func + (lhs: SafeHTML, rhs: SafeHTML) -> SafeHTML {
        SafeHTML(html: lhs.html + rhs.html)
    }

    /// Appends `rhs` to `lhs`.
    public static func += (lhs: inout SafeHTML, rhs: SafeHTML) {
        lhs = lhs + rhs
    }

    fileprivate static func string(_ literal: StaticString) -> String {
        literal.withUTF8Buffer { String(decoding: $0, as: UTF8.self) }
    }

    /// Builds a ``SafeHTML`` from literal parts (trusted) and interpolated values (encoded for their context).
    public struct StringInterpolation: StringInterpolationProtocol {
        /// Literal parts are static strings: only text written in the source is trusted as HTML.
        public typealias StringLiteralType = StaticString

        fileprivate var html: String

        /// An empty interpolation with room for the literal parts and the values.
        public init(literalCapacity: Int, interpolationCount: Int) {
            self.html = ""
            self.html.reserveCapacity(literalCapacity + interpolationCount * 16)
        }

        /// A literal part, from source code: appended as it is.
        public mutating func appendLiteral(_ literal: StaticString) {
            self.html += SafeHTML.string(literal)
        }

        /// Any value, encoded as HTML text (its `String(describing:)`).
        public mutating func appendInterpolation<Value>(_ value: Value) {
            self.html += HTMLEncoder.text(String(describing: value))
        }

        /// Markup that is safe already: appended as it is.
        public mutating func appendInterpolation(_ markup: SafeHTML) {
            self.html += markup.html
        }

        /// Trusted markup appended without encoding: **the escape hatch**. Never pass anything that holds user data.
        public mutating func appendInterpolation(raw trustedMarkup: String) {
            self.html += trustedMarkup
        }

        /// Any value encoded for an HTML attribute value, quoted or unquoted (see ``HTMLEncoder/attribute(_:)``).
        /// Not for URL attributes (use `url:`) or event handlers (use `javaScript:` inside a quoted string).
        public mutating func appendInterpolation<Value>(attribute value: Value) {
            self.html += HTMLEncoder.attribute(String(describing: value))
        }

        /// A checked URL encoded for a URL attribute value (`href`, `src`, …).
        public mutating func appendInterpolation(url: SafeURL) {
            self.html += url.attributeValue
        }

        /// A URL encoded for a URL attribute value if ``SafeURL`` accepts it; otherwise
        /// ``SafeURL/refusedPlaceholder``, which loads and runs nothing.
        public mutating func appendInterpolation(url text: String) {
            self.html += SafeURL(text)?.attributeValue ?? SafeURL.refusedPlaceholder
        }

        /// A URL encoded for a URL attribute value if ``SafeURL`` accepts it; otherwise
        /// ``SafeURL/refusedPlaceholder``.
        public mutating func appendInterpolation(url: URL) {
            self.html += SafeURL(url)?.attributeValue ?? SafeURL.refusedPlaceholder
        }

        /// Any value encoded for the inside of a quoted JavaScript string literal, in a `<script>` block or an event
        /// handler attribute (see ``JavaScriptEncoder``).
        public mutating func appendInterpolation<Value>(javaScript value: Value) {
            self.html += JavaScriptEncoder.stringLiteral(String(describing: value))
        }

        /// Any value percent-encoded as a URL component (see ``URLComponentEncoder``), for a path segment or a query
        /// value inside a URL attribute.
        public mutating func appendInterpolation<Value>(urlComponent value: Value) {
            self.html += URLComponentEncoder.encode(String(describing: value))
        }
    }
}
