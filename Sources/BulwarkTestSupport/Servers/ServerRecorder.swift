import BulwarkPolicy
import NIOCore

/// What a test server saw, updated from its event loops and read from tests.
final class ServerRecorder: Sendable {
    private struct State {
        var acceptedConnections = 0
        var lastConnectionID = 0
        var handshakes: [RecordedHandshake] = []
        var receivedApplicationBytes = 0
        var requests: [RecordedRequest] = []
        var http2HeaderIndexing: [[(name: String, neverIndexed: Bool)]] = []
        var http2ClientSettings: [[UInt16: UInt32]] = []
        var openChannels: [Int: any Channel] = [:]
        var isShuttingDown = false
    }

    private let state = LockedValue(State())
    private let recordsRequests: Bool

    init(recordsRequests: Bool = true) {
        self.recordsRequests = recordsRequests
    }

    var acceptedConnections: Int { self.state.withLock { $0.acceptedConnections } }
    var handshakes: [RecordedHandshake] { self.state.withLock { $0.handshakes } }
    var receivedApplicationBytes: Int { self.state.withLock { $0.receivedApplicationBytes } }
    var requests: [RecordedRequest] { self.state.withLock { $0.requests } }
    var openConnections: Int { self.state.withLock { $0.openChannels.count } }
    var http2HeaderIndexing: [[(name: String, neverIndexed: Bool)]] { self.state.withLock { $0.http2HeaderIndexing } }

    var http2ClientSettings: [[UInt16: UInt32]] { self.state.withLock { $0.http2ClientSettings } }

    func http2ClientSettingsReceived(_ settings: [UInt16: UInt32]) {
        self.state.withLock { $0.http2ClientSettings.append(settings) }
    }

    func http2HeadersReceived(_ fields: [(name: String, neverIndexed: Bool)]) {
        guard self.recordsRequests else { return }
        self.state.withLock { $0.http2HeaderIndexing.append(fields) }
    }

    /// Registers a freshly accepted connection; returns its ID (1, 2, …), or nil while shutting down.
    func connectionAccepted(_ channel: any Channel) -> Int? {
        let id: Int? = self.state.withLock { state in
            guard !state.isShuttingDown else { return nil }
            state.acceptedConnections += 1
            state.lastConnectionID += 1
            let id = state.lastConnectionID
            state.openChannels[id] = channel
            return id
        }
        if let id {
            channel.closeFuture.whenComplete { _ in
                self.state.withLock { _ = $0.openChannels.removeValue(forKey: id) }
            }
        }
        return id
    }

    func handshakeCompleted(_ handshake: RecordedHandshake) {
        self.state.withLock { $0.handshakes.append(handshake) }
    }

    func applicationBytesReceived(_ count: Int) {
        self.state.withLock { $0.receivedApplicationBytes += count }
    }

    func requestReceived(_ request: @autoclosure () -> RecordedRequest) {
        guard self.recordsRequests else { return }
        let request = request()
        self.state.withLock { $0.requests.append(request) }
    }

    /// Clears the counters and logs. Open connections stay tracked and connection IDs keep counting up.
    func reset() {
        self.state.withLock { state in
            state.acceptedConnections = 0
            state.handshakes = []
            state.receivedApplicationBytes = 0
            state.requests = []
        }
    }

    /// Stops accepting new connections and returns those still open.
    func beginShutdown() -> [any Channel] {
        self.state.withLock { state in
            state.isShuttingDown = true
            return Array(state.openChannels.values)
        }
    }
}
