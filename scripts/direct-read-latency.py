#!/usr/bin/env python3
"""Mean latency of random O_DIRECT reads from a file, at 1..N reads in flight: what one lookup
that misses every cache costs on this machine's disk, without any engine in the way.

    scripts/direct-read-latency.py FILE [--bytes 4096] [--reads 5000] [--depths 1,2,4]

Each depth runs that many reader processes at once, each reading `--reads` aligned blocks at
random offsets. Give it a file whose blocks are all written (a sparse or preallocated file
answers unwritten blocks without touching the device, far faster than a real read), e.g.
`dd if=/dev/urandom of=F bs=1M count=768 oflag=direct`.
"""
import argparse
import mmap
import multiprocessing
import os
import random
import time


def reader(path, block_bytes, reads, seed, out):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        blocks = os.fstat(fd).st_size // block_bytes
        buf = mmap.mmap(-1, block_bytes)  # page-aligned, as O_DIRECT needs
        rng = random.Random(seed)
        start = time.perf_counter()
        for _ in range(reads):
            os.preadv(fd, [buf], rng.randrange(blocks) * block_bytes)
        out.put((time.perf_counter() - start) / reads)
    finally:
        os.close(fd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--bytes", type=int, default=4096)
    ap.add_argument("--reads", type=int, default=5000)
    ap.add_argument("--depths", default="1,2,4")
    args = ap.parse_args()
    for depth in [int(d) for d in args.depths.split(",")]:
        out = multiprocessing.Queue()
        procs = [
            multiprocessing.Process(target=reader, args=(args.file, args.bytes, args.reads, i, out))
            for i in range(depth)
        ]
        for p in procs:
            p.start()
        means = [out.get() for _ in procs]
        for p in procs:
            p.join()
        mean_us = sum(means) / len(means) * 1e6
        print(f"{depth} in flight: {mean_us:.1f} us per {args.bytes}-byte read, "
              f"{depth / mean_us * 1e6:,.0f} reads/s")


if __name__ == "__main__":
    main()
