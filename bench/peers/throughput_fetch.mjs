#!/usr/bin/env node
// Client-throughput peer: Node.js global fetch (undici's global agent, keep-alive).
//
//   node throughput_fetch.mjs --url URL [--requests 20000] [--concurrency 32] [--warmup W]
//
// Same shape as freshet-bench-client: W untimed warm-up GETs (default 2×C), then N timed GETs,
// request i to URL&n=i so none are identical, at most C in flight (C workers). Prints one JSON
// line: {"mode":"node-fetch","requests":N,"ok":…,"errors":…,"seconds":…,"rps":…}.
// Bounded: 30 s per request, 300 s in all.
const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, value, i, all) => (i % 2 === 0 ? [...pairs, [value.replace(/^--/, ''), all[i + 1]]] : pairs), []),
);
const url = args.url;
const requests = Number(args.requests ?? 20000);
const concurrency = Number(args.concurrency ?? 32);
const warmup = args.warmup !== undefined ? Number(args.warmup) : 2 * concurrency;
if (!url) { console.error('usage: throughput_fetch.mjs --url URL [--requests N] [--concurrency C] [--warmup W]'); process.exit(1); }
setTimeout(() => { console.error('throughput_fetch.mjs: gave up after 300 s'); process.exit(3); }, 300_000).unref();
const separator = url.includes('?') ? '&' : '?';

async function run(first, count) {
  let next = 0;
  let failures = 0;
  async function worker() {
    while (next < count) {
      const i = next++;
      try {
        const response = await fetch(`${url}${separator}n=${first + i}`, {
          headers: { Accept: 'application/json' }, signal: AbortSignal.timeout(30_000),
        });
        const body = await response.arrayBuffer();
        if (response.status !== 200 || body.byteLength === 0) failures += 1;
      } catch {
        failures += 1;
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return failures;
}

const warmupErrors = await run(1_000_000_000, warmup);
const start = performance.now();
const errors = await run(0, requests);
const seconds = (performance.now() - start) / 1000;
console.log(JSON.stringify({
  mode: 'node-fetch', requests, ok: requests - errors, errors, warmupErrors,
  seconds: Number(seconds.toFixed(4)), rps: Number((requests / seconds).toFixed(1)),
}));
process.exit(errors === 0 && warmupErrors === 0 ? 0 : 2);
