import Foundation

/// The one way Bulwark shows a URL it may not trust in an error, event or description: no user information (the
/// authority up to the text's last `@` is dropped before anything is cut, since a password may hold `/`, `?` or
/// `#`), no query, no fragment, control characters escaped (see ``ControlCharacters/escaped(_:quotingDelimiters:)``),
/// at most 200 characters.
package enum URLRedaction {
    /// Spaces and tabs around a field value.
    static let fieldWhitespace = CharacterSet(charactersIn: " \t")

    /// The longest redacted text, in characters, before `…`.
    static let maximumLength = 200

    /// `text` (a URL, or a `Location` value) redacted: `https://u:p?w@h/x?token=1` is shown as `https://…@h/x`.
    package static func redacted(_ text: String) -> String {
        var scalars = Array(text.trimmingCharacters(in: Self.fieldWhitespace).unicodeScalars)
        if let at = scalars.lastIndex(of: "@") {
            let start = min(self.indexAfterSchemeSlashes(scalars), at)
            scalars.replaceSubrange(start...at, with: "…@".unicodeScalars)
        }
        if let cut = scalars.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            scalars.removeSubrange(cut...)
        }
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars.prefix(self.maximumLength))
        return ControlCharacters.escaped(String(result)) + (scalars.count > self.maximumLength ? "…" : "")
    }

    /// `url` as events and errors show it: the ``RequestURL/redacted`` form (scheme, canonical authority, normalized
    /// path) when it reads as a request URL, its text ``redacted(_:)`` otherwise.
    package static func redacted(_ url: URL) -> String {
        (try? RequestURL(url))?.redacted ?? self.redacted(url.absoluteString)
    }

    /// Where the authority starts when the text begins with `scheme://` or `//`; 0 otherwise.
    private static func indexAfterSchemeSlashes(_ scalars: [Unicode.Scalar]) -> Int {
        func hasDoubleSlash(at index: Int) -> Bool {
            index + 1 < scalars.count && scalars[index] == "/" && scalars[index + 1] == "/"
        }
        if hasDoubleSlash(at: 0) {
            return 2
        }
        if let colon = scalars.firstIndex(where: { $0 == ":" || $0 == "/" || $0 == "?" || $0 == "#" }),
            scalars[colon] == ":", hasDoubleSlash(at: colon + 1)
        {
            return colon + 3
        }
        return 0
    }
}
