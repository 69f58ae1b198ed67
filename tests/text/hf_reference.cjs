// Hugging Face's tokenizers.js as the reference for remat's tokenizer.json loading.
//
//   node hf_reference.cjs NODE_MODULES TOKENIZER_JSON SUFFIX LIST [decode]
//       for each path in LIST (one per line, UTF-8 text), writes PATH.SUFFIX: the token ids
//       separated by spaces (added tokens matched, nothing added around the text); with
//       "decode", also PATH.SUFFIX.text: those ids decoded by the file's decoder (special tokens
//       kept, no clean-up of spaces)
"use strict";
const fs = require("fs");
const path = require("path");

const [modules, tokenizerJson, suffix, list, mode] = process.argv.slice(2);
const { Tokenizer } = require(path.join(modules, "@huggingface", "tokenizers"));
const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(tokenizerJson, "utf8")), {});
for (const file of fs.readFileSync(list, "utf8").split("\n").filter((l) => l.length)) {
  const text = fs.readFileSync(file, "utf8");
  const { ids } = tokenizer.encode(text, { add_special_tokens: false });
  fs.writeFileSync(file + "." + suffix, ids.join(" "));
  if (mode === "decode") {
    // tokenizers.js refuses to decode no ids; nothing decodes to nothing.
    const decoded = ids.length
      ? tokenizer.decode(ids, { clean_up_tokenization_spaces: false })
      : "";
    fs.writeFileSync(file + "." + suffix + ".text", decoded);
  }
}
