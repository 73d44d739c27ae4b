import BulwarkPolicy

/// The client side of a SOCKS5 negotiation (RFC 1928) with username/password authentication (RFC 1929), as a value
/// without I/O, tested without sockets: it says what to send and reads what arrives.
///
/// The origin's host is sent as a name (address type 3, "domain name"), so that the proxy resolves it and the client
/// makes no DNS lookup; an IP-address host is sent as an address (types 1 and 4). The credentials themselves never
/// pass through this value: ``Action/sendAuthentication`` asks the caller to write them from their secret box.
struct SOCKS5Handshake {
    enum Action: Equatable {
        /// Write these bytes to the proxy.
        case send([UInt8])
        /// Write the RFC 1929 username/password request (``authenticationRequest(username:password:)``).
        case sendAuthentication
        /// Wait for more bytes.
        case needMore
        /// The tunnel is set up; `trailing` bytes came after the proxy's reply.
        case established(trailing: Int)
    }

    private enum State {
        case greeting
        case awaitingMethod
        case awaitingAuthentication
        case awaitingReply
        case established
    }

    /// The origin's canonical host (an IPv6 address without brackets).
    let host: String
    let port: Int
    /// Whether username/password is offered besides no authentication.
    let offersCredentials: Bool
    private var state = State.greeting
    private var buffer: [UInt8] = []

    init(host: String, port: Int, offersCredentials: Bool) {
        self.host = host
        self.port = port
        self.offersCredentials = offersCredentials
    }

    /// The greeting: version 5 and the offered methods (0 no authentication, 2 username/password).
    mutating func start() -> [UInt8] {
        precondition(self.state == .greeting)
        self.state = .awaitingMethod
        return self.offersCredentials ? [0x05, 0x02, 0x00, 0x02] : [0x05, 0x01, 0x00]
    }

    /// Takes bytes from the proxy.
    mutating func receive(_ bytes: some Collection<UInt8>) throws(ProxyHandshakeFailure) -> Action {
        self.buffer.append(contentsOf: bytes)
        switch self.state {
        case .greeting, .established:
            throw .garbage("the SOCKS5 proxy sent bytes out of turn")
        case .awaitingMethod:
            guard self.buffer.count >= 2 else { return .needMore }
            guard self.buffer.count == 2 else { throw .garbage("the SOCKS5 method answer is too long") }
            guard self.buffer[0] == 0x05 else { throw .garbage("the answer is not SOCKS version 5") }
            let method = self.buffer[1]
            self.buffer.removeAll()
            switch method {
            case 0x00:
                self.state = .awaitingReply
                return .send(self.connectRequest())
            case 0x02 where self.offersCredentials:
                self.state = .awaitingAuthentication
                return .sendAuthentication
            case 0xFF:
                throw .socksNoAcceptableMethod(offeredCredentials: self.offersCredentials)
            default:
                throw .garbage("the SOCKS5 proxy chose the method \(method), which was not offered")
            }
        case .awaitingAuthentication:
            guard self.buffer.count >= 2 else { return .needMore }
            guard self.buffer.count == 2 else { throw .garbage("the SOCKS5 authentication answer is too long") }
            guard self.buffer[0] == 0x01 else { throw .garbage("the authentication answer is not version 1") }
            let status = self.buffer[1]
            self.buffer.removeAll()
            guard status == 0x00 else { throw .socksAuthFailed(status: status) }
            self.state = .awaitingReply
            return .send(self.connectRequest())
        case .awaitingReply:
            guard self.buffer.count >= 2 else { return .needMore }
            guard self.buffer[0] == 0x05 else { throw .garbage("the connect reply is not SOCKS version 5") }
            guard self.buffer[1] == 0x00 else { throw .socksRefused(reply: self.buffer[1]) }
            guard self.buffer.count >= 5 else { return .needMore }
            let length: Int
            switch self.buffer[3] {
            case 0x01: length = 4 + 4 + 2
            case 0x04: length = 4 + 16 + 2
            case 0x03: length = 4 + 1 + Int(self.buffer[4]) + 2
            default: throw .garbage("the connect reply has an unknown address type \(self.buffer[3])")
            }
            guard self.buffer.count >= length else { return .needMore }
            self.state = .established
            return .established(trailing: self.buffer.count - length)
        }
    }

    /// CONNECT (command 1) to the origin: its name (type 3), or its IPv4 (type 1) or IPv6 (type 4) address.
    func connectRequest() -> [UInt8] {
        var request: [UInt8] = [0x05, 0x01, 0x00]
        if let address = IPAddress(self.host) {
            request.append(address.bytes.count == 4 ? 0x01 : 0x04)
            request += address.bytes
        } else {
            let name = Array(self.host.utf8.prefix(255))
            request.append(0x03)
            request.append(UInt8(name.count))
            request += name
        }
        request += [UInt8(truncatingIfNeeded: self.port >> 8), UInt8(truncatingIfNeeded: self.port)]
        return request
    }

    /// The RFC 1929 request: version 1, the user name and the password, each after its length. Write it into memory
    /// that is not kept (the proxy connection's outbound buffer).
    static func authenticationRequest(
        username: UnsafeRawBufferPointer,
        password: UnsafeRawBufferPointer,
        into write: (UnsafeRawBufferPointer) -> Void
    ) {
        withUnsafeBytes(of: UInt8(0x01)) { write($0) }
        withUnsafeBytes(of: UInt8(username.count)) { write($0) }
        write(username)
        withUnsafeBytes(of: UInt8(password.count)) { write($0) }
        write(password)
    }
}
