#!/usr/bin/env python3
"""Regenerates the table of docs/collectives.md "Comparison: one 64 MiB all-reduce".

One all-reduce of 64 MiB (f32[16777216]) over all devices, 50e9 B/s links,
500 ns hops, one device per chip, wraparound: podsim's step time at fast and
full fidelity for each algorithm and network, the closed form of the
algorithm (docs/collectives.md "Closed forms"), and the wall time of the
whole `podsim run` process (best of --repeat). Prints markdown rows.

    scripts/collectives_table.py [--podsim build/cli/podsim] [--max-devices 1024] [--repeat 3]
"""
import argparse
import json
import math
import os
import subprocess
import tempfile
import time

V = 64 * 2**20  # bytes
W = 50e9        # bytes/s per link direction
H = 0.5e-6      # s per hop

HLO = """HloModule ar, num_partitions={n}
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
ENTRY e {{
  p = f32[16777216] parameter(0)
  ROOT ar = f32[16777216] all-reduce(p), channel_id=1, replica_groups=[1,{n}]<=[{n}], use_global_device_ids=true, to_apply=add
}}
"""

HW = """base: tpuv4
ici:
  pod_dims: [{dims}]
  pod_wraparound: [{wrap}]
  link_bandwidth: 50.0e9
  link_efficiency: 1.0
  hop_latency_s: 0.5e-6
"""


def ring(n, o=0.0):
    return 2 * (n - 1) * (V / (n * W) + H + o)


def bidirectional_ring(n, o=0.0):
    return 2 * ((n - 1) / n * V / (2 * W) + (n // 2) * (H + o))


def per_dim(dims, one_dim):
    total, v = 0.0, V
    for d in dims:
        total += one_dim(d, v)
        v /= d
    return 2 * total


def torus(dims, o=0.0):
    return per_dim(dims, lambda d, v: (d - 1) / d * v / (2 * W) + (d // 2) * (H + o))


def ring_per_dim(dims, o=0.0):
    return per_dim(dims, lambda d, v: (d - 1) / d * v / W + (d - 1) * (H + o))


def flattened_ring(dims):
    n = math.prod(dims)
    return 2 * (n - 1) * (V / (n * W) + 2 * H)


def torus_pipelined(dims, chunks, o=0.0):
    """Slots of the chunked per-dim pipeline (docs/collectives.md torus_pipelined)."""
    stages, v = [], V
    for j, d in enumerate(dims):
        stages.append((j, (d - 1) / (2 * d) * v / (chunks * W), (d // 2) * (H + o)))
        v /= d
    stages = stages + stages[::-1]
    total = 0.0
    for slot in range(chunks + len(stages) - 1):
        busy, latency = {}, 0.0
        for s, (dim, b, lat) in enumerate(stages):
            if 0 <= slot - s < chunks:
                busy[dim] = busy.get(dim, 0.0) + b
                latency = max(latency, lat)
        total += max(busy.values()) + latency
    return total


def networks(max_devices):
    rows = []
    for n, side, cube in [(16, 4, None), (64, 8, 4), (256, 16, None), (512, None, 8), (1024, 32, None),
                          (4096, 64, 16)]:
        if n > max_devices:
            continue
        if n != 512:
            rows.append((n, [n], f"ring {n}", "ring", 1, 0.0, ring(n)))
            rows.append((n, [n], f"ring {n}", "bidirectional_ring", 1, 0.0, bidirectional_ring(n)))
            sq = [side, side]
            net = f"{side}x{side}"
            rows.append((n, sq, net, "ring (flattened)", 1, 0.0, flattened_ring(sq)))
            rows.append((n, sq, net, "torus", 1, 0.0, torus(sq)))
            rows.append((n, sq, net, "ring_per_dim", 1, 0.0, ring_per_dim(sq)))
            rows.append((n, sq, net, "ring_per_dim, o = 2.5 us", 1, 2.5e-6, ring_per_dim(sq, 2.5e-6)))
            rows.append((n, sq, net, "torus_pipelined C=3", 3, 0.0, torus_pipelined(sq, 3)))
            rows.append((n, sq, net, "torus_pipelined C=8", 8, 0.0, torus_pipelined(sq, 8)))
        if cube:
            c3 = [cube] * 3
            net = "x".join(str(c) for c in c3)
            rows.append((n, c3, net, "torus", 1, 0.0, torus(c3)))
            rows.append((n, c3, net, "torus_pipelined C=3", 3, 0.0, torus_pipelined(c3, 3)))
    return rows


def algorithm_name(label):
    if label.startswith("ring (flattened)"):
        return "ring"
    return label.split(",")[0].split(" ")[0]


def run(podsim, hlo, hw, algorithm, chunks, overhead, fidelity, repeat):
    best, step = math.inf, None
    for _ in range(repeat):
        start = time.monotonic()
        out = subprocess.run(
            [podsim, "run", hlo, "--hardware", hw, "--format", "json", "--fidelity", fidelity,
             "--set", f"hardware.ici.collective_algorithm={algorithm}",
             "--set", f"hardware.ici.collective_chunks={chunks}",
             "--set", f"hardware.ici.ring_step_overhead_s={overhead}"],
            check=True, capture_output=True, text=True).stdout
        best = min(best, time.monotonic() - start)
        step = json.loads(out)["step_time_s"]
    return step, best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--podsim", default=os.path.join(os.path.dirname(__file__), "..", "build", "cli", "podsim"))
    parser.add_argument("--max-devices", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| devices | network | algorithm | podsim fast (ms) | podsim full (ms) | closed form (ms) "
          "| wall fast (s) | wall full (s) |")
    print("|--------:|---------|-----------|-----------------:|-----------------:|-----------------:"
          "|--------------:|--------------:|")
    with tempfile.TemporaryDirectory() as tmp:
        for n, dims, net, label, chunks, overhead, closed in networks(args.max_devices):
            hlo = os.path.join(tmp, f"ar{n}.hlo")
            with open(hlo, "w") as f:
                f.write(HLO.format(n=n))
            hw = os.path.join(tmp, "hw.yaml")
            with open(hw, "w") as f:
                f.write(HW.format(dims=", ".join(map(str, dims)), wrap=", ".join(["true"] * len(dims))))
            algorithm = algorithm_name(label)
            fast, wall_fast = run(args.podsim, hlo, hw, algorithm, chunks, overhead, "fast", args.repeat)
            full, wall_full = run(args.podsim, hlo, hw, algorithm, chunks, overhead, "full",
                                  1 if n >= 4096 else args.repeat)
            print(f"| {n} | {net} | {label} | {fast * 1e3:.4f} | {full * 1e3:.4f} | {closed * 1e3:.4f} "
                  f"| {wall_fast:.3f} | {wall_full:.3f} |", flush=True)


if __name__ == "__main__":
    main()
