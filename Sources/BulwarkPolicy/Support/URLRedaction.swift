/// The one way Bulwark shows a URL it may not trust in an error, event or description: no user information (the
/// authority up to the text's last `@` is dropped before anything is cut, since a password may hold `/`, `?` or
/// `#`), no query, no fragment, control characters escaped, at most 200 characters.
package enum URLRedaction {
    package static func redacted(_ text: String) -> String {
        RedirectLocation.redacted(text)
    }
}
