// Sweep specification, grid expansion, sharding and result tables (see
// studies/sweep_spec.h).
#include "studies/sweep_spec.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "common/csv.h"
#include "common/error.h"
#include "common/files.h"
#include "common/yaml_reader.h"

namespace podsim::studies {
namespace {

std::string scalar(const yaml::Document& doc, const YAML::Node& node, const std::string& what) {
  if (!node.IsScalar())
    doc.fail(node, fmt::format("{} must be a single value", what),
             "write a number or a word, e.g. 16 or auto");
  return node.Scalar();
}

std::vector<std::string> value_list(const yaml::Document& doc, const YAML::Node& node,
                                    const std::string& key) {
  if (!node.IsSequence() || node.size() == 0)
    doc.fail(node, fmt::format("'{}' must list the values to sweep", key),
             fmt::format("write e.g. {}: [8, 16, 32]", key));
  std::vector<std::string> values;
  for (const YAML::Node& v : node)
    values.push_back(scalar(doc, v, fmt::format("a value of '{}'", key)));
  return values;
}

SweepAxis zip_group(const yaml::Document& doc, const YAML::Node& group, std::set<std::string>& seen,
                    std::vector<std::pair<std::string, SourceLocation>>& key_locations) {
  if (!group.IsMap() || group.size() == 0)
    doc.fail(group, "a zip group must map keys to equally long value lists",
             "write e.g. zip: {mesh.axes.x: [16, 32], mesh.axes.y: [32, 16]}");
  SweepAxis axis;
  std::vector<std::vector<std::string>> columns;
  size_t length = 0;
  // Keys are workload keys, checked by studies/sweep.cc before any point runs.
  const yaml::MapReader group_keys(doc, group, "zip");
  for (const yaml::MapReader::Entry& e : group_keys.entries()) {
    if (!seen.insert(e.key).second)
      doc.fail(e.key_node, fmt::format("'{}' is swept twice", e.key),
               "sweep each key in one place");
    columns.push_back(value_list(doc, e.value, e.key));
    if (axis.keys.empty()) length = columns.back().size();
    if (columns.back().size() != length)
      doc.fail(e.value,
               fmt::format("'{}' has {} values but the zip group's first key has {}", e.key,
                           columns.back().size(), length),
               "zipped lists advance together: give them the same length");
    axis.keys.push_back(e.key);
    key_locations.emplace_back(e.key, doc.at(e.key_node));
  }
  for (size_t i = 0; i < length; ++i) {
    std::vector<std::string> row;
    for (const auto& column : columns) row.push_back(column[i]);
    axis.values.push_back(std::move(row));
  }
  return axis;
}

}  // namespace

std::vector<std::string> SweepSpec::swept_keys() const {
  std::vector<std::string> keys;
  for (const SweepAxis& axis : axes) keys.insert(keys.end(), axis.keys.begin(), axis.keys.end());
  return keys;
}

std::vector<std::string> SweepPoint::overrides(const SweepSpec& spec) const {
  std::vector<std::string> out = spec.fixed_overrides;
  for (const auto& [key, value] : values) out.push_back(key + "=" + value);
  return out;
}

SweepSpec parse_sweep(const std::string& yaml_text, const std::string& file_name) {
  const yaml::Document doc = yaml::Document::parse(yaml_text, file_name);
  const YAML::Node& root = doc.root();
  if (!root.IsMap())
    throw UserError(SourceLocation{file_name, 1, 1}, "a sweep file must be a map",
                    "give at least 'base:' and 'grid:' or 'zip:'");
  yaml::MapReader top(doc, root, "", "sweep key");
  top.allow({"name", "base", "set", "grid", "zip"});
  top.finish();
  SweepSpec spec;
  spec.source_file = file_name;
  if (const YAML::Node name = top.get("name")) spec.name = scalar(doc, name, "'name'");
  const YAML::Node base_node = top.get("base");
  if (!base_node)
    throw UserError(SourceLocation{file_name, 1, 1}, "the sweep has no 'base' workload",
                    "add e.g. base: ../workloads/small.yaml (relative to the sweep file)");
  const std::string base = scalar(doc, base_node, "'base'");
  const std::filesystem::path base_path(base);
  spec.base_workload = base_path.is_absolute()
                           ? base
                           : (std::filesystem::path(file_name).parent_path() / base_path)
                                 .lexically_normal()
                                 .string();
  if (spec.name.empty()) spec.name = std::filesystem::path(file_name).stem().string();
  // The keys below set, grid and zip are workload keys: studies/sweep.cc
  // checks them against the base workload before any point runs.
  if (const YAML::Node set = top.get("set")) {
    if (!set.IsMap())
      doc.fail(set, "'set' must map keys to values", "write e.g. set: {training.remat: auto}");
    const yaml::MapReader set_keys(doc, set, "set");
    for (const yaml::MapReader::Entry& e : set_keys.entries()) {
      spec.fixed_overrides.push_back(e.key + "=" +
                                     scalar(doc, e.value, fmt::format("'set.{}'", e.key)));
      spec.key_locations.emplace_back(e.key, doc.at(e.key_node));
    }
  }
  std::set<std::string> seen;
  if (const YAML::Node grid = top.get("grid")) {
    if (!grid.IsMap())
      doc.fail(grid, "'grid' must map keys to value lists",
               "write e.g. grid: {model.layers: [32, 64]}");
    const yaml::MapReader grid_keys(doc, grid, "grid");
    for (const yaml::MapReader::Entry& e : grid_keys.entries()) {
      if (!seen.insert(e.key).second)
        doc.fail(e.key_node, fmt::format("'{}' is swept twice", e.key),
                 "sweep each key in one place");
      spec.key_locations.emplace_back(e.key, doc.at(e.key_node));
      SweepAxis axis;
      axis.keys = {e.key};
      for (std::string& v : value_list(doc, e.value, e.key)) axis.values.push_back({std::move(v)});
      spec.axes.push_back(std::move(axis));
    }
  }
  if (const YAML::Node zip = top.get("zip")) {
    if (zip.IsSequence()) {
      for (const YAML::Node& group : zip)
        spec.axes.push_back(zip_group(doc, group, seen, spec.key_locations));
    } else {
      spec.axes.push_back(zip_group(doc, zip, seen, spec.key_locations));
    }
  }
  if (spec.axes.empty())
    throw UserError(SourceLocation{file_name, 1, 1}, "the sweep has nothing to sweep",
                    "add 'grid:' (cartesian product) or 'zip:' (lists advanced together)");
  return spec;
}

SweepSpec load_sweep(const std::string& path) {
  return parse_sweep(read_file_text(path, "sweep file"), path);
}

std::vector<SweepPoint> expand_sweep(const SweepSpec& spec) {
  int64_t total = 1;
  for (const SweepAxis& axis : spec.axes) total *= static_cast<int64_t>(axis.values.size());
  std::vector<SweepPoint> points;
  points.reserve(static_cast<size_t>(total));
  for (int64_t index = 0; index < total; ++index) {
    SweepPoint point;
    point.index = index;
    // Mixed-radix digits of index, the last axis least significant.
    int64_t rest = index;
    std::vector<size_t> digit(spec.axes.size());
    for (size_t a = spec.axes.size(); a-- > 0;) {
      const auto n = static_cast<int64_t>(spec.axes[a].values.size());
      digit[a] = static_cast<size_t>(rest % n);
      rest /= n;
    }
    for (size_t a = 0; a < spec.axes.size(); ++a)
      for (size_t k = 0; k < spec.axes[a].keys.size(); ++k)
        point.values.emplace_back(spec.axes[a].keys[k], spec.axes[a].values[digit[a]][k]);
    points.push_back(std::move(point));
  }
  return points;
}

ShardSpec parse_shard(const std::string& text) {
  const SourceLocation where{"--shard " + text, 0, 0};
  const size_t slash = text.find('/');
  ShardSpec shard;
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    size_t used = 0;
    shard.index = std::stoll(text.substr(0, slash), &used);
    if (used != slash) throw std::invalid_argument("trailing");
    const std::string count = text.substr(slash + 1);
    shard.count = std::stoll(count, &used);
    if (used != count.size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw UserError(where, fmt::format("bad shard '{}'", text),
                    "write I/N with 1 <= I <= N, e.g. --shard 3/8");
  }
  if (shard.count < 1 || shard.index < 1 || shard.index > shard.count)
    throw UserError(
        where, fmt::format("shard {} is not between 1 and {}", shard.index, shard.count),
        "write I/N with 1 <= I <= N, e.g. --shard 3/8 (as SLURM_ARRAY_TASK_ID/N with --array=1-N)");
  return shard;
}

std::vector<SweepPoint> select_shard(const std::vector<SweepPoint>& points,
                                     const ShardSpec& shard) {
  std::vector<SweepPoint> out;
  for (const SweepPoint& p : points)
    if (p.index % shard.count == shard.index - 1) out.push_back(p);
  return out;
}

namespace {

void sort_by_point(std::vector<PointResult>& results) {
  std::sort(results.begin(), results.end(), [](const PointResult& a, const PointResult& b) {
    return a.point.index < b.point.index;
  });
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) line += ',';
    line += csv_quote(fields[i]);
  }
  return line + '\n';
}

std::vector<std::string> metric_columns_of(const std::vector<PointResult>& results,
                                           std::vector<std::string> columns) {
  std::set<std::string> seen(columns.begin(), columns.end());
  for (const PointResult& r : results)
    for (const std::string& key : r.metrics.keys())
      if (seen.insert(key).second) columns.push_back(key);
  return columns;
}

}  // namespace

std::string sweep_csv(const SweepSpec& spec, std::vector<PointResult> results,
                      const std::vector<std::string>& metric_columns) {
  sort_by_point(results);
  const std::vector<std::string> keys = spec.swept_keys();
  const std::vector<std::string> metrics = metric_columns_of(results, metric_columns);
  std::vector<std::string> header = {"point"};
  header.insert(header.end(), keys.begin(), keys.end());
  header.push_back("status");
  header.push_back("error");
  header.insert(header.end(), metrics.begin(), metrics.end());
  std::string out;
  auto emit = [&out](const std::vector<std::string>& fields) { out += csv_line(fields); };
  emit(header);
  for (const PointResult& r : results) {
    std::vector<std::string> row = {std::to_string(r.point.index)};
    for (const auto& [key, value] : r.point.values) row.push_back(value);
    row.push_back(r.ok ? "ok" : "error");
    row.push_back(r.error);
    for (const std::string& m : metrics) row.push_back(r.metrics.text(m).value_or(""));
    emit(row);
  }
  return out;
}

std::string sweep_json_lines(const SweepSpec& spec, std::vector<PointResult> results) {
  sort_by_point(results);
  std::string out;
  for (const PointResult& r : results) {
    nlohmann::ordered_json line;
    line["sweep"] = spec.name;
    line["point"] = r.point.index;
    nlohmann::ordered_json values = nlohmann::ordered_json::object();
    for (const auto& [key, value] : r.point.values) values[key] = value;
    line["values"] = values;
    line["status"] = r.ok ? "ok" : "error";
    line["error"] = r.error;
    line["metrics"] = r.metrics.json();
    out += line.dump() + "\n";
  }
  return out;
}

std::string merge_sweep_csvs(
    const std::vector<std::pair<std::string, std::string>>& files_and_texts) {
  if (files_and_texts.empty())
    throw UserError("sweep merge: no input files", "give the shard CSV files to join");
  std::vector<std::string> header;
  std::map<int64_t, std::vector<std::string>> rows;
  for (const auto& [file, text] : files_and_texts) {
    std::vector<std::vector<std::string>> table = parse_csv(text, file);
    if (table.empty() || table[0].empty() || table[0][0] != "point")
      throw UserError(SourceLocation{file, 1, 1},
                      "not a sweep result table (no 'point' column first)",
                      "merge the CSV files written by 'podsim sweep -o'");
    if (header.empty()) {
      header = table[0];
    } else if (table[0] != header) {
      throw UserError(SourceLocation{file, 1, 1}, "its columns differ from the first file's",
                      "merge shards of the same sweep (same SWEEP.yaml, same podsim version)");
    }
    for (size_t r = 1; r < table.size(); ++r) {
      const SourceLocation where{file, static_cast<int>(r + 1), 1};
      int64_t point = -1;
      try {
        point = std::stoll(table[r][0]);
      } catch (const std::exception&) {
        throw UserError(where, fmt::format("bad point number '{}'", table[r][0]),
                        "is the file a sweep table?");
      }
      if (table[r].size() != header.size())
        throw UserError(
            where, fmt::format("row has {} fields, the header {}", table[r].size(), header.size()),
            "is the file complete?");
      if (!rows.emplace(point, table[r]).second)
        throw UserError(where, fmt::format("point {} appears twice", point),
                        "each shard must come from a different --shard I/N");
    }
  }
  std::string out;
  auto emit = [&out](const std::vector<std::string>& fields) { out += csv_line(fields); };
  emit(header);
  for (const auto& [point, row] : rows) emit(row);
  return out;
}

}  // namespace podsim::studies
