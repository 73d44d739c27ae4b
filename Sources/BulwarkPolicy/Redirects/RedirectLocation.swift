/// Reads a `Location` header value and resolves it against the URL of the request that got the redirect
/// (RFC 3986 section 5, RFC 9110 section 10.2.2), refusing every spelling that URL parsers read differently.
///
/// Refused, each with its own ``RedirectRefusalReason``: an empty value; more than ``maximumLength`` bytes; control
/// and invisible formatting characters anywhere (CR and LF included); a backslash anywhere (browsers read it as a
/// slash, so `/\evil.example` leaves the origin); a scheme other than `http` or `https` (`javascript:`, `data:`,
/// `file:`); `http:` or `https:` without `//` (`https:evil.example` is a relative path to some parsers and a host to
/// others); user information (`user@host`); `%` or non-ASCII characters in the host (internationalized names must
/// arrive in punycode); a host ``HostName/canonicalize(_:)`` refuses (decimal, hex or octal IPv4 forms, empty
/// labels); a port that is not a number 1-65535; a `%` not followed by two hex digits.
///
/// Accepted and normalized: surrounding spaces and tabs (field whitespace), relative references of every kind,
/// upper-case and trailing-dot hosts (canonicalized), dot segments (removed), and characters that are not allowed
/// in a URL path or query but harmless there (space, `"`, `<`, `>`, `[`, `]`, `^`, `` ` ``, `{`, `|`, `}` and
/// non-ASCII text), which are percent-encoded as browsers do.
enum RedirectLocation {
    /// The longest `Location` value accepted, in UTF-8 bytes: 8 KiB.
    static let maximumLength = 8192

    /// The Location `text` resolved against `base`, or why it cannot be followed.
    static func resolve(_ text: String, against base: RedirectURL) -> Result<RedirectURL, RedirectRefusalReason> {
        guard text.utf8.count <= self.maximumLength else {
            return .failure(.locationTooLong(length: text.utf8.count, limit: self.maximumLength))
        }
        let scalars = Array(self.trimmingFieldWhitespace(text).unicodeScalars)
        guard !scalars.isEmpty else {
            return .failure(.emptyLocation)
        }
        if let control = scalars.first(where: Self.isControl) {
            return .failure(.controlCharacter(codePoint: control.value))
        }
        if scalars.contains("\\") {
            return .failure(.backslash)
        }
        let reference: Reference
        switch self.parseReference(scalars) {
        case .success(let parsed): reference = parsed
        case .failure(let reason): return .failure(reason)
        }
        return .success(self.resolve(reference, against: base))
    }

    /// The text with the query, fragment and user information removed, control characters escaped and the length
    /// capped, for naming a Location that could not be resolved in events and errors.
    ///
    /// Everything from the authority's start to the last `@` of the text is dropped, wherever that `@` is: a
    /// password may itself hold `/`, `?` or `#`, so no cut is made before the userinfo is gone.
    static func redacted(_ text: String) -> String {
        var scalars = Array(self.trimmingFieldWhitespace(text).unicodeScalars)
        if let at = scalars.lastIndex(of: "@") {
            let start = min(self.indexAfterSchemeSlashes(scalars), at)
            scalars.replaceSubrange(start...at, with: "…@".unicodeScalars)
        }
        if let cut = scalars.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            scalars.removeSubrange(cut...)
        }
        var result = ""
        for (count, scalar) in scalars.enumerated() {
            if count == 200 {
                result += "…"
                break
            }
            if Self.isControl(scalar) {
                result += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    // MARK: - Parsing

    /// A URI reference split into its parts (RFC 3986 section 4.1), the host already canonical.
    private struct Reference {
        var scheme: String?
        var host: String?
        var port: Int?
        var path: String
        var query: String?
        var fragment: String?
    }

    private static func parseReference(_ scalars: [Unicode.Scalar]) -> Result<Reference, RedirectRefusalReason> {
        var index = 0
        var scheme: String?
        if let delimiter = scalars.firstIndex(where: { $0 == ":" || $0 == "/" || $0 == "?" || $0 == "#" }),
            scalars[delimiter] == ":"
        {
            let candidate = scalars[..<delimiter]
            guard self.isScheme(candidate) else {
                return .failure(.unparsable(detail: "a colon in the first path segment, and no valid scheme before it"))
            }
            let name = String(String.UnicodeScalarView(candidate)).lowercased()
            guard name == "https" || name == "http" else {
                return .failure(.schemeNotAllowed(scheme: String(name.prefix(32))))
            }
            index = delimiter + 1
            guard self.hasDoubleSlash(scalars, at: index) else {
                return .failure(.schemeWithoutAuthority(scheme: name))
            }
            scheme = name
        }
        var reference = Reference(scheme: scheme, path: "")
        if self.hasDoubleSlash(scalars, at: index) {
            index += 2
            let end = scalars[index...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? scalars.count
            switch self.parseAuthority(scalars[index..<end]) {
            case .success(let (host, port)):
                reference.host = host
                reference.port = port
            case .failure(let reason):
                return .failure(reason)
            }
            index = end
        }
        let pathEnd = scalars[index...].firstIndex { $0 == "?" || $0 == "#" } ?? scalars.count
        do {
            reference.path = try self.encode(scalars[index..<pathEnd], allowingQueryCharacters: false)
            index = pathEnd
            if index < scalars.count, scalars[index] == "?" {
                let queryEnd = scalars[index...].firstIndex(of: "#") ?? scalars.count
                reference.query = try self.encode(scalars[(index + 1)..<queryEnd], allowingQueryCharacters: true)
                index = queryEnd
            }
            if index < scalars.count, scalars[index] == "#" {
                reference.fragment = try self.encode(scalars[(index + 1)...], allowingQueryCharacters: true)
            }
        } catch {
            return .failure(error)
        }
        return .success(reference)
    }

    /// Host and optional port of an authority (what follows `//`).
    private static func parseAuthority(
        _ authority: ArraySlice<Unicode.Scalar>
    ) -> Result<(String, Int?), RedirectRefusalReason> {
        if authority.contains("@") {
            return .failure(.userInfo)
        }
        var hostPart = authority
        var portPart: ArraySlice<Unicode.Scalar>?
        if authority.first == "[" {
            guard let close = authority.firstIndex(of: "]") else {
                return .failure(.invalidHost(detail: "an IPv6 address is missing its closing bracket"))
            }
            hostPart = authority[...close]
            let rest = authority[(close + 1)...]
            if let first = rest.first {
                guard first == ":" else {
                    return .failure(.invalidHost(detail: "only a port may follow an IPv6 address"))
                }
                portPart = rest.dropFirst()
            }
        } else if let colon = authority.firstIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[(colon + 1)...]
        }
        guard !hostPart.isEmpty else {
            return .failure(.invalidHost(detail: "the host is empty"))
        }
        if hostPart.contains("%") {
            return .failure(.percentInHost)
        }
        if !hostPart.allSatisfy(\.isASCII) {
            return .failure(.nonASCIIHost)
        }
        let host: String
        do {
            host = try HostName.canonicalize(String(String.UnicodeScalarView(hostPart)))
        } catch {
            return .failure(.invalidHost(detail: error.description))
        }
        guard let portPart, !portPart.isEmpty else {
            return .success((host, nil))
        }
        guard portPart.count <= 5, portPart.allSatisfy({ ("0"..."9").contains($0) }),
            let port = Int(String(String.UnicodeScalarView(portPart))), (1...65535).contains(port)
        else {
            return .failure(.invalidPort)
        }
        return .success((host, port))
    }

    /// The path, query or fragment with every character RFC 3986 does not allow there percent-encoded; a `%` must
    /// start a valid escape.
    private static func encode(
        _ scalars: ArraySlice<Unicode.Scalar>,
        allowingQueryCharacters: Bool
    ) throws(RedirectRefusalReason) -> String {
        var output = ""
        var index = scalars.startIndex
        while index < scalars.endIndex {
            let scalar = scalars[index]
            if scalar == "%" {
                guard index + 2 < scalars.endIndex, self.isHexDigit(scalars[index + 1]),
                    self.isHexDigit(scalars[index + 2])
                else {
                    throw .unparsable(detail: "\"%\" is not followed by two hex digits")
                }
                output.unicodeScalars.append(contentsOf: scalars[index...(index + 2)])
                index += 3
                continue
            }
            if self.isAllowed(scalar, queryCharacters: allowingQueryCharacters) {
                output.unicodeScalars.append(scalar)
            } else {
                for byte in String(scalar).utf8 {
                    output += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
                }
            }
            index += 1
        }
        return output
    }

    // MARK: - Resolution

    /// RFC 3986 section 5.2.2, with the fragment inherited from the base when the reference has none (RFC 9110
    /// section 10.2.2).
    private static func resolve(_ reference: Reference, against base: RedirectURL) -> RedirectURL {
        var target = base
        target.fragment = reference.fragment ?? base.fragment
        if let host = reference.host {
            target.scheme = reference.scheme ?? base.scheme
            target.host = host
            target.port = reference.port ?? RedirectURL.defaultPort(for: target.scheme)
            target.path = self.removeDotSegments(reference.path)
            target.query = reference.query
        } else if reference.path.isEmpty {
            target.query = reference.query ?? base.query
        } else if reference.path.hasPrefix("/") {
            target.path = self.removeDotSegments(reference.path)
            target.query = reference.query
        } else {
            let directory = base.path.lastIndex(of: "/").map { base.path[...$0] } ?? "/"
            target.path = self.removeDotSegments(directory + reference.path)
            target.query = reference.query
        }
        if target.path.isEmpty {
            target.path = "/"
        }
        return target
    }

    /// RFC 3986 section 5.2.4: `/a/b/../c/./d` becomes `/a/c/d`.
    static func removeDotSegments(_ path: String) -> String {
        var input = Substring(path)
        var output: [Substring] = []
        while !input.isEmpty {
            if input.hasPrefix("../") {
                input = input.dropFirst(3)
            } else if input.hasPrefix("./") {
                input = input.dropFirst(2)
            } else if input.hasPrefix("/./") {
                input = input.dropFirst(2)
            } else if input == "/." {
                input = "/"
            } else if input.hasPrefix("/../") {
                input = input.dropFirst(3)
                _ = output.popLast()
            } else if input == "/.." {
                input = "/"
                _ = output.popLast()
            } else if input == "." || input == ".." {
                input = ""
            } else {
                let start = input.hasPrefix("/") ? input.index(after: input.startIndex) : input.startIndex
                let end = input[start...].firstIndex(of: "/") ?? input.endIndex
                output.append(input[..<end])
                input = input[end...]
            }
        }
        return output.joined()
    }

    // MARK: - Characters

    private static func trimmingFieldWhitespace(_ text: String) -> Substring {
        var text = Substring(text)
        while let first = text.unicodeScalars.first, first == " " || first == "\t" {
            text = text.dropFirst()
        }
        while let last = text.unicodeScalars.last, last == " " || last == "\t" {
            text = text.dropLast()
        }
        return text
    }

    /// C0 and C1 controls, DEL, and invisible formatting characters (zero-width, bidirectional overrides, line and
    /// paragraph separators).
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.value < 0x20 || scalar.value == 0x7F {
            return true
        }
        if scalar.isASCII {
            return false
        }
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: return true
        default: return scalar.properties.isDefaultIgnorableCodePoint
        }
    }

    /// `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
    private static func isScheme(_ scalars: ArraySlice<Unicode.Scalar>) -> Bool {
        guard let first = scalars.first, ("a"..."z").contains(first) || ("A"..."Z").contains(first) else {
            return false
        }
        return scalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                || $0 == "+" || $0 == "-" || $0 == "."
        }
    }

    private static func hasDoubleSlash(_ scalars: [Unicode.Scalar], at index: Int) -> Bool {
        index + 1 < scalars.count && scalars[index] == "/" && scalars[index + 1] == "/"
    }

    /// Where the authority starts when the text begins with `scheme://` or `//`; 0 otherwise.
    private static func indexAfterSchemeSlashes(_ scalars: [Unicode.Scalar]) -> Int {
        if self.hasDoubleSlash(scalars, at: 0) {
            return 2
        }
        if let colon = scalars.firstIndex(where: { $0 == ":" || $0 == "/" || $0 == "?" || $0 == "#" }),
            scalars[colon] == ":", self.hasDoubleSlash(scalars, at: colon + 1)
        {
            return colon + 3
        }
        return 0
    }

    private static func isHexDigit(_ scalar: Unicode.Scalar) -> Bool {
        ("0"..."9").contains(scalar) || ("a"..."f").contains(scalar) || ("A"..."F").contains(scalar)
    }

    /// Unreserved, sub-delims, `:`, `@`, `/`; and `?` in a query or fragment.
    private static func isAllowed(_ scalar: Unicode.Scalar, queryCharacters: Bool) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", "-", ".", "_", "~":
            return true
        case "!", "$", "&", "'", "(", ")", "*", "+", ",", ";", "=", ":", "@", "/":
            return true
        case "?":
            return queryCharacters
        default:
            return false
        }
    }
}
