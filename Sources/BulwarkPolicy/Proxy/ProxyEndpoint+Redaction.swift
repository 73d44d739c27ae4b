extension ProxyEndpoint {
    /// `text`, a proxy URL or what was meant as one, as it may be shown in a description, a log or an error: the one
    /// redaction every proxy text goes through.
    ///
    /// - Whatever precedes the last `@` (user information, whole or in part) becomes `***`.
    /// - Text before `://` is kept only when it is a scheme (a letter, then letters, digits, `+`, `-`, `.`), else
    ///   it becomes `***` too: without a valid scheme it may be a user name and password.
    /// - A path, query or fragment is cut to `/…`; bytes that are not printable ASCII become `?`; at most 120
    ///   characters are kept.
    ///
    /// ```swift
    /// ProxyEndpoint.redacted("http://alice:hunter2@proxy.example:3128")  // "http://***@proxy.example:3128"
    /// ```
    public static func redacted(_ text: String) -> String {
        var rest = Substring(text)
        var shown = ""
        if let separator = rest.range(of: "://") {
            let scheme = rest[..<separator.lowerBound]
            shown = Self.isScheme(scheme) ? scheme + "://" : "***://"
            rest = rest[separator.upperBound...]
        }
        if let at = rest.lastIndex(of: "@") {
            shown += "***@"
            rest = rest[rest.index(after: at)...]
        }
        if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            rest = rest[..<end] + (rest[end...].count > 1 || rest[end] != "/" ? "/…" : "/")
        }
        shown += rest
        let printable = shown.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? "\($0)" : "?" }
        return printable.count > 120 ? printable.prefix(119).joined() + "…" : printable.joined()
    }

    /// Whether `text` is a URL scheme (RFC 3986: a letter, then letters, digits, `+`, `-` or `.`), at most 16 long.
    static func isScheme(_ text: Substring) -> Bool {
        guard let first = text.unicodeScalars.first, text.unicodeScalars.count <= 16,
            ("a"..."z").contains(first) || ("A"..."Z").contains(first)
        else { return false }
        return text.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "+"
                || $0 == "-" || $0 == "."
        }
    }
}
