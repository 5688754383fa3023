import Foundation
import Freshet
import FreshetTransports
import Testing
import NIOCore

#if os(Linux)
/// The threads of this process NIO named (`NIO-SGLTN-…` for the singleton group, `NIO-ELT-…` for others).
private func eventLoopThreads() -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { task in
        let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
        return name.hasPrefix("NIO-")
    }.count
}

/// Run in a fresh process (an exit test), where nothing else has started NIO yet.
@Test("Making the default transport and a live client starts no event loop; the first use of the client does")
func defaultTransportStartsTheNetworkStackLazily() async {
    await #expect(processExitsWith: .success) {
        let transport = Transports.asyncHTTPClient()
        _ = APIClient.live(baseURL: URL(string: "http://127.0.0.1:9")!)
        _ = transport
        guard eventLoopThreads() == 0 else { exit(1) }
        // The probe sees event loops once they exist.
        _ = HTTPClientTransport(headTimeout: .seconds(1)).client
        guard eventLoopThreads() > 0 else { exit(2) }
        exit(0)
    }
}
#endif
