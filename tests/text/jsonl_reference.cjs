// An independent computation of the token ids and loss masks of a fine-tuning JSONL file
// (text/chat_examples.h states the rules), with Hugging Face's tokenizers.js and
// @huggingface/jinja.
//
//   node jsonl_reference.cjs NODE_MODULES TOKENIZER CONFIG TEMPLATE JSONL OUT
//       TOKENIZER: a tokenizer.json, or a folder with GPT-2's encoder.json and vocab.bpe;
//       CONFIG: a tokenizer_config.json (bos_token, eos_token, chat_template) or "";
//       TEMPLATE: a Jinja file that replaces the chat template, or "".
//       Writes to OUT one JSON line per example: {"ids": [...], "mask": [...]}, or
//       {"error": "..."} when the rules refuse it.
"use strict";
const fs = require("fs");
const path = require("path");

const [modules, tokenizerPath, configPath, templatePath, jsonlPath, out] = process.argv.slice(2);
const { Tokenizer } = require(path.join(modules, "@huggingface", "tokenizers"));
const { Template } = require(path.join(modules, "@huggingface", "jinja"));

// GPT-2's files as the tokenizer.json Hugging Face publishes for GPT-2.
function gpt2TokenizerJson(folder) {
  const vocab = JSON.parse(fs.readFileSync(path.join(folder, "encoder.json"), "utf8"));
  const merges = fs
    .readFileSync(path.join(folder, "vocab.bpe"), "utf8")
    .split("\n")
    .filter((l) => l.length && !l.startsWith("#version"));
  const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true };
  return {
    version: "1.0",
    added_tokens: [
      { id: 50256, content: "<|endoftext|>", single_word: false, lstrip: false, rstrip: false,
        normalized: true, special: true },
    ],
    normalizer: null,
    pre_tokenizer: byteLevel,
    post_processor: byteLevel,
    decoder: byteLevel,
    model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "",
             end_of_word_suffix: "", fuse_unk: false, byte_fallback: false, vocab, merges },
  };
}

const gpt2 = fs.statSync(tokenizerPath).isDirectory();
const tokenizerJson = gpt2 ? gpt2TokenizerJson(tokenizerPath)
                           : JSON.parse(fs.readFileSync(tokenizerPath, "utf8"));
const config = configPath ? JSON.parse(fs.readFileSync(configPath, "utf8")) : {};
const tokenizer = new Tokenizer(tokenizerJson, config);
const added = new Set(tokenizerJson.added_tokens.map((t) => t.id));

const token = (t) => (typeof t === "string" ? t : t && typeof t.content === "string" ? t.content : "");
const bos = configPath ? token(config.bos_token) : "<|endoftext|>";
const eos = configPath ? token(config.eos_token) : "<|endoftext|>";
const source = templatePath ? fs.readFileSync(templatePath, "utf8") : config.chat_template;
const template = source ? new Template(source) : null;

const render = (messages, add_generation_prompt) =>
  template.render({ messages, bos_token: bos, eos_token: eos, add_generation_prompt });

// Byte length of each token: an added token is its content; any other token is spelled in
// GPT-2's byte alphabet, one character per byte.
function byteLengths(tokens, ids) {
  return ids.map((id, i) => (added.has(id) ? Buffer.byteLength(tokens[i]) : [...tokens[i]].length));
}

function starts(tokens, ids) {
  const lengths = byteLengths(tokens, ids);
  let at = 0;
  return lengths.map((n) => ((at += n), at - n));
}

function eosId() {
  if (!eos) throw new Error("no eos token");
  const { ids } = tokenizer.encode(eos, { add_special_tokens: false });
  if (ids.length !== 1 || !added.has(ids[0])) throw new Error("eos is not a special token");
  return ids[0];
}

function text(t) {
  const { ids } = tokenizer.encode(t);
  return { ids: [...ids, eosId()], mask: [...ids, 0].map(() => 1) };
}

// The post-processor's tokens are found by locating the plain encoding inside the full one.
function promptCompletion(prompt, completion) {
  const full = tokenizer.encode(prompt + completion).ids;
  const plain = tokenizer.encode(prompt + completion, { add_special_tokens: false });
  let offset = 0;
  while (plain.ids.some((id, i) => full[offset + i] !== id)) ++offset;
  const s = starts(plain.tokens, plain.ids);
  let first = s.findIndex((b) => b >= Buffer.byteLength(prompt));
  if (first < 0) first = plain.ids.length;
  const ids = [...full, eosId()];
  return { ids, mask: ids.map((_, i) => (i < offset + first ? 0 : 1)) };
}

function conversation(messages) {
  if (!template) throw new Error("needs a chat template");
  const whole = render(messages, false);
  const spans = [];
  messages.forEach((m, i) => {
    if (m.role !== "assistant") return;
    const before = render(messages.slice(0, i), true);
    const through = render(messages.slice(0, i + 1), false);
    if (!through.startsWith(before) || !whole.startsWith(through))
      throw new Error(`messages[${i}] is not located by the template`);
    spans.push([Buffer.byteLength(before), Buffer.byteLength(through)]);
  });
  const enc = tokenizer.encode(whole, { add_special_tokens: false });
  const mask = starts(enc.tokens, enc.ids).map((b) => (spans.some(([s, e]) => b >= s && b < e) ? 1 : 0));
  return { ids: enc.ids, mask };
}

function example(line) {
  const o = JSON.parse(line);
  if (o.messages) return conversation(o.messages);
  if (o.prompt !== undefined) {
    if (!template) return promptCompletion(o.prompt, o.completion);
    return conversation([{ role: "user", content: o.prompt }, { role: "assistant", content: o.completion }]);
  }
  return text(o.text);
}

const lines = fs.readFileSync(jsonlPath, "utf8").split("\n").filter((l) => l.trim().length);
const results = lines.map((line) => {
  try {
    return JSON.stringify(example(line));
  } catch (e) {
    return JSON.stringify({ error: String(e.message) });
  }
});
fs.writeFileSync(out, results.join("\n") + "\n");
