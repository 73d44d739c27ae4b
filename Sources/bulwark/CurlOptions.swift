import ArgumentParser
import Bulwark
import BulwarkPolicy
import Foundation
import NIOCore
import NIOHTTP1

/// The options of `bulwark fetch` that curl users already know, under curl's names and with curl's meaning: the
/// method and body (`-X`, `-d`, `--data-binary`, `--data-raw`), what is printed (`-I`, `-i`, `-s`, `-S`, `-v`),
/// `-f` and `-L`; and curl's insecure or secret-revealing options, refused with the sentence that says what to do.
struct CurlOptions: ParsableArguments {
    @Option(
        name: [.customShort("X"), .customLong("request")],
        help: ArgumentHelp("The request method (default GET, or POST with a --data option).", valueName: "method")
    )
    var method: String?

    @Option(
        name: [.customShort("d"), .customLong("data")],
        help: ArgumentHelp(
            "Send this body with POST, as curl: @FILE reads a file (carriage returns and newlines removed), @- "
                + "standard input; several are joined with &.",
            discussion: "The content type is application/x-www-form-urlencoded unless -H gives one.",
            valueName: "data"
        )
    )
    var data: [String] = []

    @Option(
        name: .customLong("data-binary"),
        help: ArgumentHelp("As --data, but @FILE is sent byte for byte.", valueName: "data")
    )
    var dataBinary: [String] = []

    @Option(
        name: .customLong("data-raw"),
        help: ArgumentHelp("As --data, but a leading @ is sent as it is.", valueName: "data")
    )
    var dataRaw: [String] = []

    @Flag(
        name: [.customShort("I"), .customLong("head")],
        help: "Send HEAD and print the response's status line and header fields on standard output."
    )
    var head = false

    @Flag(
        name: [.customShort("i"), .customLong("include")],
        help: "Print the response's status line and header fields before the body."
    )
    var include = false

    @Flag(
        name: [.customShort("s"), .customLong("silent")],
        help: "Print no status, chain or progress lines. Errors are still printed (curl hides them without -S)."
    )
    var silent = false

    @Flag(
        name: [.customShort("S"), .customLong("show-error")],
        help: "Accepted for curl's -sS: Bulwark always prints errors."
    )
    var showError = false

    @Flag(
        name: [.customShort("v"), .customLong("verbose")],
        help: ArgumentHelp(
            "Print the request, each security decision (handshake verdict, pins, revocation, each redirect), "
                + "the verified chain and the response's header fields on standard error. Credentials are shown as "
                + "<redacted>."
        )
    )
    var verbose = false

    @Flag(
        name: [.customShort("f"), .customLong("fail")],
        help: "On an HTTP status of 400 or more, write no body and exit 22, as curl."
    )
    var fail = false

    @Flag(
        name: [.customShort("L"), .customLong("location")],
        help: ArgumentHelp(
            "Follow redirects, as curl's -L. Bulwark follows them without it too, always under its redirect "
                + "policy (--max-redirs 0: none)."
        )
    )
    var location = false

    @Option(
        name: [.customShort("A"), .customLong("user-agent")],
        help: ArgumentHelp("Send this User-Agent.", valueName: "name")
    )
    var userAgent: String?

    @Flag(
        name: [.customShort("k"), .customLong("insecure")],
        help: ArgumentHelp(
            "Refused: Bulwark never turns certificate checks off from the command line (a policy file can, for a "
                + "development host)."
        )
    )
    var insecure = false

    @Option(
        name: [.customShort("u"), .customLong("user")],
        help: ArgumentHelp(
            "Refused: a password on the command line is visible to every user of the machine.",
            valueName: "user:password"
        )
    )
    var user: String?

    @Option(
        name: [.customShort("U"), .customLong("proxy-user")],
        help: ArgumentHelp(
            "Refused: a password on the command line is visible to every user of the machine; use --proxy-user-file.",
            valueName: "user:password"
        )
    )
    var proxyUser: String?

    @Option(
        name: .customLong("oauth2-bearer"),
        help: ArgumentHelp(
            "Refused: a token on the command line is visible to every user of the machine; use --bearer-token-file.",
            valueName: "token"
        )
    )
    var oauth2Bearer: String?

    /// The sentences that refuse a secret on the command line, wherever it is found: as an option's value, joined to
    /// its letter (`-uuser:password`), or after curl's `FILE:` in `-E`.
    enum Refusal {
        static let user =
            "-u/--user is refused: a password on the command line is visible to every user of the machine. "
            + "Send a token with --bearer-token-file, or authenticate to a proxy with --proxy-user-file."
        static let proxyUser =
            "-U/--proxy-user is refused: a password on the command line is visible to every user of the machine. "
            + "Put the one line user:password in a file and give --proxy-user-file FILE."
        static let certificatePassword =
            "-E/--cert: curl's FILE:password form is not taken (a password on the command line is visible to every "
            + "user of the machine): give the file alone, and the key's passphrase with --key-passphrase-file FILE"
    }

    /// The exit status of `--fail` on an HTTP error, as curl's (CURLE_HTTP_RETURNED_ERROR).
    static let httpErrorExit: Int32 = 22

    func validate() throws {
        if self.insecure {
            throw ValidationError(
                "-k/--insecure is refused: Bulwark never turns certificate checks off from the command line. For a "
                    + "development host, use a policy file with \"insecure\": true and \"evaluator\": \"disabled\" "
                    + "for that host (--policy FILE); to trust a private CA, give it with --cacert or --ca."
            )
        }
        if self.user != nil {
            throw ValidationError(Refusal.user)
        }
        if self.proxyUser != nil {
            throw ValidationError(Refusal.proxyUser)
        }
        if self.oauth2Bearer != nil {
            throw ValidationError(
                "--oauth2-bearer is refused: a token on the command line is visible to every user of the machine. "
                    + "Put it in a file and give --bearer-token-file FILE."
            )
        }
        if let userAgent = self.userAgent, Self.holdsControlCharacter(userAgent) {
            throw ValidationError("-A/--user-agent: the value holds a control character")
        }
        if let method = self.method {
            guard HTTPToken.isToken(method) else {
                throw ValidationError("-X/--request: \"\(method)\" is not a method name (letters, digits, ! # $ …)")
            }
        }
        if self.head {
            if self.hasBody {
                throw ValidationError("-I/--head sends HEAD, which has no body: drop -I or the --data options")
            }
            if let method = self.method, method != "HEAD" {
                throw ValidationError("-I/--head sends HEAD: drop -X \(method) or -I")
            }
        }
    }

    /// The refusal of a word that joins a value to `-u` or `-U`, or a password to `-E` (`-Ecert.pem:password`),
    /// before a `--`; nil when there is none. The sentence never repeats the word.
    static func joinedSecretRefusal(_ arguments: [String]) -> String? {
        for argument in arguments {
            if argument == "--" { return nil }
            guard argument.count > 2, argument.hasPrefix("-"), !argument.hasPrefix("--") else { continue }
            let letter = argument.dropFirst().first
            if letter == "u" { return Refusal.user }
            if letter == "U" { return Refusal.proxyUser }
            if letter == "E", argument.contains(":") { return Refusal.certificatePassword }
        }
        return nil
    }

    /// Whether a `--data` option gives a body.
    var hasBody: Bool { !self.data.isEmpty || !self.dataBinary.isEmpty || !self.dataRaw.isEmpty }

    /// The method: `-X`, else HEAD for `-I`, POST with a body, GET.
    var requestMethod: HTTPMethod {
        if let method = self.method { return HTTPMethod(rawValue: method) }
        if self.head { return .HEAD }
        return self.hasBody ? .POST : .GET
    }

    /// The body of the `--data` options, joined with `&` (`--data`, then `--data-raw`, then `--data-binary` values,
    /// each in command-line order; curl keeps the order of the command line across the three), or nil.
    func body() throws -> [UInt8]? {
        guard self.hasBody else { return nil }
        var parts: [[UInt8]] = []
        for value in self.data {
            parts.append(
                try Self.read(value, option: "-d/--data").filter {
                    $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n")
                }
            )
        }
        for value in self.dataRaw {
            parts.append(Array(value.utf8))
        }
        for value in self.dataBinary {
            parts.append(try Self.read(value, option: "--data-binary"))
        }
        return Array(parts.joined(separator: [UInt8(ascii: "&")]))
    }

    /// The header fields these options add to `headers`: User-Agent, and curl's content type for a body unless the
    /// request names one.
    func addHeaders(to headers: inout HTTPHeaders) {
        if let userAgent = self.userAgent { headers.replaceOrAdd(name: "user-agent", value: userAgent) }
        if self.hasBody, !headers.contains(name: "content-type") {
            headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        }
    }

    /// The bytes of a `--data` value: the text itself, or the file after `@` (`@-`: standard input).
    private static func read(_ value: String, option: String) throws -> [UInt8] {
        guard value.hasPrefix("@") else { return Array(value.utf8) }
        let path = String(value.dropFirst())
        if path == "-" { return Array(FileHandle.standardInput.readDataToEndOfFile()) }
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw ValidationError("\(option): cannot read \"\(path)\"")
        }
        return Array(contents)
    }

    /// Whether a header field value holds a control character other than a tab (CR and LF among them): NIO would
    /// refuse it after connecting, and a CR LF must never split a field.
    static func holdsControlCharacter(_ value: String) -> Bool {
        value.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }
    }
}
