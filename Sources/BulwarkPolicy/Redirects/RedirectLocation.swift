import Foundation

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
    /// Spaces and tabs around a field value.
    static let fieldWhitespace = CharacterSet(charactersIn: " \t")

    /// The longest `Location` value accepted, in UTF-8 bytes: 8 KiB.
    static let maximumLength = 8192

    /// The Location `text` resolved against `base`, or why it cannot be followed.
    static func resolve(_ text: String, against base: RequestURL) -> Result<RequestURL, RedirectRefusalReason> {
        guard text.utf8.count <= self.maximumLength else {
            return .failure(.locationTooLong(length: text.utf8.count, limit: self.maximumLength))
        }
        let scalars = Array(text.trimmingCharacters(in: Self.fieldWhitespace).unicodeScalars)
        guard !scalars.isEmpty else {
            return .failure(.emptyLocation)
        }
        if let control = scalars.first(where: ControlCharacters.isControl) {
            return .failure(.controlCharacter(codePoint: control.value))
        }
        if scalars.contains("\\") {
            return .failure(.backslash)
        }
        let reference: Reference
        switch self.parseReference(scalars, baseScheme: base.scheme) {
        case .success(let parsed): reference = parsed
        case .failure(let reason): return .failure(reason)
        }
        return .success(self.resolve(reference, against: base))
    }

    // MARK: - Parsing

    /// A URI reference split into its parts (RFC 3986 section 4.1); the origin when it has an authority.
    private struct Reference {
        var origin: Origin?
        var path: String
        var query: String?
        var fragment: String?
    }

    private static func parseReference(
        _ scalars: [Unicode.Scalar],
        baseScheme: String
    ) -> Result<Reference, RedirectRefusalReason> {
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
        var reference = Reference(path: "")
        if self.hasDoubleSlash(scalars, at: index) {
            index += 2
            let end = scalars[index...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? scalars.count
            switch self.parseAuthority(scalars[index..<end], scheme: scheme ?? baseScheme) {
            case .success(let origin):
                reference.origin = origin
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

    /// The origin of an authority (what follows `//`) under `scheme`.
    private static func parseAuthority(
        _ authority: ArraySlice<Unicode.Scalar>,
        scheme: String
    ) -> Result<Origin, RedirectRefusalReason> {
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
        var port: Int?
        if let portPart, !portPart.isEmpty {
            guard portPart.count <= 5, portPart.allSatisfy({ ("0"..."9").contains($0) }),
                let number = Int(String(String.UnicodeScalarView(portPart))), (1...65535).contains(number)
            else {
                return .failure(.invalidPort)
            }
            port = number
        }
        do throws(URLReadingError) {
            return .success(try Origin(scheme: scheme, host: String(String.UnicodeScalarView(hostPart)), port: port))
        } catch {
            return .failure(.invalidHost(detail: error.hostError?.description ?? error.description))
        }
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
    /// section 10.2.2). ``RequestURL/init(origin:path:query:fragment:)`` removes the dot segments.
    private static func resolve(_ reference: Reference, against base: RequestURL) -> RequestURL {
        let fragment = reference.fragment ?? base.fragment
        if let origin = reference.origin {
            return RequestURL(origin: origin, path: reference.path, query: reference.query, fragment: fragment)
        }
        if reference.path.isEmpty {
            return RequestURL(
                origin: base.origin,
                path: base.path,
                query: reference.query ?? base.query,
                fragment: fragment
            )
        }
        if reference.path.hasPrefix("/") {
            return RequestURL(origin: base.origin, path: reference.path, query: reference.query, fragment: fragment)
        }
        let directory = base.path.lastIndex(of: "/").map { base.path[...$0] } ?? "/"
        return RequestURL(
            origin: base.origin,
            path: directory + reference.path,
            query: reference.query,
            fragment: fragment
        )
    }

    // MARK: - Characters

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
