#!/usr/bin/env python3
"""podsim.compile(...).simulate(...) over N hardware variants against N `podsim run`
processes of the same variants: the wall-time ratio, measured in one run.

Run from the repository root after building (python/CMakeLists.txt):
  PYTHONPATH=build/python python3 bench/python_simulate_bench.py [--workload W] [-n 100] [--key K]
The variants sweep one hardware key (default hardware.hbm.bandwidth) geometrically
from 1/4x to 4x of the preset's value; each Python report is also checked against
the CLI's JSON. A key the compile options read (the ICI link rate and the peak,
through the windowed-einsum overlap test; the HBM capacity under remat: auto)
compiles each variant again, as `run --serve` does: the ratio then shows the
simulation alone no longer pays the process start and the load."""

import argparse
import math
import os
import subprocess
import sys
import time

import podsim


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="workloads/small.yaml")
    parser.add_argument("-n", type=int, default=100, help="hardware variants")
    parser.add_argument("--key", default="hardware.hbm.bandwidth")
    parser.add_argument("--podsim", default=os.environ.get("PODSIM_BINARY", "build/cli/podsim"))
    args = parser.parse_args()

    base = podsim.run(args.workload).flat()["hardware"]
    key = args.key[len("hardware."):]
    value = float(next(line.split()[1] for line in podsim.hardware.show(base).splitlines()
                       if line.split()[:1] == [key]))
    values = [value * 4 ** (2 * i / max(args.n - 1, 1) - 1) for i in range(args.n)]
    variants = [{args.key: f"{v:.6g}"} for v in values]

    start = time.monotonic()
    compiled = podsim.compile(args.workload)
    mine = [compiled.simulate(v).to_json() for v in variants]
    python_s = time.monotonic() - start

    start = time.monotonic()
    theirs = []
    for v in variants:
        (key, value), = v.items()
        done = subprocess.run([args.podsim, "run", args.workload, "--format", "json",
                               "--set", f"{key}={value}"], capture_output=True, text=True,
                              check=True)
        theirs.append(done.stdout)
    cli_s = time.monotonic() - start

    same = sum(a == b for a, b in zip(mine, theirs))
    print(f"workload {args.workload}, {args.n} variants of {args.key}")
    print(f"python compile once + {args.n} x simulate: {python_s:.2f} s")
    print(f"{args.n} x podsim run (CLI processes):    {cli_s:.2f} s")
    print(f"ratio python / CLI: {python_s / cli_s:.3f}")
    print(f"reports byte-equal to the CLI's JSON: {same} of {args.n}")
    return 0 if same == args.n and not math.isnan(python_s) else 1


if __name__ == "__main__":
    sys.exit(main())
