#!/usr/bin/env python3
"""A notebook-style what-if from Python: one workload at 8 ICI link rates on 3
TPU generations, one compile per generation, a matplotlib plot of step time.

  PYTHONPATH=build/python python3 python/what_if_plot.py docs/img/python_what_if.svg

(README "From Python / JAX" shows the plot; `make readme` regenerates it.)"""

import sys

import matplotlib

matplotlib.use("Agg")  # no display: write the file
import matplotlib.pyplot as plt  # noqa: E402

import podsim  # noqa: E402

WORKLOAD = "workloads/examples/transformer_layer_2d.hlo"
GENERATIONS = ["tpuv3", "tpuv4", "tpuv5p"]
SCALES = [0.125, 0.25, 0.5, 1, 2, 4, 8, 16]  # times the preset's ICI link rate


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
        step_ms = [compiled.simulate({"hardware.ici.link_bandwidth": r}).step_time_s * 1e3
                   for r in rates]
        ax.plot([r / 1e9 for r in rates], step_ms, marker="o", label=preset)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ICI link rate per direction (GB/s)")
    ax.set_ylabel("step time (ms)")
    ax.set_title("transformer_layer_2d.hlo, 8 devices: step time against link rate")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    # A fixed hash salt keeps the SVG's ids, so an unchanged plot is unchanged bytes.
    plt.rcParams["svg.hashsalt"] = "podsim"
    fig.savefig(out, metadata={"Date": None})
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "python_what_if.svg")
