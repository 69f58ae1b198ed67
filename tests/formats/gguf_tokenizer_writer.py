#!/usr/bin/env python3
# Writes a GGUF file that holds only a tokenizer, as llama.cpp's convert_hf_to_gguf.py writes a
# byte-level BPE model's (_set_vocab_gpt2), with llama.cpp's own gguf-py (build-data/llama.cpp,
# fetched pinned by .ci/fetch-test-data): the tokens and their types as get_vocab_base makes them
# (ids past the tokenizer's up to the model's vocab_size as unused [PADn] tokens; added tokens
# control when special or when they look special, else user-defined; the rest normal), the
# pre-tokenizer name given (convert_hf_to_gguf.py finds it by hashing an encoding, which needs
# transformers), then gguf-py's SpecialVocab: merges, special token ids, add_*_token and the chat
# template from tokenizer.json, tokenizer_config.json and config.json.
#
#   gguf_tokenizer_writer.py OUT.gguf --arch ARCH --pre NAME --hf DIR [--vocab-size N]
#   gguf_tokenizer_writer.py OUT.gguf --arch ARCH --pre NAME --gpt2 DIR
#
# --hf DIR holds tokenizer.json and tokenizer_config.json; --gpt2 DIR holds OpenAI's encoder.json
# and vocab.bpe, whose <|endoftext|> Hugging Face's GPT-2 adds as a special token and names bos
# and eos (config.json).
import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "build-data", "llama.cpp", "gguf-py"))
import gguf  # noqa: E402


def does_token_look_special(text):
    # convert_hf_to_gguf.py's ModelBase.does_token_look_special.
    return (text in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
            or (text.startswith("<|") and text.endswith("|>"))
            or (text.startswith("<\uff5c") and text.endswith("\uff5c>"))
            or (text.startswith("<unused") and text.endswith(">")))


def vocab_base(vocab, added, vocab_size):
    # get_vocab_base: `vocab` maps every token (added ones too) to its id; `added` is the
    # tokenizer's added tokens. Their content is taken as written: encoding and decoding it again,
    # which the converter does for tokens not normalized, gives it back for these tokenizers.
    reverse = {i: t for t, i in vocab.items()}
    by_content = {a["content"]: a for a in added}
    tokens, types = [], []
    for i in range(vocab_size):
        if i not in reverse:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
            continue
        token = reverse[i]
        if token in by_content:
            if by_content[token].get("special") or does_token_look_special(token):
                types.append(gguf.TokenType.CONTROL)
            else:
                token = token.replace("\u2581", " ")
                types.append(gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
        tokens.append(token)
    return tokens, types


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--arch", required=True)
    p.add_argument("--pre", required=True)
    p.add_argument("--hf")
    p.add_argument("--gpt2")
    p.add_argument("--vocab-size", type=int)
    a = p.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        if a.hf:
            folder = a.hf
            with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
                tokenizer = json.load(f)
            added = tokenizer.get("added_tokens", [])
            vocab = dict(tokenizer["model"]["vocab"])
        else:
            # The folder Hugging Face's GPT-2 is: vocab.json, merges.txt, config.json.
            folder = tmp
            with open(os.path.join(a.gpt2, "encoder.json"), encoding="utf-8") as f:
                vocab = json.load(f)
            shutil.copy(os.path.join(a.gpt2, "vocab.bpe"), os.path.join(folder, "merges.txt"))
            end = vocab["<|endoftext|>"]
            with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
                json.dump({"bos_token_id": end, "eos_token_id": end}, f)
            added = [{"content": "<|endoftext|>", "id": end, "special": True}]
        for t in added:
            vocab[t["content"]] = t["id"]
        size = a.vocab_size or max(vocab.values()) + 1
        tokens, types = vocab_base(vocab, added, size)

        w = gguf.GGUFWriter(a.out, a.arch)
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(a.pre)
        w.add_token_list(tokens)
        w.add_token_types(types)
        gguf.SpecialVocab(folder, load_merges=True, n_vocab=len(tokens)).add_to_gguf(w, quiet=True)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.close()


if __name__ == "__main__":
    main()
