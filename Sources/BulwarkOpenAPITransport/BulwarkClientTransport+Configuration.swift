import Bulwark
import NIOCore

extension BulwarkClientTransport {
    /// What a transport sends through, and its time limit; as `AsyncHTTPClientTransport.Configuration`.
    public struct Configuration: Sendable {
        /// The client every request goes through. Share it with the rest of the application: it pools connections.
        /// The transport never shuts it down.
        public var client: BulwarkClient
        /// The time limit of each exchange, from the first connection attempt to the end of the response body,
        /// redirects included (Bulwark's `deadline`); one minute by default, as in `AsyncHTTPClientTransport`.
        public var timeout: TimeAmount
        /// The longest request body gathered in memory before it is sent, when the body can be iterated more than
        /// once and its length is known: such a body can be sent again after a 307 or 308 redirect and on a retry
        /// after a stale keep-alive connection closed. A longer body, or one that can be iterated only once, is
        /// streamed. 256 KiB by default; 0 streams every body.
        public var maximumBufferedRequestBodySize: Int = 256 * 1024

        /// A configuration sending through `client`, each exchange limited to `timeout`.
        public init(client: BulwarkClient, timeout: TimeAmount = .minutes(1)) {
            self.client = client
            self.timeout = timeout
        }
    }
}
