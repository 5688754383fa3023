#!/usr/bin/env node
// HN fan-out peer: Node.js global fetch (undici, keep-alive), the same bounded fan-out as
// `freshet hn --limit N --concurrency C`.
//
//   node hn_fetch.mjs --base http://127.0.0.1:PORT/v0 [--limit 500] [--concurrency 32]
//
// GETs BASE/topstories.json, then BASE/item/{id}.json for the first LIMIT ids with at most
// CONCURRENCY in flight (CONCURRENCY workers taking the next index), decodes every item as JSON
// and keeps the list's order. Prints one JSON line: {"client":"node-fetch","stories":N,"errors":E,
// "seconds":S} where S is the fan-out alone. Bounded: 30 s per request, 300 s in all.
const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, value, i, all) => (i % 2 === 0 ? [...pairs, [value.replace(/^--/, ''), all[i + 1]]] : pairs), []),
);
const base = args.base;
const limit = Number(args.limit ?? 500);
const concurrency = Number(args.concurrency ?? 32);
if (!base) { console.error('usage: hn_fetch.mjs --base URL [--limit N] [--concurrency C]'); process.exit(1); }
setTimeout(() => { console.error('hn_fetch.mjs: gave up after 300 s'); process.exit(3); }, 300_000).unref();

const start = performance.now();
const list = await fetch(`${base}/topstories.json`, { signal: AbortSignal.timeout(30_000) });
if (!list.ok) throw new Error(`topstories: HTTP ${list.status}`);
const ids = (await list.json()).slice(0, limit);
const items = new Array(ids.length).fill(null);
let next = 0;
let errors = 0;
async function worker() {
  while (next < ids.length) {
    const i = next++;
    try {
      const response = await fetch(`${base}/item/${ids[i]}.json`, { signal: AbortSignal.timeout(30_000) });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      items[i] = await response.json();
    } catch {
      errors += 1;
    }
  }
}
await Promise.all(Array.from({ length: Math.min(concurrency, ids.length) }, worker));
const seconds = (performance.now() - start) / 1000;
console.log(JSON.stringify({ client: 'node-fetch', stories: items.filter(Boolean).length, errors, seconds: Number(seconds.toFixed(4)) }));
process.exit(errors === 0 ? 0 : 2);
