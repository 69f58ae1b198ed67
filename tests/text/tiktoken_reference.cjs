// tiktoken (OpenAI's tokenizer, Rust compiled to WASM) as the reference for remat's GPT-2 encoder.
//
//   node tiktoken_reference.cjs NODE_MODULES encode LIST   for each path in LIST (one per line),
//       writes PATH.tiktoken (special tokens allowed) and PATH.tiktoken-ordinary (special tokens as
//       text): token ids separated by spaces
//   node tiktoken_reference.cjs NODE_MODULES bench FILE...  prints encode MB/s over the files
//
// tiktoken encodes JavaScript strings, which cannot hold invalid UTF-8. remat's contract for such
// bytes (text/pre_tokenizer.h): each maximal valid run encodes as it would alone, and each maximal
// run of invalid bytes is one piece merged by BPE. Here valid runs go to tiktoken; invalid runs
// are merged with tiktoken's ranks by the rule tiktoken itself uses (lowest-ranked adjacent pair
// first, leftmost on ties).
"use strict";
const fs = require("fs");
const path = require("path");

const [modules, mode, ...rest] = process.argv.slice(2);
const { get_encoding } = require(path.join(modules, "tiktoken"));
const enc = get_encoding("gpt2");

// Length of the valid UTF-8 character at buf[i] (RFC 3629: no overlongs, surrogates or code
// points past U+10FFFF), or 0.
function charLength(buf, i) {
  const b = buf[i];
  const len = b < 0x80 ? 1 : (b >> 5) === 6 ? 2 : (b >> 4) === 14 ? 3 : (b >> 3) === 30 ? 4 : 0;
  if (len === 0 || i + len > buf.length) return 0;
  let c = len === 1 ? b : len === 2 ? b & 0x1f : len === 3 ? b & 0x0f : b & 0x07;
  for (let k = 1; k < len; k++) {
    if ((buf[i + k] & 0xc0) !== 0x80) return 0;
    c = (c << 6) | (buf[i + k] & 0x3f);
  }
  const min = [0, 0, 0x80, 0x800, 0x10000][len];
  if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
  return len;
}

// [{valid, bytes}] covering buf in order.
function runs(buf) {
  const out = [];
  let start = 0, valid = true;
  for (let i = 0; i < buf.length;) {
    const len = charLength(buf, i);
    const v = len > 0;
    if (i > start && v !== valid) {
      out.push({ valid, bytes: buf.subarray(start, i) });
      start = i;
    }
    valid = v;
    i += v ? len : 1;
  }
  if (buf.length > start) out.push({ valid, bytes: buf.subarray(start) });
  return out;
}

// tiktoken's ranks by byte string (latin1 keys). Looked up here rather than by catching
// encode_single_token's error for non-tokens, which leaves the WASM object borrowed.
let ranks = null;
function rank(bytes) {
  if (!ranks) {
    ranks = new Map();
    for (const t of enc.token_byte_values()) {
      const b = Uint8Array.from(t);
      ranks.set(Buffer.from(b).toString("latin1"), enc.encode_single_token(b));
    }
  }
  const r = ranks.get(Buffer.from(bytes).toString("latin1"));
  return r === undefined ? Infinity : r;
}

function mergeBytes(bytes) {
  let parts = Array.from(bytes, (b) => Uint8Array.of(b));
  for (;;) {
    let best = Infinity, at = -1;
    for (let i = 0; i + 1 < parts.length; i++) {
      const r = rank(Buffer.concat([parts[i], parts[i + 1]]));
      if (r < best) { best = r; at = i; }
    }
    if (at < 0) break;
    parts.splice(at, 2, Buffer.concat([parts[at], parts[at + 1]]));
  }
  return parts.map((p) => rank(p));
}

function encode(buf, specials) {
  const ids = [];
  for (const run of runs(buf)) {
    if (!run.valid) { ids.push(...mergeBytes(run.bytes)); continue; }
    const text = Buffer.from(run.bytes).toString("utf8");
    ids.push(...(specials ? enc.encode(text, "all") : enc.encode_ordinary(text)));
  }
  return ids;
}

if (mode === "encode") {
  for (const file of fs.readFileSync(rest[0], "utf8").split("\n").filter((l) => l.length)) {
    const buf = fs.readFileSync(file);
    fs.writeFileSync(file + ".tiktoken", encode(buf, true).join(" "));
    fs.writeFileSync(file + ".tiktoken-ordinary", encode(buf, false).join(" "));
  }
} else if (mode === "bench") {
  const texts = rest.map((f) => fs.readFileSync(f, "utf8"));
  const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
  let best = Infinity, tokens = 0;
  for (let rep = 0; rep < 5; rep++) {
    const t0 = process.hrtime.bigint();
    tokens = 0;
    for (const t of texts) tokens += enc.encode_ordinary(t).length;
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  console.log(`tiktoken ${bytes} bytes ${tokens} tokens ${(bytes / best / 1e6).toFixed(2)} MB/s`);
} else {
  console.error("usage: node tiktoken_reference.cjs NODE_MODULES encode LIST | bench FILE...");
  process.exit(2);
}
enc.free();
