// Hugging Face's @huggingface/jinja as the reference for remat's chat templates.
//
//   node chat_reference.cjs NODE_MODULES TOKENIZER_CONFIG CASES OUT
//       CASES is a JSON array of {"messages": [...], "add_generation_prompt": bool}; writes to OUT
//       a JSON array with, for each case, the rendered text (or {"error": message})
"use strict";
const fs = require("fs");
const path = require("path");

const [modules, configPath, casesPath, out] = process.argv.slice(2);
const { Template } = require(path.join(modules, "@huggingface", "jinja"));
const config = JSON.parse(fs.readFileSync(configPath, "utf8"));
// A special token is written either as a string or as {"content": "..."}.
const token = (t) => (typeof t === "string" ? t : t && typeof t.content === "string" ? t.content : "");
const template = new Template(config.chat_template);
const rendered = JSON.parse(fs.readFileSync(casesPath, "utf8")).map((c) => {
  try {
    return template.render({
      messages: c.messages,
      bos_token: token(config.bos_token),
      eos_token: token(config.eos_token),
      add_generation_prompt: c.add_generation_prompt,
    });
  } catch (e) {
    return { error: String(e.message) };
  }
});
fs.writeFileSync(out, JSON.stringify(rendered));
