// A sweep's description and tables: a base workload plus a grid of
// overrides, expanded into points; a slice of the points for one job of a
// batch array (--shard I/N); the results table (one CSV row per point,
// failed points included) and the merge of shard tables. Running the points
// is studies/sweep.h's.
//
// SWEEP.yaml:
//   name: mesh-shape-128b-512
//   base: ../workloads/dense_128b_16x16.yaml   # relative to this file
//   set: {training.remat: auto}                # optional fixed overrides
//   grid:                                      # cartesian product, first key slowest
//     mesh.axes.x: [8, 16, 32]
//   zip:                                       # optional: keys advanced together
//     mesh.axes.x: [16, 32]                    # (a map = one group, or a list of maps)
//     mesh.axes.y: [32, 16]
// Keys are the dotted keys of `--set` (any workload key, hardware.* too).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "reports/flat_report.h"

namespace podsim::studies {

// One dimension of the grid: a single key, or zipped keys of equal length.
struct SweepAxis {
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> values;  // values[i] = one value per key
};

struct SweepSpec {
  std::string name;
  std::string source_file;
  std::string base_workload;                 // resolved path
  std::vector<std::string> fixed_overrides;  // "key=value"
  std::vector<SweepAxis> axes;
  // Where each key of set, grid and zip is written in the sweep file.
  std::vector<std::pair<std::string, SourceLocation>> key_locations;
  std::vector<std::string> swept_keys() const;  // axis order
};

struct SweepPoint {
  int64_t index = 0;                                        // 0-based position in the full grid
  std::vector<std::pair<std::string, std::string>> values;  // swept key -> value
  // fixed overrides then the swept ones, as "key=value" for --set
  std::vector<std::string> overrides(const SweepSpec& spec) const;
};

SweepSpec parse_sweep(const std::string& yaml_text, const std::string& file_name);
SweepSpec load_sweep(const std::string& path);

// Every point, the last axis varying fastest.
std::vector<SweepPoint> expand_sweep(const SweepSpec& spec);

// --shard I/N (1 <= I <= N): this job's points are those with
// index % N == I - 1 (round robin, so slow regions of the grid spread out).
struct ShardSpec {
  int64_t index = 1;
  int64_t count = 1;
};
ShardSpec parse_shard(const std::string& text);
std::vector<SweepPoint> select_shard(const std::vector<SweepPoint>& points, const ShardSpec& shard);

struct PointResult {
  SweepPoint point;
  bool ok = false;
  std::string error;            // one line, when !ok
  reports::FlatReport metrics;  // the point's report, when ok
};

// Columns: point, the swept keys, status (ok|error), error, then the metric
// columns: `metric_columns` first (pass the fixed report fields so every shard
// has the same header even when all its points failed), then any other metric
// in first-seen order; rows by point index. RFC 4180 quoting.
std::string sweep_csv(const SweepSpec& spec, std::vector<PointResult> results,
                      const std::vector<std::string>& metric_columns = {});
// One JSON object per line: {"point":..,"values":{..},"status":..,"error":..,"metrics":{..}}.
std::string sweep_json_lines(const SweepSpec& spec, std::vector<PointResult> results);

// Joins the CSV tables of the shards of one sweep (same header) into one
// table ordered by point; UserError (naming the file) on a header mismatch or
// a point present twice.
std::string merge_sweep_csvs(
    const std::vector<std::pair<std::string, std::string>>& files_and_texts);

}  // namespace podsim::studies
