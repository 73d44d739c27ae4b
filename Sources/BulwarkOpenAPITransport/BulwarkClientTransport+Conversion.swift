import Bulwark
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import OpenAPIRuntime

extension BulwarkClientTransport {
    /// The Bulwark request for an OpenAPI request: the URL is `baseURL` with the request's path (and query) appended,
    /// as `AsyncHTTPClientTransport` makes it; every header field is kept, repeated fields included.
    static func makeRequest(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        maximumBufferedBodySize: Int
    ) async throws -> BulwarkRequest {
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headerFields.count)
        for field in request.headerFields {
            headers.add(name: field.name.canonicalName, value: field.value)
        }
        var bulwarkBody: BulwarkRequest.Body?
        if let body {
            bulwarkBody = try await Self.makeBody(body, maximumBufferedSize: maximumBufferedBodySize)
        }
        return BulwarkRequest(
            url: Self.url(of: request, baseURL: baseURL),
            method: HTTPMethod(rawValue: request.method.rawValue),
            headers: headers,
            body: bulwarkBody
        )
    }

    /// The URL text of `request` against `baseURL`. Text that is not a URL is left to the client, whose request then
    /// fails with `invalidURL`.
    static func url(of request: HTTPRequest, baseURL: URL) -> String {
        let path = request.path ?? ""
        if var base = URLComponents(string: baseURL.absoluteString), let relative = URLComponents(string: path) {
            base.percentEncodedPath += relative.percentEncodedPath
            base.percentEncodedQuery = relative.percentEncodedQuery
            if let text = base.string {
                return text
            }
        }
        return baseURL.absoluteString + path
    }

    /// A body small enough and iterable more than once is gathered (so it can be sent again); any other is streamed
    /// chunk by chunk, with its length when known.
    static func makeBody(_ body: HTTPBody, maximumBufferedSize: Int) async throws -> BulwarkRequest.Body {
        let length: Int?
        switch body.length {
        case .known(let count): length = Int(exactly: count)
        case .unknown: length = nil
        }
        if body.iterationBehavior == .multiple, let length, length <= maximumBufferedSize {
            var buffer = ByteBuffer()
            buffer.reserveCapacity(length)
            for try await chunk in body {
                buffer.writeBytes(chunk)
            }
            return .bytes(buffer)
        }
        return .stream(length: length) { writer in
            for try await chunk in body {
                try await writer.write(ByteBuffer(bytes: chunk))
            }
        }
    }

    /// The OpenAPI response for a Bulwark response: every header field in order (repeated ones, such as
    /// `set-cookie`, each kept), and the body streaming as it arrives; no body for a `HEAD` request.
    static func makeResponse(_ response: BulwarkResponse, method: HTTPRequest.Method) -> (HTTPResponse, HTTPBody?) {
        var fields = HTTPFields()
        fields.reserveCapacity(response.headers.count)
        for header in response.headers {
            guard let name = HTTPField.Name(header.name) else { continue }
            fields.append(HTTPField(name: name, value: header.value))
        }
        let head = HTTPResponse(
            status: HTTPResponse.Status(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase),
            headerFields: fields
        )
        if method == .head {
            return (head, nil)
        }
        // The length is known from `content-length` unless the body is decompressed on its way (the field then
        // counts the compressed bytes).
        let length: HTTPBody.Length =
            if fields[.contentEncoding] == nil, let text = fields[.contentLength], let count = Int64(text) {
                .known(count)
            } else {
                .unknown
            }
        let body = HTTPBody(
            response.body.map { ArraySlice($0.readableBytesView) },
            length: length,
            iterationBehavior: .single
        )
        return (head, body)
    }
}
