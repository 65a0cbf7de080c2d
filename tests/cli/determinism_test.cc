// Determinism (issue 9): the same input gives byte-identical machine output,
// whatever -j. Runs the built podsim: `run --format json` twice, and a small
// sweep with -j 1 and -j 2 (CSV and --jsonl). Wall-clock times are the one
// thing that differs between runs by nature; they are left out of json/csv
// unless asked for with `run --timings` (reports::FormatOptions), which the
// last test checks so the exclusion cannot hide a missing feature.
#include <gtest/gtest.h>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string out;  // stdout; stderr goes to a per-process file and is kept for messages
  std::string err;
};

Result podsim(const std::string& args) {
  fs::path err_file = fs::temp_directory_path() / ("podsim_determinism_test." + std::to_string(getpid()) + ".stderr");
  std::string cmd = std::string(PODSIM_BINARY) + " " + args + " 2>" + err_file.string();
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_file);
  std::stringstream s;
  s << in.rdbuf();
  r.err = s.str();
  fs::remove(err_file);
  return r;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("podsim_determinism_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

const std::string kSmall = std::string(PODSIM_SOURCE_DIR) + "/workloads/small.yaml";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream s(text);
  for (std::string line; std::getline(s, line);) lines.push_back(line);
  return lines;
}

TEST(Determinism, RunJsonIsByteIdenticalAcrossRuns) {
  Result first = podsim("run " + kSmall + " --format json");
  Result second = podsim("run " + kSmall + " --format json");
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
  Result a = podsim("run " + kSmall + " --format csv --trace " + (dir / "a.trace.json").string());
  Result b = podsim("run " + kSmall + " --format csv --trace " + (dir / "b.trace.json").string());
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  std::string trace_a = read_bytes(dir / "a.trace.json");
  EXPECT_FALSE(trace_a.empty());
  EXPECT_EQ(trace_a, read_bytes(dir / "b.trace.json"));
  fs::remove_all(dir);
}

TEST(Determinism, SweepCsvAndJsonlAreTheSameBytesWithOneOrTwoJobs) {
  // 2 x 2 grid, first key outermost: points (layers, batch) = (4, 8), (4, 16),
  // (1, 8), (1, 16). The 4-layer points come first and take longer, so with
  // -j 2 the 1-layer points tend to finish before them: the rows must still
  // come out in grid order.
  fs::path dir = fresh_dir("sweep");
  std::ofstream(dir / "s.yaml") << "name: det\nbase: " << kSmall
                                << "\ngrid:\n  model.layers: [4, 1]\n  model.global_batch: [8, 16]\n";
  const std::string sweep = "sweep " + (dir / "s.yaml").string();
  Result one = podsim(sweep + " -j 1 -o " + (dir / "j1.csv").string() + " --jsonl " + (dir / "j1.jsonl").string());
  Result two = podsim(sweep + " -j 2 -o " + (dir / "j2.csv").string() + " --jsonl " + (dir / "j2.jsonl").string());
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const std::string csv = read_bytes(dir / "j1.csv");
  const std::string jsonl = read_bytes(dir / "j1.jsonl");
  EXPECT_EQ(csv, read_bytes(dir / "j2.csv"));
  EXPECT_EQ(jsonl, read_bytes(dir / "j2.jsonl"));

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
  Result plain = podsim("run " + kSmall + " --format json");
  Result timed = podsim("run " + kSmall + " --format json --timings");
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
