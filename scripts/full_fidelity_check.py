#!/usr/bin/env python3
"""Checks full fidelity's shortcuts: steady-state loops and symmetry classes.

For each workload: `podsim run W --fidelity full` (loops counted once the
whole machine repeats, one device simulated per symmetry class) against
`--fidelity full --no-symmetry` (every device, the symmetry classes' reference)
and `--fidelity full --every-iteration --no-symmetry` (every iteration on every
device, the loops' reference), plus `--fidelity fast` for the wall-time ratio.
Prints the markdown table of docs/simulator.md "Full fidelity at pod scale";
exits 1 when the class run's step time differs from the per-device run's by
more than 1e-9 relative, or a step time from every-iteration by more than
0.1 % (or at all where nothing was extrapolated). Wall times and peak RSS
from /usr/bin/time -v.

    scripts/full_fidelity_check.py [--podsim build/cli/podsim] [--no-reference W ...] W.yaml ...

--no-reference names workloads whose every-iteration run is too long to repeat
(the default 1T workload: 23 minutes, 2 GB); their reference column is empty.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

TOLERANCE = 1e-3
SYMMETRY_TOLERANCE = 1e-9


def run(podsim, workload, *flags):
    """One podsim run: (report dict, wall seconds, peak RSS in MB)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = ["/usr/bin/time", "-v", podsim, "run", workload, "--format", "json", "--timings",
               "-o", out.name, *flags]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
        with open(out.name, encoding="utf-8") as f:
            report = json.load(f)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", proc.stderr).group(1)
    seconds = 0.0
    for part in wall.split(":"):
        seconds = seconds * 60 + float(part)
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    return report, seconds, rss_kb / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--podsim", default="build/cli/podsim")
    parser.add_argument("--no-reference", nargs="*", default=[])
    parser.add_argument("workloads", nargs="+")
    args = parser.parse_args()
    print("| workload | devices | full, every iteration (s) | full, per device (s) | full (s) "
          "| difference: every iteration, per device | classes | loops counted "
          "| wall fast / full / per device / every iteration (s) | full / fast "
          "| peak RSS full / per device (MB) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    failed = False
    for workload in args.workloads:
        name = os.path.splitext(os.path.basename(workload))[0]
        fast, fast_wall, _ = run(args.podsim, workload, "--fidelity", "fast")
        full, full_wall, full_rss = run(args.podsim, workload, "--fidelity", "full")
        per, per_wall, per_rss = run(args.podsim, workload, "--fidelity", "full", "--no-symmetry")
        note = full.get("approximation_note", "")
        loops = re.search(r"(\d+) loop\(s\) of ([\d, ]+) iterations simulated for their first (\d+)",
                          note)
        counted = f"{loops.group(1)} of {loops.group(2)} (first {loops.group(3)})" if loops else "none"
        classes = re.search(r"in (\d+) symmetry class", full.get("simulated_devices", ""))
        classes = classes.group(1) if classes else "per device"
        step = full["step_time_s"]
        rel_sym = abs(step - per["step_time_s"]) / per["step_time_s"]
        difference_sym = f"{rel_sym:.2g}"
        if rel_sym > SYMMETRY_TOLERANCE:
            failed = True
            difference_sym += " (FAIL)"
        reference, every_wall, difference = None, None, "-"
        if name not in args.no_reference and workload not in args.no_reference:
            every, every_wall, _ = run(args.podsim, workload, "--fidelity", "full",
                                       "--every-iteration", "--no-symmetry")
            reference = every["step_time_s"]
            rel = abs(step - reference) / reference
            difference = f"{100 * rel:.2g} %"
            if rel > TOLERANCE or (not loops and per["step_time_s"] != reference):
                failed = True
                difference += " (FAIL)"
        walls = (f"{fast_wall:.2f} / {full_wall:.2f} / {per_wall:.2f} / "
                 + (f"{every_wall:.1f}" if every_wall else "-"))
        print(f"| {name} | {full['devices']} | "
              + (f"{reference:.9g}" if reference is not None else "-")
              + f" | {per['step_time_s']:.9g} | {step:.9g} | {difference}, {difference_sym} "
              f"| {classes} | {counted} | {walls} | {full_wall / fast_wall:.0f} "
              f"| {full_rss:.0f} / {per_rss:.0f} |", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
