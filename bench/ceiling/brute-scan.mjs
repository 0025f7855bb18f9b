// The ceiling of an exact vector search: N random unit vectors of DIMS float32s in one
// Float32Array, in memory, and a plain loop of dot products keeping the best K, per query. No
// storage, no paging, no framework: what a scan costs on this machine. Run as a process of its
// own by bench/search.ts; prints {p50_ms, p99_ms} as JSON on its last line.
// Usage: node brute-scan.mjs N DIMS QUERIES K
const [n, dims, queries, k] = process.argv.slice(2).map(Number);

let seed = 42;
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const unit = (v) => {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i] * v[i];
  const inv = 1 / Math.sqrt(s);
  for (let i = 0; i < v.length; i++) v[i] *= inv;
  return v;
};

const all = new Float32Array(n * dims);
for (let r = 0; r < n; r++)
  unit(all.subarray(r * dims, (r + 1) * dims).map(() => random() - 0.5)).forEach((x, i) => {
    all[r * dims + i] = x;
  });

function search(q) {
  const best = [];
  for (let r = 0; r < n; r++) {
    let s = 0;
    const o = r * dims;
    for (let i = 0; i < dims; i++) s += q[i] * all[o + i];
    if (best.length === k && s <= best[k - 1].s) continue;
    let j = best.length;
    while (j > 0 && best[j - 1].s < s) j--;
    best.splice(j, 0, { r, s });
    if (best.length > k) best.pop();
  }
  return best;
}

const times = [];
for (let i = 0; i < queries + 2; i++) {
  const q = unit(new Float32Array(dims).map(() => random() - 0.5));
  const t0 = process.hrtime.bigint();
  search(q);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (i >= 2) times.push(ms); // two warm-up queries
}
times.sort((a, b) => a - b);
const pick = (p) => times[Math.min(times.length - 1, Math.ceil((p / 100) * times.length) - 1)];
console.log(JSON.stringify({ p50_ms: pick(50), p99_ms: pick(99) }));
