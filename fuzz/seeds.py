#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/seeds/TARGET/), from
tests/fixtures/ for topology_sysfs. Run from anywhere; it rewrites only
fuzz/seeds/. The seeds are committed; scripts/fuzz.sh reads them and keeps
what libFuzzer finds in a scratch corpus under fuzz/corpus/ (ignored)."""

import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "tests", "fixtures")
SEEDS = os.path.join(HERE, "seeds")

# What src/numa/sysfs.rs reads, below devices/system/.
def wanted(rel):
    parts = rel.split("/")
    if parts[0] == "node":
        return len(parts) == 3 and parts[2] in ("cpulist", "distance")
    if parts[0] == "cpu":
        return rel == "cpu/online" or (
            len(parts) == 5 and parts[2] == "cache"
            and parts[4] in ("level", "type", "shared_cpu_list"))
    return False

def tree_text(root):
    base = os.path.join(root, "devices", "system")
    records = []
    for dirpath, _, files in os.walk(base):
        for f in files:
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, base).replace(os.sep, "/")
            if wanted(rel):
                with open(path, "rb") as fh:
                    records.append((rel, fh.read()))
    # Nodes first, then cpu/online, then the CPUs' caches, numbers in
    # numeric order, so that a cut tree keeps its nodes.
    def key(r):
        rank = 0 if r[0].startswith("node/") else 1 if r[0] == "cpu/online" else 2
        return [rank] + [int(p) if p.isdigit() else p for p in
                         r[0].replace("node", "node/").replace("cpu", "cpu/")
                         .replace("index", "index/").split("/")]
    records.sort(key=key)
    return b"".join(b"@" + rel.encode() + b"\n" + body for rel, body in records)

def main():
    out = os.path.join(SEEDS, "topology_sysfs")
    os.makedirs(out, exist_ok=True)
    for name in sorted(os.listdir(FIXTURES)):
        root = os.path.join(FIXTURES, name)
        if not os.path.isdir(os.path.join(root, "devices")):
            continue
        text = tree_text(root)
        # The largest trees (hundreds of CPUs) are cut to their first
        # records: the fuzzer needs their shape, not all of it.
        if len(text) > 4096:
            text = text[:4096]
            text = text[: text.rfind(b"\n@") + 1]
        with open(os.path.join(out, name), "wb") as fh:
            fh.write(text)
    # The operation-sequence targets decode any bytes (arbitrary): random
    # inputs of a few lengths start them.
    for target, seed in (("slab_model", 15), ("capi_calls", 16)):
        out = os.path.join(SEEDS, target)
        os.makedirs(out, exist_ok=True)
        rng = random.Random(seed)
        for i, n in enumerate([0, 64, 256, 1024]):
            with open(os.path.join(out, f"random-{i}"), "wb") as fh:
                fh.write(bytes(rng.randrange(256) for _ in range(n)))

main()
