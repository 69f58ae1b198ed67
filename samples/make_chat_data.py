#!/usr/bin/python3
"""Writes a conversation JSONL file with a realistic spread of lengths, for benchmarking packing.

Each line is {"messages": [user, assistant]} whose text is words drawn from a list of common
English words, each a single GPT-2 token with its leading space, so that an example's length in
tokens follows the drawn length: log-normal with the given median (tokens of both turns
together, before the chat template adds its markers) and shape sigma, at least 8 tokens. The
user turn takes a third of the words. Everything comes from --seed: the same file every run.
The defaults (median 52, sigma 0.6, seed 1, 2000 conversations) rendered with
samples/data/chatml.jinja and GPT-2's tokenizer give examples of median 89 tokens (10th
percentile 61, 90th 148; docs/benchmarks-packing.md).

Usage: make_chat_data.py OUT.jsonl [--examples N] [--median TOKENS] [--sigma S] [--seed S]
"""

import argparse
import json
import math
import random

WORDS = ("the of and to in is that for it as was with be by on not he this are or his from at "
         "which but have an they you were her she there been one all we their has would when "
         "if so no will more can who other out what about up some time into only new like them "
         "could these than then two first any may its now over such our most after made also "
         "did many before must through back years where much your way well down should because "
         "each just those people how too little state good very make world still own see men "
         "work long here get both between life being under never day same another know while "
         "last might us great old year off come since against go came right used take three "
         "house use during without again place around however home small found part thought "
         "went say once general high upon school every does got left number course war until "
         "always away something fact water though less public put think almost hand enough far "
         "took head yet government system better set told nothing night end why called didn "
         "eyes find going look asked later knew point next program city business give group "
         "toward young days let room president side social given present several order national "
         "possible rather second face per among form important often things looked early white "
         "case become large big need four within felt along children saw best church ever least "
         "power development light thing seemed family interest want members mind country area "
         "others done turned although open god service certain kind problem began different "
         "door thus help means sense whole matter perhaps itself york times law human line above "
         "name example action company hands local show whether five history gave today either "
         "act feet across taken past quite anything seen having death week experience body word "
         "half really field am car words already themselves information tell together college "
         "shall money period held keep sure probably free seems real behind cannot miss "
         "political air question office brought whose special heard major problems ago became "
         "federal moment study available known result street economic boy position reason "
         "change south board individual job society areas west close turn love community true "
         "court force full seem am front value").split()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--examples", type=int, default=2000)
    ap.add_argument("--median", type=float, default=52.0)
    ap.add_argument("--sigma", type=float, default=0.6)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    lengths = []
    with open(args.out, "w") as f:
        for _ in range(args.examples):
            n = max(8, int(round(rng.lognormvariate(math.log(args.median), args.sigma))))
            words = [rng.choice(WORDS) for _ in range(n)]
            # The words are joined with spaces: " word" is one GPT-2 token each.
            user = " ".join(words[: n // 3]).capitalize() + "?"
            assistant = " ".join(words[n // 3:]).capitalize() + "."
            f.write(json.dumps({"messages": [{"role": "user", "content": user},
                                             {"role": "assistant", "content": assistant}]}) + "\n")
            lengths.append(n)
    lengths.sort()
    print(f"{args.out}: {len(lengths)} conversations, words per conversation median "
          f"{lengths[len(lengths) // 2]}, 10th percentile {lengths[len(lengths) // 10]}, 90th "
          f"{lengths[9 * len(lengths) // 10]}, max {lengths[-1]}")


if __name__ == "__main__":
    main()
