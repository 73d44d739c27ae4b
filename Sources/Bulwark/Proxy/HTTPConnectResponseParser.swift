/// Reads a proxy's answer to a `CONNECT` request, byte by byte as it arrives: a value without I/O, tested without
/// sockets.
///
/// The answer is an HTTP/1.x status line and header fields up to an empty line, at most 16 KiB. A 2xx answer grants
/// the tunnel, and nothing may follow it: the client speaks first inside the tunnel (its TLS hello), so bytes after a
/// 2xx head (a body, or data claiming to come from the origin) are refused. Interim `1xx` answers before it are skipped
/// (RFC 9110); `101` and any other status end the handshake; its body is not read.
struct HTTPConnectResponseParser {
    /// A proxy's answer head.
    struct Head: Equatable, Sendable {
        var status: Int
        var reason: String
        /// The schemes of the `Proxy-Authenticate` fields (`Basic`, `Digest`, `NTLM`, `Negotiate`), in order.
        var challenges: [String]
    }

    enum Outcome: Equatable {
        /// The head is not complete yet.
        case needMore
        /// The head, and how many bytes came after it.
        case head(Head, trailing: Int)
    }

    /// The longest answer head read.
    static let maximumHeadSize = 16 * 1024

    private var buffer: [UInt8] = []
    /// The bytes of the interim (1xx) answers skipped so far; they count towards ``maximumHeadSize``.
    private var interimBytes = 0

    /// Takes the next bytes of the answer. Interim answers (`1xx` but `101`, RFC 9110 section 15.2) are skipped:
    /// the answer that decides is the first final one, and all the heads read together stay within 16 KiB.
    mutating func receive(_ bytes: some Collection<UInt8>) throws(ProxyHandshakeFailure) -> Outcome {
        var searchFrom = max(0, self.buffer.count - 3)
        self.buffer.append(contentsOf: bytes)
        while true {
            if self.buffer.count >= 5, !self.buffer.starts(with: Array("HTTP/".utf8)) {
                throw .garbage("the answer to CONNECT does not start with an HTTP status line")
            }
            let limit = Self.maximumHeadSize - self.interimBytes
            guard let end = Self.endOfHead(self.buffer, from: searchFrom) else {
                if self.buffer.count > limit {
                    throw .garbage("the answer to CONNECT has no end of head within \(Self.maximumHeadSize) bytes")
                }
                return .needMore
            }
            guard end <= limit else {
                throw .garbage("the answer to CONNECT has a head longer than \(Self.maximumHeadSize) bytes")
            }
            let head = try Self.parse(self.buffer[..<end])
            guard (100..<200).contains(head.status), head.status != 101 else {
                return .head(head, trailing: self.buffer.count - end)
            }
            self.interimBytes += end
            self.buffer.removeFirst(end)
            searchFrom = 0
        }
    }

    /// The index just after the empty line that ends the head (`\r\n\r\n`, or `\n\n` as lenient readers accept).
    private static func endOfHead(_ bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\n") {
                if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "\n") { return index + 2 }
                if index + 2 < bytes.count, bytes[index + 1] == UInt8(ascii: "\r"),
                    bytes[index + 2] == UInt8(ascii: "\n")
                {
                    return index + 3
                }
            }
            index += 1
        }
        return nil
    }

    private static func parse(_ head: ArraySlice<UInt8>) throws(ProxyHandshakeFailure) -> Head {
        guard head.allSatisfy({ $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || (0x20..<0x7F).contains($0) }) else {
            throw .garbage("the answer to CONNECT holds bytes that are not HTTP header text")
        }
        // Split on the bytes: in a Swift string, "\r\n" is one character, which a split on "\n" would not find.
        let lines = head.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            Substring(String(decoding: line.last == UInt8(ascii: "\r") ? line.dropLast() : line, as: UTF8.self))
        }
        guard let statusLine = lines.first else { throw .garbage("the answer to CONNECT is empty") }
        // HTTP/1.1 200 Connection established
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0", parts[1].count == 3,
            let status = Int(parts[1]), (100...599).contains(status)
        else {
            throw .garbage("the answer to CONNECT has no valid HTTP/1.x status line")
        }
        var challenges: [String] = []
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                !line[..<colon].contains(where: { $0 == " " || $0 == "\t" })
            else {
                throw .garbage("the answer to CONNECT has a malformed header line")
            }
            guard line[..<colon].lowercased() == "proxy-authenticate" else { continue }
            challenges += Self.schemes(in: line[line.index(after: colon)...])
        }
        let reason = parts.count > 2 ? String(parts[2].prefix(80)) : ""
        return Head(status: status, reason: reason, challenges: challenges)
    }

    /// The scheme names of a `Proxy-Authenticate` field value: `Basic realm="x", Digest realm="y", nonce="z"` gives
    /// `Basic`, `Digest`. An element is a scheme when it starts with a token that holds no `=`.
    static func schemes(in value: Substring) -> [String] {
        value.split(separator: ",").compactMap { element in
            let trimmed = element.drop { $0 == " " || $0 == "\t" }
            let token = trimmed.prefix { $0 != " " && $0 != "\t" }
            guard !token.isEmpty, !token.contains("="), !token.contains("\"") else { return nil }
            return String(token.prefix(40))
        }
    }
}
