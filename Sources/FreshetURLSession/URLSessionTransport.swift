import Freshet
import FreshetTransports
import OpenAPIRuntime
import OpenAPIURLSession

extension Transports {
    /// URLSession as the transport (Foundation's networking; on Linux, FoundationNetworking), with
    /// its networking errors classified as `TransportFailure`s like the other transports'.
    ///
    /// URLSession decodes gzip on its own: leave `DecompressionMiddleware` out of a chain over it
    /// (`APIClient.live(baseURL:transport:decompressing: false)`).
    public static func urlSession() -> any ClientTransport {
        ClassifyingTransport(base: URLSessionTransport())
    }
}
