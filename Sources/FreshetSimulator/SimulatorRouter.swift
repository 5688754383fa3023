import Foundation
import Hummingbird
import NIOCore

/// The simulator's request context: Hummingbird's basic one plus the connection, which a
/// `reset-mid-body` fault needs to send a TCP RST.
struct SimRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection the request came in on.
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// Sends `/_sim/…` control requests (but `/_sim/drip`, `/_sim/bytes` and `/_sim/sse`) to the control router,
/// which has no middleware, and everything else to the API router, whose middleware records,
/// delays and faults each request.
struct SimResponder: HTTPResponder {
    let control: RouterResponder<SimRequestContext>
    let api: RouterResponder<SimRequestContext>

    func respond(to request: Request, context: SimRequestContext) async throws -> Response {
        let responder = Simulator.isControl(request.uri.path) ? control : api
        return try await responder.respond(to: request, context: context)
    }
}

extension Simulator {
    /// Whether `path` is a control endpoint: not recorded, delayed or faulted.
    static func isControl(_ path: String) -> Bool {
        path.hasPrefix("/_sim/") && path != "/_sim/drip" && path != "/_sim/bytes" && path != "/_sim/sse"
    }

    /// The two routers: the control endpoints, and the APIs behind the request log, `HEAD`,
    /// latency, faults, gzip and GitHub's `404` for what no route answers (outermost first).
    func makeRoutes() -> (control: SimRoutes, api: SimRoutes) {
        let control = SimRoutes()
        control.router.add(middleware: NotFoundMiddleware { request, _ in
            let path = request.uri.path
            let known = HTTPSupport.segments(path).count == 2
            return HTTPSupport.controlError(404, "unknown control endpoint \(known ? "\(request.method.rawValue) " : "")\(path)")
        })
        ControlController(simulator: self).addRoutes(to: control)

        let api = SimRoutes()
        let scripted = ScriptedController(simulator: self)
        api.router.add(middleware: RequestLogMiddleware(simulator: self))
        api.router.add(middleware: HeadMiddleware())
        api.router.add(middleware: LatencyMiddleware(simulator: self))
        api.router.add(middleware: FaultMiddleware(simulator: self))
        api.router.add(middleware: CompressionMiddleware())
        api.router.add(middleware: NotFoundMiddleware { [self] request, context in
            // A router answers the methods registered at a path; an extension method (PURGE,
            // M-SEARCH, …) reaches what answers any method: the scripted paths, GitHub's 404.
            if !SimRoutes.anyMethod.contains(request.method) {
                switch HTTPSupport.segments(request.uri.path).first {
                case "scripted": return scripted.scripted(request, context: context)
                case "repos", "users", "search": return gitHubAnswer(request) { _ in .notFound }
                default: break
                }
            }
            return HTTPSupport.json(404, GitHubResponses.notFound)
        })
        GitHubController(simulator: self).addRoutes(to: api)
        AvatarsController(simulator: self).addRoutes(to: api)
        HackerNewsController(simulator: self).addRoutes(to: api)
        KakaoController(simulator: self).addRoutes(to: api)
        scripted.addRoutes(to: api)
        StreamingController(simulator: self).addRoutes(to: api)
        TransfersController(simulator: self).addRoutes(to: api)
        return (control, api)
    }

    /// The responder `run` serves (and in-process tests call).
    func makeResponder() -> SimResponder {
        let (control, api) = makeRoutes()
        return SimResponder(control: control.router.buildResponder(), api: api.router.buildResponder())
    }

    /// The routes the routers of a simulator hold, APIs first (see ``SimRoutes/list()``).
    static func routeList(_ routes: (control: SimRoutes, api: SimRoutes)) -> [String] {
        routes.api.list() + routes.control.list()
    }

    /// A human-readable list of the routes served (also served as JSON by `GET /_sim/routes`),
    /// generated from the routers: methods, path (`{name}` a parameter, `**` anything below) and
    /// what to send.
    public static let routes: [String] = {
        // The routers do not depend on the data; a small world is enough to build them.
        let simulator = Simulator(configuration: SimulatorConfiguration(repos: [], eventsPerRepo: 0, hnStoryCount: 1))
        return routeList(simulator.makeRoutes())
    }()
}
