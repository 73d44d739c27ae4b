import BulwarkPolicy
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes an HTTP proxy's `Basic` token into the request heads of a plain-HTTP connection through that proxy, below
/// the HTTP encoder, so the token never passes through a `String`.
///
/// A request head carries ``marker`` as the `Proxy-Authorization` value's token (see
/// ``RequestExecutor/absoluteFormHead(method:headers:target:proxy:)``); this handler finds the whole header line,
/// `\r\nproxy-authorization: Basic MARKER\r\n`, in the encoded bytes and writes the token from the credentials'
/// bytes in place of the marker. Only that line matches: the exchange handler refuses a head with CR or LF in its
/// target or in a field's value (`HTTP1RequestHeadCheck`), so no URL and no other header can hold it, and the marker is
/// random for each process, so no body can hold it by chance.
/// Every other byte passes untouched.
final class ProxyAuthorizationWriter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    /// The header's name, as the heads carry it (the encoder writes names as given).
    static let headerName = "proxy-authorization"

    /// What a request head carries in place of the token: 32 random hexadecimal digits, the same for the process.
    static let marker: String = {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let digits = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }.joined()
    }()

    /// The header line as the encoder writes it, with the CR LF that ends the line before it.
    private static let line = Array("\r\n\(headerName): Basic \(marker)\r\n".utf8)
    /// Where the marker starts in ``line``.
    private static let markerStart = line.count - 2 - marker.utf8.count

    let credentials: ProxyCredentials

    init(credentials: ProxyCredentials) {
        self.credentials = credentials
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(let buffer) = self.unwrapOutboundIn(data), let found = Self.lineOffset(in: buffer) else {
            context.write(data, promise: promise)
            return
        }
        let at = found + Self.markerStart
        let tokenLength = (self.credentials.withBasicBytes { 4 * (($0.count + 2) / 3) }) ?? 0
        // Sized exactly: a buffer that grows leaves a copy of what it held behind.
        var out = context.channel.allocator.buffer(
            capacity: buffer.readableBytes - Self.marker.utf8.count + tokenLength
        )
        let view = buffer.readableBytesView
        out.writeBytes(view[view.startIndex..<(view.startIndex + at)])
        _ = self.credentials.withBasicBytes { Base64Writer.write($0, into: &out) }
        out.writeBytes(view[(view.startIndex + at + Self.marker.utf8.count)...])
        context.write(self.wrapOutboundOut(.byteBuffer(out)), promise: promise)
    }

    /// The offset of the header line in `buffer`'s readable bytes, if it is there.
    static func lineOffset(in buffer: ByteBuffer) -> Int? {
        buffer.withUnsafeReadableBytes { bytes -> Int? in
            guard let base = bytes.baseAddress, bytes.count >= Self.line.count else { return nil }
            return Self.line.withUnsafeBytes { line -> Int? in
                var offset = 0
                let last = bytes.count - line.count
                // memchr for the CR, memcmp for the rest: memory speed over a large body.
                while offset <= last, let found = memchr(base + offset, 0x0D, last - offset + 1) {
                    let at = base.distance(to: UnsafeRawPointer(found))
                    if memcmp(found, line.baseAddress!, line.count) == 0 { return at }
                    offset = at + 1
                }
                return nil
            }
        }
    }
}
