# SPDX-License-Identifier: MIT
"""What the seed generators share: writing a target's corpus folder."""
import os
import sys


def write_corpus(target, seeds):
    """Replace tests/fuzz/corpus/TARGET/ with the (name, bytes) pairs of SEEDS."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(here, "corpus", target)
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        os.remove(os.path.join(out, name))
    n = 0
    for name, data in seeds:
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        n += 1
    print(f"wrote {n} seeds to {out}", file=sys.stderr)
