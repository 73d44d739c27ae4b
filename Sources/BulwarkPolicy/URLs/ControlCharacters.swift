/// The one definition of the characters Bulwark never shows or accepts as they are in URL text, and the one way it
/// writes them in a message: as `\u{HEX}`, so that a description stays on one line and cannot be forged by its input
/// (a CR LF, a bidirectional override or a zero-width character in a host, a `Location` or a URL).
package enum ControlCharacters {
    /// C0 and C1 controls, DEL, and invisible formatting characters: zero-width characters, bidirectional overrides,
    /// line and paragraph separators and every other default-ignorable code point. A `Location` holding one is
    /// refused.
    package static func isControl(_ scalar: Unicode.Scalar) -> Bool {
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

    /// ``isControl(_:)``, and whitespace of every kind (the ASCII space, the no-break space, the ideographic space):
    /// the characters a host name may not hold.
    package static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        if self.isControl(scalar) {
            return true
        }
        let properties = scalar.properties
        return properties.isWhitespace || properties.generalCategory == .spaceSeparator
    }

    /// `text` with every invisible character but the ASCII space (see ``isInvisible(_:)``) written as `\u{HEX}`
    /// (`\u{D}\u{A}` for CR LF, `\u{202E}` for a right-to-left override); with `quotingDelimiters`, `"` and `\` are
    /// written as `\"` and `\\` too, so that the result can stand between quotes.
    package static func escaped(_ text: some StringProtocol, quotingDelimiters: Bool = false) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            if quotingDelimiters && (scalar == "\"" || scalar == "\\") {
                result += "\\"
                result.unicodeScalars.append(scalar)
            } else if scalar != " " && self.isInvisible(scalar) {
                result += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
