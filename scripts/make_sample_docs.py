"""Make configs/data/docs.jsonl: real English paragraphs with planted near-duplicates.

The paragraphs are docstrings of Python standard-library modules (PSF
licence), so the sample is real prose without a download. Some documents get
near-duplicate copies (a few words replaced, a sentence dropped or moved,
casing and spacing changed) and a few exact copies; ``docs_truth.csv``
lists the planted pairs. Run once; the output is committed:

    python scripts/make_sample_docs.py
"""

from __future__ import annotations

import csv
import importlib
import inspect
import json
import random
import re
from pathlib import Path

MODULES = [
    "argparse",
    "asyncio",
    "base64",
    "bisect",
    "calendar",
    "collections",
    "contextlib",
    "copy",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "email",
    "enum",
    "fractions",
    "functools",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http.client",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "logging",
    "mimetypes",
    "numbers",
    "operator",
    "os",
    "pathlib",
    "pickle",
    "pprint",
    "queue",
    "random",
    "re",
    "sched",
    "secrets",
    "shlex",
    "shutil",
    "socket",
    "sqlite3",
    "statistics",
    "string",
    "struct",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "timeit",
    "tokenize",
    "traceback",
    "typing",
    "unittest",
    "urllib.parse",
    "uuid",
    "warnings",
    "weakref",
    "xml.dom",
    "zipfile",
]


def paragraphs() -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for name in MODULES:
        mod = importlib.import_module(name)
        docs = [inspect.getdoc(mod) or ""]
        for _, obj in sorted(vars(mod).items()):
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and getattr(obj, "__module__", "") == mod.__name__:
                docs.append(inspect.getdoc(obj) or "")
        for doc in docs:
            for para in re.split(r"\n\s*\n", doc):
                text = " ".join(para.split())
                if 250 <= len(text) <= 1500 and text not in seen and ">>>" not in text:
                    seen.add(text)
                    out.append(text)
    return out


def near_copy(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    for _ in range(max(1, len(words) // 40)):
        i = rng.randrange(len(words))
        words[i] = rng.choice(["the", "a", "this", "that", "it", "value", "data", "object"])
    out = " ".join(words)
    if rng.random() < 0.5:
        out = out.upper() if rng.random() < 0.1 else out.replace(". ", ".  ", 3)
    return out


def main() -> None:
    rng = random.Random(7)
    paras = paragraphs()
    rng.shuffle(paras)
    base = paras[:220]
    docs: list[tuple[str, str]] = []
    truth: list[tuple[str, str]] = []
    for i, text in enumerate(base):
        docs.append((f"doc{i:04d}", text))
    n = len(docs)
    for j in range(40):  # near-duplicates
        src_id, src = docs[j]
        new_id = f"doc{n + j:04d}"
        docs.append((new_id, near_copy(src, rng)))
        truth.append((src_id, new_id))
    for j in range(40, 50):  # exact copies (after whitespace/case normalization)
        src_id, src = docs[j]
        new_id = f"doc{n + j:04d}"
        docs.append((new_id, "  " + src.lower() + " "))
        truth.append((src_id, new_id))
    rng.shuffle(docs)
    out = Path(__file__).resolve().parent.parent / "configs" / "data"
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "docs.jsonl", "w", encoding="utf-8") as f:
        for doc_id, text in docs:
            f.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")
    with open(out / "docs_truth.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["left_id", "right_id"])
        w.writerows(sorted(truth))
    print(f"{len(docs)} documents, {len(truth)} planted pairs -> {out}")


if __name__ == "__main__":
    main()
