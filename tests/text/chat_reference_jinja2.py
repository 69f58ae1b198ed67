"""Jinja2 rendering chat templates the way Hugging Face transformers does (apply_chat_template):
a sandboxed environment with trim_blocks and lstrip_blocks, json.dumps as tojson, and a
raise_exception global.

    python3 chat_reference_jinja2.py TOKENIZER_CONFIG CASES OUT

CASES is a JSON array of {"messages": [...], "add_generation_prompt": bool}; writes to OUT a JSON
array with, for each case, the rendered text. Exits 3 when jinja2 is not installed.
"""
import json
import sys

try:
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.exit(3)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def token(t):
    if isinstance(t, str):
        return t
    return t["content"] if isinstance(t, dict) and isinstance(t.get("content"), str) else ""


def main():
    config_path, cases_path, out = sys.argv[1:4]
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    template = env.from_string(config["chat_template"])
    rendered = [template.render(messages=c["messages"], bos_token=token(config.get("bos_token")),
                                eos_token=token(config.get("eos_token")),
                                add_generation_prompt=c["add_generation_prompt"]) for c in cases]
    with open(out, "w", encoding="utf-8") as f:
        json.dump(rendered, f, ensure_ascii=False)


main()
