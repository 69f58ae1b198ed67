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
#                            [--add-token TEXT]...
#   gguf_tokenizer_writer.py OUT.gguf --arch ARCH --pre NAME --gpt2 DIR
#   gguf_tokenizer_writer.py OUT.gguf --arch ARCH --spm-hf DIR [--no-space-prefix]
#   gguf_tokenizer_writer.py OUT.gguf --arch ARCH --spm-model DIR [--vocab-size N]
#                            [--no-space-prefix]
#
# --add-token TEXT (repeatable) adds a token to the tokenizer's added tokens, not special, with the
# next id past them, as tokenizers' add_tokens does; the converter makes it user-defined unless it
# looks special. --hf DIR holds tokenizer.json and tokenizer_config.json; --gpt2 DIR holds OpenAI's encoder.json
# and vocab.bpe, whose <|endoftext|> Hugging Face's GPT-2 adds as a special token and names bos
# and eos (config.json).
#
# SentencePiece vocabularies (tokenizer.ggml.model "llama") from a SentencePiece conversion's
# tokenizer.json (BPE with byte_fallback):
#   --spm-hf: as gguf-py's LlamaHfVocab writes it (convert_hf_to_gguf.py's _set_vocab_llama_hf, the
#     converter's way for a folder without tokenizer.model): every score -1000, <0xXX> tokens
#     byte, the tokenizer's special tokens (bos, eos, unk, pad and the named extras) control, the
#     rest normal;
#   --spm-model: as _create_vocab_sentencepiece writes it from the folder's tokenizer.model, which
#     the packages do not ship: pieces and ids are tokenizer.json's, each piece's score is minus the
#     rank of the first merge that makes it (Hugging Face's converter lists the merges in the order
#     of the scores of the pieces they make, so the order of merges is the model's; pieces no merge
#     makes score below all of them), <unk> unknown, <0xXX> byte, then tokenizer_config.json's
#     added_tokens_decoder as the converter applies it (control when special or looking special,
#     else user-defined with "▁" as a space; score -1000) and ids up to --vocab-size unused
#     [PADn] tokens scoring -10000.
# --no-space-prefix writes tokenizer.ggml.add_space_prefix false, as Gemma 3's converter does.
import argparse
import json
import os
import re
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


def spm_hf_vocab(tokenizer, config):
    # LlamaHfVocab.all_tokens: the model's tokens, then the added tokens past them.
    vocab = dict(tokenizer["model"]["vocab"])
    base = len(vocab)
    added = {a["content"]: a["id"] for a in tokenizer.get("added_tokens", [])}
    vocab.update(added)
    # all_special_tokens: the named special tokens of tokenizer_config.json.
    named = [config.get(k) for k in ("bos_token", "eos_token", "unk_token", "pad_token")]
    named += list(config.get("extra_special_tokens", {}).values())
    named += config.get("additional_special_tokens", [])
    named = [n["content"] if isinstance(n, dict) else n for n in named if n]
    special_ids = {vocab[n] for n in named if n in vocab}
    reverse = {i: t for t, i in vocab.items()}
    tokens, scores, types = [], [], []
    for i in range(base):
        text = reverse[i]
        tokens.append(text)
        scores.append(-1000.0)
        if re.fullmatch(r"<0x[0-9A-Fa-f]{2}>", text):
            types.append(gguf.TokenType.BYTE)
        else:
            types.append(gguf.TokenType.CONTROL if i in special_ids else gguf.TokenType.NORMAL)
    for text, i in sorted(added.items(), key=lambda x: x[1]):
        if i < base:
            continue
        tokens.append(text)
        scores.append(-1000.0)
        types.append(gguf.TokenType.CONTROL if i in special_ids else gguf.TokenType.USER_DEFINED)
    return tokens, scores, types


def spm_model_vocab(tokenizer, config, vocab_size):
    model = tokenizer["model"]
    vocab = model["vocab"]
    rank = {}
    for r, m in enumerate(model["merges"]):
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        rank.setdefault(a + b, r)
    size = vocab_size or max(vocab.values()) + 1
    tokens = [f"[PAD{i}]" for i in range(size)]
    scores = [-10000.0] * size
    types = [gguf.TokenType.UNUSED] * size
    for text, i in vocab.items():
        if i >= size:
            continue
        tokens[i] = text
        if text == model.get("unk_token"):
            types[i], scores[i] = gguf.TokenType.UNKNOWN, 0.0
        elif re.fullmatch(r"<0x[0-9A-F]{2}>", text):
            types[i], scores[i] = gguf.TokenType.BYTE, 0.0
        else:
            types[i] = gguf.TokenType.NORMAL
            scores[i] = -float(rank[text]) if text in rank else -float(len(rank) + i)
    for key, data in config.get("added_tokens_decoder", {}).items():
        i, text = int(key), data["content"]
        if i >= size:
            continue
        if data.get("special") or does_token_look_special(text):
            types[i] = gguf.TokenType.CONTROL
        else:
            text = text.replace("\u2581", " ")
            types[i] = gguf.TokenType.USER_DEFINED
        scores[i] = -1000.0
        tokens[i] = text
    return tokens, scores, types


def write_spm(a):
    with open(os.path.join(a.folder, "tokenizer.json"), encoding="utf-8") as f:
        tokenizer = json.load(f)
    with open(os.path.join(a.folder, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    if a.spm_hf:
        tokens, scores, types = spm_hf_vocab(tokenizer, config)
    else:
        tokens, scores, types = spm_model_vocab(tokenizer, config, a.vocab_size)
    w = gguf.GGUFWriter(a.out, a.arch)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    gguf.SpecialVocab(a.folder, n_vocab=len(tokens)).add_to_gguf(w, quiet=True)
    if a.no_space_prefix:
        w.add_add_space_prefix(False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--arch", required=True)
    p.add_argument("--pre")
    p.add_argument("--hf")
    p.add_argument("--gpt2")
    p.add_argument("--spm-hf")
    p.add_argument("--spm-model")
    p.add_argument("--no-space-prefix", action="store_true")
    p.add_argument("--vocab-size", type=int)
    p.add_argument("--add-token", action="append", default=[])
    a = p.parse_args()
    if a.spm_hf or a.spm_model:
        a.folder = a.spm_hf or a.spm_model
        write_spm(a)
        return

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
        for text in a.add_token:
            added.append({"content": text, "id": max(vocab.values()) + 1, "special": False})
            vocab[text] = added[-1]["id"]
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
