// scripts/cache-tests-shim.mjs — loaded with `node --import` into the processes of the HTTP
// caching test suite (http-tests/cache-tests) by scripts/cache-tests; nothing of the suite is
// changed on disk. It does two things:
//
// 1. With CACHE_TESTS_LISTEN_HOST set (the suite's origin server), a `listen(port)` without a
//    host binds that host: the suite's server.mjs calls `server.listen(port)`, which would bind
//    every interface.
// 2. With CACHE_TESTS_UNDICI=adapter (the client), `import('undici')` — which the suite does
//    only for the `interim-*` tests, to see 1xx responses — resolves to the suite's own undici
//    when it is installed, and otherwise to this module, whose `Agent` is the undici that Node 20
//    bundles for its global fetch (6.x) behind an adapter: the suite's interceptor speaks the
//    undici 7 handler API (onRequestStart/onResponseStart/...), undici 6 the older one
//    (onConnect/onHeaders/...). Undici 6 hands 1xx responses to `onHeaders` like undici 7 hands
//    them to `onResponseStart`. Without CACHE_TESTS_UNDICI the import fails as it does on a
//    plain Node without the suite's npm dependencies, and those tests are reported "not run".

import net from 'node:net'
import { register } from 'node:module'

const asUndici = new URL(import.meta.url).searchParams.has('undici')

if (!asUndici) {
  const host = process.env.CACHE_TESTS_LISTEN_HOST
  if (host) {
    const listen = net.Server.prototype.listen
    net.Server.prototype.listen = function (...args) {
      if ((typeof args[0] === 'number' || typeof args[0] === 'string') && typeof args[1] !== 'string') {
        args.splice(1, 0, host)
      }
      return listen.apply(this, args)
    }
  }
  if (process.env.CACHE_TESTS_UNDICI === 'adapter') {
    const hooks = `
      let shim
      export async function initialize (data) { shim = data.shim }
      export async function resolve (specifier, context, next) {
        if (specifier !== 'undici') return next(specifier, context)
        try {
          return await next(specifier, context)
        } catch (err) {
          if (err.code !== 'ERR_MODULE_NOT_FOUND') throw err
          return { url: shim, shortCircuit: true }
        }
      }`
    const shim = new URL(import.meta.url)
    shim.search = '?undici'
    register('data:text/javascript,' + encodeURIComponent(hooks), {
      parentURL: import.meta.url,
      data: { shim: shim.href }
    })
  }
}

// --- the `undici` stand-in -------------------------------------------------------------------

function bundledAgentClass () {
  void globalThis.Response // loads Node's bundled undici, which installs its global dispatcher
  const dispatcher = globalThis[Symbol.for('undici.globalDispatcher.1')]
  if (!dispatcher) throw new Error('cache-tests-shim: Node has no bundled undici dispatcher')
  return dispatcher.constructor
}

function headersObject (raw) {
  const out = {}
  if (!raw) return out
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i].toString('latin1').toLowerCase()
    const value = raw[i + 1].toString('latin1')
    if (name in out) {
      out[name] = Array.isArray(out[name]) ? [...out[name], value] : [out[name], value]
    } else {
      out[name] = value
    }
  }
  return out
}

function rawHeaders (obj) {
  const out = []
  for (const [name, value] of Object.entries(obj || {})) {
    for (const v of Array.isArray(value) ? value : [value]) out.push(Buffer.from(name, 'latin1'), Buffer.from(String(v), 'latin1'))
  }
  return out
}

// An undici 7 handler seen through the undici 6 interface (what the bundled Agent calls).
function toOldHandler (handler) {
  let abortFn = null
  let resumeFn = null
  const controller = {
    aborted: false,
    paused: false,
    reason: null,
    abort (reason) { this.aborted = true; this.reason = reason; abortFn?.(reason) },
    pause () { this.paused = true },
    resume () { if (this.paused) { this.paused = false; resumeFn?.() } }
  }
  return {
    onConnect (abort, context) { abortFn = abort; handler.onRequestStart?.(controller, context) },
    onUpgrade (statusCode, headers, socket) { handler.onRequestUpgrade?.(controller, statusCode, headersObject(headers), socket) },
    onHeaders (statusCode, headers, resume, statusText) {
      resumeFn = resume
      handler.onResponseStart?.(controller, statusCode, headersObject(headers), statusText)
      return !controller.paused
    },
    onData (chunk) { handler.onResponseData?.(controller, chunk); return !controller.paused },
    onComplete (trailers) { handler.onResponseEnd?.(controller, headersObject(trailers)) },
    onError (err) { handler.onResponseError?.(controller, err) }
  }
}

// An undici 6 handler (the one fetch passes to its dispatcher) seen through the undici 7 interface.
function toNewHandler (handler) {
  return {
    onRequestStart (controller, context) { handler.onConnect?.(reason => controller.abort(reason), context) },
    onRequestUpgrade (controller, statusCode, headers, socket) { handler.onUpgrade?.(statusCode, rawHeaders(headers), socket) },
    onResponseStart (controller, statusCode, headers, statusMessage) {
      if (handler.onHeaders?.(statusCode, rawHeaders(headers), () => controller.resume(), statusMessage) === false) controller.pause()
    },
    onResponseData (controller, chunk) { if (handler.onData?.(chunk) === false) controller.pause() },
    onResponseEnd (controller, trailers) { handler.onComplete?.(rawHeaders(trailers)) },
    onResponseError (controller, err) { handler.onError?.(err) }
  }
}

export class Agent {
  #agent
  constructor (options) {
    const BundledAgent = bundledAgentClass()
    this.#agent = new BundledAgent(options)
  }

  // Interceptors written for undici 7: (dispatch(opts, handler7)) => dispatch(opts, handler7)
  compose (...args) {
    const interceptors = Array.isArray(args[0]) ? args[0] : args
    return this.#agent.compose(dispatch6 => {
      let dispatch7 = (opts, handler) => dispatch6(opts, toOldHandler(handler))
      for (const interceptor of interceptors) if (interceptor != null) dispatch7 = interceptor(dispatch7)
      return (opts, handler) => dispatch7(opts, toNewHandler(handler))
    })
  }

  dispatch (opts, handler) { return this.#agent.dispatch(opts, handler) }
  close () { return this.#agent.close() }
  destroy (err) { return this.#agent.destroy(err) }
}
