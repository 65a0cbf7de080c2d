#!/usr/bin/env python3
"""A notebook-style what-if from Python: MaxText 22B (128 devices) at 8 ICI link
rates on 3 TPU generations, one compile per generation, a matplotlib plot of
step time.

  PYTHONPATH=build/python python3 scripts/python_what_if.py docs/img/python_what_if.svg

(README "From Python / JAX" shows the plot; `make readme` regenerates it.)"""

import sys

import matplotlib

matplotlib.use("Agg")  # no display: write the file
import matplotlib.pyplot as plt  # noqa: E402

import podsim  # noqa: E402

WORKLOAD = "workloads/maxtext_22b_v4_128.yaml"
GENERATIONS = ["tpuv4", "tpuv5p", "tpu7x"]
SCALES = [0.125, 0.25, 0.5, 0.75, 1, 1.5, 2, 4]  # times the preset's ICI link rate


def link_rate(preset):
    """The preset's ici.link_bandwidth (B/s), read from `hardware show`."""
    for line in podsim.hardware.show(preset).splitlines():
        words = line.split()
        if words[:1] == ["ici.link_bandwidth"]:
            return float(words[1])
    raise ValueError(f"{preset}: no ici.link_bandwidth")


def main(out):
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for preset in GENERATIONS:
        compiled = podsim.compile(WORKLOAD, hardware=preset)  # one compile per generation
        base = link_rate(preset)
        rates = [base * s for s in SCALES]
        step_s = [compiled.simulate({"hardware.ici.link_bandwidth": r}).step_time_s
                  for r in rates]
        ax.plot([r / 1e9 for r in rates], step_s, marker="o", label=preset)
    ax.set_xscale("log")
    ax.set_xlabel("ICI link rate per direction (GB/s)")
    ax.set_ylabel("step time (s)")
    ax.set_title("MaxText 22B on 128 devices: step time against ICI link rate")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    # A fixed hash salt keeps the SVG's ids, so an unchanged plot is unchanged bytes.
    plt.rcParams["svg.hashsalt"] = "podsim"
    fig.savefig(out, metadata={"Date": None})
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "python_what_if.svg")
