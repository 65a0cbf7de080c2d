#!/usr/bin/env python3
"""Compare podsim's sharding propagation with the shardings XLA's propagation
tests expect.

The expectations are the table of docs/conformance/xla-propagation.md (test,
instruction, XLA's expected sharding; "NONE" = no sharding, which XLA's
partitioner reads as replicated). The modules are those of a corpus of XLA's
test modules (CORPUS/propagation/<test>.hlo, CORPUS/index.tsv with each test's
ShardingPropagation(...) arguments), kept outside this repository. Each module
runs `podsim partition MODULE --propagate-only` with XLA's options as flags
(--is-spmd, --allow-spmd-sharding-propagation-to-output / -to-parameters; an
option the test leaves out gets XLA's default, false); --no-options runs
without them (podsim's defaults: SPMD, propagation into parameters and root).

Equality is semantic (same tile dims, same device per tile, same devices in
each replication group). When the corpus has the runner run.py, its sharding
parser is used so both agree on what "the same" means.

Usage: scripts/xla_propagation_compare.py --corpus DIR [--podsim build/cli/podsim]
         [--table docs/conformance/xla-propagation.md] [--only SUBSTR] [--no-options]
         [--markdown] [--jobs N]
"""
import argparse
import concurrent.futures
import csv
import importlib.util
import os
import re
import subprocess
import sys
import tempfile


def read_expectations(table_path):
    """-> [(test, line, instruction, expected)] from the doc's table rows."""
    rows = []
    row_re = re.compile(r"^\|\s*\d+\s*\|\s*([\w.\-]+)\s*\((\d+)\)\s*\|[^|]*\|\s*([\w.\-]+)\s*\|\s*(`[^`]*`|NONE)\s*\|")
    for line in open(table_path):
        m = row_re.match(line)
        if m:
            rows.append((m.group(1), m.group(2), m.group(3), m.group(4).strip("`")))
    return rows


def option_flags(args):
    """ShardingPropagation(...) arguments -> podsim flags (XLA's defaults when absent)."""
    flags = []
    if re.search(r"is_spmd=\*/false", args):
        flags.append("--is-spmd=false")
    for side in ("output", "parameters"):
        m = re.search(r"allow_spmd_sharding_propagation_to_%s=\*/\{([^}]*)\}" % side, args)
        if m:
            flags.append("--allow-spmd-sharding-propagation-to-%s=%s" % (side, m.group(1).replace(" ", "")))
        elif side == "output" and re.search(r"\{GetParam\(\)\.allow_root_sharding_propagation\}", args):
            pass  # the test checks this under both values
        else:
            flags.append("--allow-spmd-sharding-propagation-to-%s=false" % side)
    return flags


def load_runner(corpus):
    path = os.path.join(corpus, "run.py")
    if not os.path.exists(path):
        sys.exit(f"{path}: not found (the corpus runner supplies the sharding parser)")
    spec = importlib.util.spec_from_file_location("corpus_runner", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_test(podsim, corpus, test, args, use_options, outdir):
    module = os.path.join(corpus, "propagation", test + ".hlo")
    out = os.path.join(outdir, test + ".out.hlo")
    cmd = [podsim, "partition", module, "--propagate-only", "-o", out]
    if use_options:
        cmd += option_flags(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        return cmd, None, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[0]
    return cmd, open(out).read(), ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True, help="directory with index.tsv and propagation/*.hlo")
    ap.add_argument("--podsim", default="build/cli/podsim")
    ap.add_argument("--table", default=os.path.join(os.path.dirname(__file__), "..", "docs", "conformance",
                                                      "xla-propagation.md"))
    ap.add_argument("--only", default="")
    ap.add_argument("--no-options", action="store_true", help="run without XLA's options")
    ap.add_argument("--markdown", action="store_true", help="print the per-check table as markdown")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--tsv", default="", help="also write every check (test, instruction, expected, podsim, verdict, "
                                              "annotated_in_input, flags) to this file")
    a = ap.parse_args()
    runner = load_runner(a.corpus)
    with open(os.path.join(a.corpus, "index.tsv")) as f:
        index = {r["test"]: r for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)}
    checks = [c for c in read_expectations(a.table) if a.only in c[0]]
    tests = sorted({c[0] for c in checks})
    outdir = tempfile.mkdtemp(prefix="podsim-xla-compare-")
    results = {}
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        futs = {pool.submit(run_test, a.podsim, a.corpus, t, index.get(t, {}).get("propagation_args", ""),
                            not a.no_options, outdir): t for t in tests}
        for fut in concurrent.futures.as_completed(futs):
            results[futs[fut]] = fut.result()
    agree = 0
    lines = []
    per_test = {}
    for test, line, instr, expected in checks:
        cmd, text, err = results[test]
        if text is None:
            verdict, got = "error: " + err, ""
        else:
            got = runner.extract_shardings(text).get(instr) or "(none)"
            exp = "{replicated}" if expected == "NONE" else expected
            try:
                same = got != "(none)" and runner.same_sharding(runner.parse_sharding(exp),
                                                                 runner.parse_sharding(got))
            except ValueError as e:
                same = False
                got += f" (unparsed: {e})"
            verdict = "agree" if same else "disagree"
        agree += verdict == "agree"
        per_test.setdefault(test, []).append(verdict == "agree")
        source = open(os.path.join(a.corpus, "propagation", test + ".hlo")).read()
        annotated = runner.extract_shardings(source).get(instr) is not None
        lines.append((test, line, instr, expected, got, verdict, " ".join(cmd[6:]), annotated))
    if a.markdown:
        print("| test (line) | instruction | XLA expects | podsim | verdict | flags |")
        print("|---|---|---|---|---|---|")
        for test, line, instr, expected, got, verdict, flags, _ in lines:
            exp = expected if expected == "NONE" else f"`{expected}`"
            print(f"| {test} ({line}) | {instr} | {exp} | `{got}` | {verdict} | {flags} |")
    else:
        for test, line, instr, expected, got, verdict, flags, _ in lines:
            if verdict != "agree":
                print(f"{verdict}\t{test}\t{instr}\texpected {expected}\tpodsim {got}\t{flags}")
    if a.tsv:
        with open(a.tsv, "w") as f:
            f.write("test\tline\tinstruction\texpected\tpodsim\tverdict\tflags\tannotated_in_input\n")
            for row in lines:
                f.write("\t".join(str(x) for x in row) + "\n")
    unannotated = [row for row in lines if not row[7]]
    print(f"on instructions the input leaves unannotated: {len(unannotated)} compared, "
          f"{sum(1 for row in unannotated if row[5] == 'agree')} agree")
    tests_ok = sum(1 for v in per_test.values() if all(v))
    print(f"checks: {len(checks)} compared, {agree} agree ({100.0 * agree / max(1, len(checks)):.1f}%); "
          f"tests: {len(per_test)}, {tests_ok} all agree"
          + (" [without XLA's options]" if a.no_options else ""))


if __name__ == "__main__":
    main()
