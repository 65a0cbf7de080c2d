// Determinism: the same input gives byte-identical machine output,
// whatever -j. Runs the built podsim: `run --format json` twice, and a small
// sweep with -j 1 and -j 2 (CSV and --jsonl). Wall-clock times are the one
// thing that differs between runs by nature; they are left out of json/csv
// unless asked for with `run --timings` (reports::FormatOptions), which the
// last test checks so the exclusion cannot hide a missing feature.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_test_util.h"

namespace {

namespace fs = std::filesystem;

using Result = podsim::cli_test::SplitRun;
using podsim::cli_test::fresh_dir;
using podsim::cli_test::read_file;
using podsim::cli_test::run_split;

const std::string kSmall = std::string(PODSIM_SOURCE_DIR) + "/workloads/small.yaml";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream s(text);
  for (std::string line; std::getline(s, line);) lines.push_back(line);
  return lines;
}

TEST(Determinism, RunJsonIsByteIdenticalAcrossRuns) {
  Result first = run_split("run " + kSmall + " --format json");
  Result second = run_split("run " + kSmall + " --format json");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(second.exit_code, 0) << second.err;
  ASSERT_FALSE(first.out.empty());
  EXPECT_EQ(first.out, second.out);
  // It is a real report (not two empty or error outputs that agree).
  nlohmann::json j = nlohmann::json::parse(first.out);
  EXPECT_EQ(j["workload"], "small");
  EXPECT_GT(j["step_time_s"].get<double>(), 0);
}

TEST(Determinism, RunCsvAndTraceAreByteIdenticalAcrossRuns) {
  fs::path dir = fresh_dir("csv_trace");
  Result a =
      run_split("run " + kSmall + " --format csv --trace " + (dir / "a.trace.json").string());
  Result b =
      run_split("run " + kSmall + " --format csv --trace " + (dir / "b.trace.json").string());
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  std::string trace_a = read_file(dir / "a.trace.json");
  EXPECT_FALSE(trace_a.empty());
  EXPECT_EQ(trace_a, read_file(dir / "b.trace.json"));
  fs::remove_all(dir);
}

TEST(Determinism, SweepCsvAndJsonlAreTheSameBytesWithOneOrTwoJobs) {
  // 2 x 2 grid, first key outermost: points (layers, batch) = (4, 8), (4, 16),
  // (1, 8), (1, 16). The 4-layer points come first and take longer, so with
  // -j 2 the 1-layer points tend to finish before them: the rows must still
  // come out in grid order.
  fs::path dir = fresh_dir("determinism_sweep");
  std::ofstream(dir / "s.yaml")
      << "name: det\nbase: " << kSmall
      << "\ngrid:\n  model.layers: [4, 1]\n  model.global_batch: [8, 16]\n";
  const std::string sweep = "sweep " + (dir / "s.yaml").string();
  Result one = run_split(sweep + " -j 1 -o " + (dir / "j1.csv").string() + " --jsonl " +
                         (dir / "j1.jsonl").string());
  Result two = run_split(sweep + " -j 2 -o " + (dir / "j2.csv").string() + " --jsonl " +
                         (dir / "j2.jsonl").string());
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const std::string csv = read_file(dir / "j1.csv");
  const std::string jsonl = read_file(dir / "j1.jsonl");
  EXPECT_EQ(csv, read_file(dir / "j2.csv"));
  EXPECT_EQ(jsonl, read_file(dir / "j2.jsonl"));

  // Grid order, every point ok: header + 4 rows, jsonl "point" 0..3 with the
  // layer values 4, 4, 1, 1.
  EXPECT_EQ(lines_of(csv).size(), 5u) << csv;
  std::vector<std::string> objects = lines_of(jsonl);
  ASSERT_EQ(objects.size(), 4u) << jsonl;
  const std::array<const char*, 4> layers = {"4", "4", "1", "1"};
  for (size_t i = 0; i < objects.size(); ++i) {
    nlohmann::json p = nlohmann::json::parse(objects[i]);
    EXPECT_EQ(p["point"].get<int>(), static_cast<int>(i));
    EXPECT_EQ(p["status"], "ok") << p["error"];
    EXPECT_EQ(p["values"]["model.layers"], layers[i]);
  }
  fs::remove_all(dir);
}

TEST(Determinism, WallTimesAppearOnlyWithTimings) {
  Result plain = run_split("run " + kSmall + " --format json");
  Result timed = run_split("run " + kSmall + " --format json --timings");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(timed.exit_code, 0) << timed.err;
  nlohmann::json p = nlohmann::json::parse(plain.out);
  nlohmann::json t = nlohmann::json::parse(timed.out);
  EXPECT_FALSE(p.contains("compile_wall_s"));
  EXPECT_FALSE(p.contains("simulate_wall_s"));
  // Compiling small.yaml takes a measurable, nonzero time.
  EXPECT_GT(t.at("compile_wall_s").get<double>(), 0);
  EXPECT_GE(t.at("simulate_wall_s").get<double>(), 0);
  // Apart from the two wall times, --timings changes nothing.
  t.erase("compile_wall_s");
  t.erase("simulate_wall_s");
  EXPECT_EQ(p, t);
}

}  // namespace
