import Foundation

/// Canonicalization of host names, shared by ``HostPattern`` and ``HostMatcher``.
///
/// The canonical form of a host is what patterns are compared against, byte for byte:
///
/// - **Case**: lower-case ASCII.
/// - **IDN**: non-ASCII input is mapped with Unicode NFKC (so fullwidth `ｅｘａｍｐｌｅ` becomes `example` and the
///   fullwidth full stop `．` becomes a dot), lower-cased and normalized to NFC; the ideographic full stop `。` is
///   read as a dot, as browsers do. Every label that still holds non-ASCII characters is then encoded with Punycode
///   (RFC 3492) and prefixed with `xn--`: `bücher.example` becomes `xn--bcher-kva.example`. A label that is already
///   written as `xn--…` is only lower-cased, so the Unicode and the punycode spelling of a name canonicalize alike.
///   Non-ASCII characters must be letters, marks or digits; symbols (including emoji) are refused, so a name like
///   that has to be written in its `xn--` form.
/// - **Trailing dot**: one trailing dot (the fully qualified form, `example.com.`) is removed, so `example.com.` and
///   `example.com` are the same host. Two trailing dots leave an empty label, which is an error.
/// - **IPv4**: a dotted quad of four decimal numbers 0-255 without leading zeros (`127.0.0.1`) is an IPv4 address
///   and is kept as it is. Any other name whose last label is numeric (all decimal digits, or `0x` followed by hex
///   digits) is refused with ``HostPatternError/Code/invalidIPv4``: `127.1`, `2130706433`, `0x7f.0.0.1`,
///   `0177.0.0.1` and `1.2.3.4.5` are ambiguous spellings of addresses that other URL parsers read differently.
///   This is the "ends in a number" rule of the WHATWG URL Standard; no real top-level domain is numeric.
/// - **IPv6**: an address with or without brackets (`[::1]`, `::1`) is written in the RFC 5952 form: lower-case hex,
///   no leading zeros, the longest run (the first, on a tie) of two or more zero groups shortened to `::`, and no
///   brackets. Embedded IPv4 input (`::ffff:192.0.2.1`) is accepted and written in hex (`::ffff:c000:201`), as the
///   WHATWG URL Standard does. Zone identifiers (`fe80::1%eth0`) are refused, since `%` is.
///
/// IP literals are read by the package's one IP parser (`IPAddress`), which the certificate host check and the test
/// support's certificate factory use as well; every reader of a URL (the client, redirects, credential scopes, the
/// allowlist, the cookie jar) canonicalizes its host here.
///
/// Refused: the empty string; empty labels (`a..b`, `.a`); labels over 63 octets and names over 253 octets (both
/// measured after Punycode, without the trailing dot); `%`; `@`; `:`, `/`, `\`, `?`, `#` (a scheme, port, path, query
/// or fragment; `:` is allowed only in an IPv6 address); whitespace, control and invisible formatting characters;
/// and any other character that is not `a-z`, `0-9`, `-` or `_` after mapping. The characters are checked after
/// NFKC mapping, so fullwidth look-alikes such as `＠` or `／` are refused as well.
public enum HostName {
    /// The longest label allowed, in octets.
    static let maximumLabelLength = 63
    /// The longest name allowed, in octets, without a trailing dot.
    static let maximumNameLength = 253

    /// Canonical form of a host: lower-case ASCII with punycode for IDN labels, no trailing dot, IPv6 without brackets.
    ///
    /// See ``HostName`` for the rules. Canonicalizing a canonical host returns it unchanged.
    ///
    /// - Throws: ``HostPatternError`` naming the host and the broken rule.
    public static func canonicalize(_ host: String) throws(HostPatternError) -> String {
        try self.canonicalize(host[...], input: host, isPattern: false)
    }

    /// Whether `canonicalHost` is an IP address: an IPv4 dotted quad (four decimal numbers 0-255 without leading
    /// zeros) or an IPv6 address written without brackets.
    ///
    /// Pass a canonical host (see ``canonicalize(_:)``); bracketed or otherwise non-canonical text returns `false`.
    public static func isIPAddress(_ canonicalHost: String) -> Bool {
        IPAddress(canonicalHost) != nil
    }

    // MARK: - Canonicalization

    /// Canonicalizes `text`, reporting errors against `input` (the whole pattern or host as given).
    ///
    /// With `isPattern`, an asterisk is reported as ``HostPatternError/Code/misplacedWildcard``; otherwise as
    /// ``HostPatternError/Code/invalidCharacter``.
    static func canonicalize(_ text: Substring, input: String, isPattern: Bool) throws(HostPatternError) -> String {
        func failure(_ code: HostPatternError.Code, _ detail: String) -> HostPatternError {
            HostPatternError(code, input: input, isPattern: isPattern, detail: detail)
        }

        guard !text.isEmpty else {
            throw failure(.empty, "the name is empty")
        }
        if let simple = text.utf8.withContiguousStorageIfAvailable({ self.canonicalizeSimpleName($0) }),
            let simple
        {
            return simple
        }

        // Map non-ASCII input: NFKC, lower case, NFC, and the ideographic full stop as a dot.
        let mapped: String
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            mapped = String(text)
        } else {
            let folded = String(text).precomposedStringWithCompatibilityMapping.lowercased()
                .precomposedStringWithCanonicalMapping
            var scalars = String.UnicodeScalarView()
            for scalar in folded.unicodeScalars {
                scalars.append(scalar == "\u{3002}" ? "." : scalar)
            }
            mapped = String(scalars)
        }

        // Characters that say this is not a bare host, checked in a fixed order of precedence.
        var percent: Unicode.Scalar?
        var at: Unicode.Scalar?
        var invisible: Unicode.Scalar?
        var urlDelimiter: Unicode.Scalar?
        var colonCount = 0
        var hasBracket = false
        for scalar in mapped.unicodeScalars {
            switch scalar {
            case "%": percent = percent ?? scalar
            case "@": at = at ?? scalar
            case "/", "\\", "?", "#": urlDelimiter = urlDelimiter ?? scalar
            case ":": colonCount += 1
            case "[", "]": hasBracket = true
            default:
                if ControlCharacters.isInvisible(scalar) {
                    invisible = invisible ?? scalar
                }
            }
        }
        if percent != nil {
            throw failure(.percentEncoding, "\"%\" is not allowed (no percent-encoding and no IPv6 zone identifier)")
        }
        if at != nil {
            throw failure(.userInfo, "\"@\" is not allowed (a host must not contain user information)")
        }
        if let invisible {
            throw failure(
                .whitespaceOrControl,
                "whitespace, control and invisible formatting characters are not allowed "
                    + "(found \(Self.name(invisible)))"
            )
        }
        if let urlDelimiter {
            throw failure(
                .urlComponent,
                "\"\(urlDelimiter)\" is not allowed (a host must not contain a scheme, port, path, query or fragment)"
            )
        }

        // IP literals in IPv6 form.
        if colonCount > 0 || hasBracket {
            let bytes = mapped.utf8
            let first = bytes.first
            let last = bytes.last
            if first == UInt8(ascii: "[") || last == UInt8(ascii: "]") {
                if first == UInt8(ascii: "["), last == UInt8(ascii: "]"), bytes.count >= 2,
                    let pieces = IPAddress.parseIPv6(bytes.dropFirst().dropLast())
                {
                    return IPAddress.formatIPv6(pieces)
                }
                if first == UInt8(ascii: "["), last != UInt8(ascii: "]"), mapped.contains("]:") {
                    throw failure(.urlComponent, "a host must not contain a port")
                }
                throw failure(.invalidIPv6, "brackets are only allowed around a valid IPv6 address")
            }
            if colonCount > 0 {
                if colonCount >= 2,
                    bytes.allSatisfy({
                        IPAddress.hexValue($0) != nil || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".")
                    })
                {
                    if let pieces = IPAddress.parseIPv6(bytes) {
                        return IPAddress.formatIPv6(pieces)
                    }
                    throw failure(.invalidIPv6, "it is not a valid IPv6 address")
                }
                throw failure(
                    .urlComponent,
                    "\":\" is only allowed in an IPv6 address (a host must not contain a scheme or a port)"
                )
            }
            // A stray bracket without a colon: refused below as an invalid character.
        }

        // Host names: one trailing dot is dropped, then every label is checked and, if need be, punycode-encoded.
        var body = Substring(mapped)
        if body.utf8.last == UInt8(ascii: ".") {
            body = body.dropLast()
        }
        guard !body.isEmpty else {
            throw failure(.emptyLabel, "it has an empty label (a name must have at least one label)")
        }
        var output: [UInt8] = []
        output.reserveCapacity(body.utf8.count + 8)
        var lastLabelStart = 0
        for label in body.split(separator: ".", omittingEmptySubsequences: false) {
            guard !label.isEmpty else {
                throw failure(
                    .emptyLabel,
                    "it has an empty label (two dots in a row, a leading dot, or two trailing dots)"
                )
            }
            if !output.isEmpty {
                output.append(UInt8(ascii: "."))
            }
            lastLabelStart = output.count
            var isASCII = true
            for scalar in label.unicodeScalars {
                if scalar.isASCII {
                    let byte = UInt8(scalar.value)
                    switch byte {
                    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                        UInt8(ascii: "-"), UInt8(ascii: "_"):
                        continue
                    case UInt8(ascii: "A")...UInt8(ascii: "Z"):
                        continue
                    case UInt8(ascii: "*") where isPattern:
                        throw failure(
                            .misplacedWildcard,
                            "an asterisk is only allowed as the whole leftmost label (\"*.\" or \"**.\")"
                        )
                    default:
                        throw failure(.invalidCharacter, "the character \(Self.name(scalar)) is not allowed")
                    }
                }
                isASCII = false
                switch scalar.properties.generalCategory {
                case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
                    .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .letterNumber, .otherNumber:
                    continue
                default:
                    throw failure(.invalidCharacter, "the character \(Self.name(scalar)) is not allowed")
                }
            }
            if isASCII {
                for byte in label.utf8 {
                    output.append(byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte)
                }
            } else {
                // Punycode output has at least one octet per code point, so a longer label cannot fit.
                let limit = self.maximumLabelLength - 4
                guard label.unicodeScalars.count <= limit, let encoded = Punycode.encode(String(label)) else {
                    throw failure(
                        .labelTooLong,
                        "the label \"\(label)\" is longer than \(self.maximumLabelLength) octets once punycode-encoded"
                    )
                }
                output.append(contentsOf: "xn--".utf8)
                output.append(contentsOf: encoded.utf8)
            }
            let length = output.count - lastLabelStart
            guard length <= self.maximumLabelLength else {
                let canonicalLabel = String(decoding: output[lastLabelStart...], as: UTF8.self)
                throw failure(
                    .labelTooLong,
                    "the label \"\(canonicalLabel)\" is \(length) octets long (at most \(self.maximumLabelLength))"
                )
            }
        }
        guard output.count <= self.maximumNameLength else {
            throw failure(
                .nameTooLong,
                "the name is \(output.count) octets long (at most \(self.maximumNameLength), without a trailing dot)"
            )
        }
        if self.isNumeric(output[lastLabelStart...]) && !self.isIPv4(output) {
            throw failure(
                .invalidIPv4,
                "a name whose last label is numeric must be an IPv4 address written as four decimal numbers 0-255 "
                    + "without leading zeros (such as \"127.0.0.1\")"
            )
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The fast path for the common case: an ASCII name of letters, digits, `-` and `_` whose labels and length are
    /// within bounds, or a dotted-quad IPv4 address. Returns `nil` for anything else, which then takes the full path
    /// (and gets the same result or a precise error there).
    private static func canonicalizeSimpleName(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var count = bytes.count
        if count > 0 && bytes[count - 1] == UInt8(ascii: ".") {
            count -= 1
        }
        guard count > 0, count <= self.maximumNameLength else {
            return nil
        }
        var labelLength = 0
        var lastLabelStart = 0
        var hasUpperCase = false
        for index in 0..<count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"),
                UInt8(ascii: "_"):
                labelLength += 1
            case UInt8(ascii: "A")...UInt8(ascii: "Z"):
                labelLength += 1
                hasUpperCase = true
            case UInt8(ascii: "."):
                guard labelLength > 0, labelLength <= self.maximumLabelLength else { return nil }
                labelLength = 0
                lastLabelStart = index + 1
            default:
                return nil
            }
        }
        guard labelLength > 0, labelLength <= self.maximumLabelLength else {
            return nil
        }
        let name = UnsafeBufferPointer(rebasing: bytes[..<count])
        if self.isNumeric(name[lastLabelStart...]) && (hasUpperCase || !self.isIPv4(name)) {
            return nil
        }
        return String(unsafeUninitializedCapacity: count) { output in
            for index in 0..<count {
                let byte = name[index]
                output[index] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            }
            return count
        }
    }

    /// Whether the last label of a canonical name is numeric, so that the whole name must be an IPv4 address:
    /// all decimal digits, or `0x` followed by hex digits (WHATWG URL Standard, "ends in a number"). Letters are
    /// read case-insensitively.
    static func endsInNumber(_ canonicalHost: String) -> Bool {
        let bytes = canonicalHost.utf8
        let start = bytes.lastIndex(of: UInt8(ascii: ".")).map { bytes.index(after: $0) } ?? bytes.startIndex
        return self.isNumeric(bytes[start...])
    }

    /// `"x" (U+0078)` for a visible character and `U+0009` for an invisible one, for error descriptions.
    private static func name(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        if ControlCharacters.isInvisible(scalar) {
            return code
        }
        return "\"\(scalar)\" (\(code))"
    }

    // MARK: - IPv4

    private static func isNumeric<C: Collection<UInt8>>(_ label: C) -> Bool {
        guard !label.isEmpty else { return false }
        if label.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return true
        }
        var iterator = label.makeIterator()
        guard iterator.next() == UInt8(ascii: "0"), let x = iterator.next(), x | 0x20 == UInt8(ascii: "x") else {
            return false
        }
        while let byte = iterator.next() {
            if IPAddress.hexValue(byte) == nil { return false }
        }
        return true
    }

    private static func isIPv4<C: Collection<UInt8>>(_ bytes: C) -> Bool {
        IPAddress.parseIPv4(bytes) != nil
    }
}
