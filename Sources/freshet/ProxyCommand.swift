import ArgumentParser
import Foundation

struct ProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy", abstract: "A caching reverse proxy: any HTTP tool gets Freshet's cache.")

    @Option(help: "The origin to forward to, e.g. https://api.github.com.")
    var origin: String

    @Option(help: "Where to listen, HOST:PORT (port 0 picks one).")
    var listen = "127.0.0.1:8080"

    func run() async throws { try notImplemented("proxy") }
}
