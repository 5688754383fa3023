import HTTPTypes
import Hummingbird

/// What a route answers with.
typealias SimHandler = @Sendable (Request, SimRequestContext) async throws -> Response

/// Registers a controller's routes on a Hummingbird `Router`, keeping next to each registration
/// what `/_sim/routes` says about it (the methods it names and a hint: query parameters, body, …).
///
/// The list itself comes from the router (``list()`` reads `Router.routes`); the notes only add
/// the human-readable part.
final class SimRoutes {
    /// The router being built.
    let router: Router<SimRequestContext>
    /// Per path (`RouterPath.description`): what the list says about it.
    private(set) var notes: [String: Note] = [:]

    /// The methods the list names for a path, and the hint written after it.
    struct Note {
        var methods: [HTTPRequest.Method] = []
        var hint = ""
    }

    /// Every method a route registered for "any method" answers.
    static let anyMethod: [HTTPRequest.Method] = [.get, .head, .post, .put, .delete, .patch, .options, .trace, .connect]

    init(_ router: Router<SimRequestContext> = Router(context: SimRequestContext.self)) {
        self.router = router
    }

    /// `GET`, and `HEAD` answered the same way (the head middleware drops the body).
    func get(_ path: RouterPath, _ hint: String = "", use handler: @escaping SimHandler) {
        on(path, methods: [.get, .head], hint, use: handler)
    }

    /// Every method in ``anyMethod``.
    func any(_ path: RouterPath, _ hint: String = "", use handler: @escaping SimHandler) {
        on(path, methods: Self.anyMethod, hint, use: handler)
    }

    /// `methods` at `path`, listed as such.
    func on(_ path: RouterPath, methods: [HTTPRequest.Method], _ hint: String = "", use handler: @escaping SimHandler) {
        for method in methods {
            router.on(path, method: method, use: handler)
        }
        notes[path.description, default: Note()].methods += methods
        if !hint.isEmpty { notes[path.description]?.hint = hint }
    }

    /// Answers with `handler` what the routes registered so far leave unanswered in the subtrees
    /// of `paths`: each of `methods` (default: any) not yet registered, at each of `paths`, at
    /// each path between them and the root, and at each registered path (and the paths between
    /// it and the root) that starts with the same first component.
    ///
    /// Hummingbird's trie does not fall back from a path that matches a node without a route
    /// (`/repos/a` when only `/repos/{owner}/{repo}` is registered) to a wildcard, and it refuses a
    /// `**` next to a capture, so the fallback has to name those nodes. The methods added to an
    /// existing path are not listed; a path that only the fallback answers is listed with `hint`.
    func otherwise(
        _ paths: [RouterPath], methods: [HTTPRequest.Method] = SimRoutes.anyMethod, _ hint: String,
        use handler: @escaping SimHandler
    ) {
        let roots = Set(paths.compactMap { $0.components.first?.description })
        var targets: [String] = []
        func add(_ description: String) {
            // The path and every path between it and the root.
            let components = description.split(separator: "/").map(String.init)
            for n in 1...max(components.count, 1) {
                let prefix = "/" + components.prefix(n).joined(separator: "/")
                if !targets.contains(prefix) { targets.append(prefix) }
            }
        }
        for description in notes.keys.sorted() {
            if let first = description.split(separator: "/").first, roots.contains(String(first)) { add(description) }
        }
        for path in paths { add(path.description) }
        let registered = Set(router.routes.map { "\($0.method.rawValue) \($0.path.description)" })
        for target in targets {
            let path = RouterPath(target)
            let missing = methods.filter { !registered.contains("\($0.rawValue) \(path.description)") }
            guard !missing.isEmpty else { continue }
            for method in missing {
                router.on(path, method: method, use: handler)
            }
            if notes[path.description] == nil { notes[path.description] = Note(methods: [], hint: hint) }
        }
    }

    /// One line per path of the router, in the router's order: the methods (`ANY` for all of
    /// ``anyMethod``; `HEAD` left out where `GET` is there), the path, the hint.
    func list() -> [String] {
        var order: [String] = []
        var methods: [String: [HTTPRequest.Method]] = [:]
        for route in router.routes {
            let path = route.path.description
            if methods[path] == nil { order.append(path) }
            methods[path, default: []].append(route.method)
        }
        return order.map { path in
            let note = notes[path] ?? Note()
            let named = note.methods.isEmpty ? methods[path] ?? [] : note.methods
            return "\(Self.describe(named)) \(path)\(note.hint)"
        }
    }

    /// `GET|DELETE`, `ANY`, …
    static func describe(_ methods: [HTTPRequest.Method]) -> String {
        if Set(anyMethod).isSubset(of: methods) { return "ANY" }
        var shown: [HTTPRequest.Method] = []
        for method in methods where !shown.contains(method) && !(method == .head && methods.contains(.get)) {
            shown.append(method)
        }
        return shown.map(\.rawValue).joined(separator: "|")
    }
}
