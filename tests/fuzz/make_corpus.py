#!/usr/bin/env python3
"""Writes the seed corpus of tests/fuzz/corpus/: for each operation of fuzz_api.c one input
leaning on it (half its steps that operation), on 1 to 4 threads, in one or two waves, plus a
few mixed ones.  Deterministic; run it again only to regenerate the seeds (the corpus also
keeps what `make fuzz` found)."""
import os
import random

OPS = ["malloc", "calloc", "realloc_up", "realloc_down", "realloc_zero", "reallocarray",
       "posix_memalign", "aligned_alloc", "memalign", "valloc", "free", "free_sized", "usable",
       "collect", "handoff_put", "handoff_take", "overflow", "fork"]


def program(rng, lean, nthreads, waves, steps=300):
    out = [(nthreads - 1) | ((waves - 1) << 4)]
    for _ in range(steps):
        op = lean if lean is not None and rng.random() < 0.5 else rng.randrange(len(OPS))
        out.append(op)
        out.append(rng.randrange(48))
        # operands: the next bytes are read as the operation needs them
        out += [rng.randrange(256) for _ in range(rng.randint(3, 6))]
        if OPS[op] == "fork":
            out.append(0x5A)
    return bytes(out)


def main():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(here, exist_ok=True)
    rng = random.Random(15)
    for i, name in enumerate(OPS):
        data = program(rng, i, 1 + i % 4, 1 + i % 2)
        with open(os.path.join(here, "seed-%02d-%s" % (i, name)), "wb") as f:
            f.write(data)
    for j in range(4):
        with open(os.path.join(here, "seed-mixed-%d" % j), "wb") as f:
            f.write(program(rng, None, 1 + j, 2, steps=600))


if __name__ == "__main__":
    main()
