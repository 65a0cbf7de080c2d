#!/usr/bin/env bash
# Runs each libFuzzer target for a bounded time on a scratch corpus seeded
# from the repo's own files (the repo is never written). Usage:
#   scripts/run-fuzzers.sh BUILD_DIR SECONDS
# A finding leaves a crash-*/timeout-* file in BUILD_DIR/fuzz-findings and
# makes this script exit non-zero; add it as a regression test.
set -euo pipefail
build=$1
seconds=$2
root=$(cd "$(dirname "$0")/.." && pwd)
findings="$build/fuzz-findings"
mkdir -p "$findings"
seed() {  # seed TARGET FILES...
  local dir="$build/corpus/$1"; shift
  mkdir -p "$dir"
  cp -n "$@" "$dir"/ 2>/dev/null || true
}
seed hlo_parser_fuzz "$root"/tests/fixtures/hlo/*.hlo "$root"/workloads/examples/*.hlo
seed sharding_fuzz "$root"/tests/fuzz/corpus/sharding/*
seed workload_fuzz $(find "$root/workloads" -name '*.yaml') "$root"/tests/fuzz/corpus/workload/*
status=0
for target in hlo_parser_fuzz sharding_fuzz workload_fuzz; do
  echo "fuzz: $target for ${seconds}s" >&2
  if ! "$build/tests/fuzz/$target" "$build/corpus/$target" -max_total_time="$seconds" -timeout=10 \
       -rss_limit_mb=2048 -artifact_prefix="$findings/$target-" -print_final_stats=1 2>"$build/$target.log"; then
    status=1
    echo "fuzz: $target found a problem; see $build/$target.log and $findings" >&2
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/$target.log" >&2 || true
done
exit $status
