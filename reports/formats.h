// Report formatters (docs/design.md "Command line": run --format
// table|json|csv|markdown). All are pure functions of a Report: the same
// Report always gives the same bytes (fixed key order, shortest round-trip
// number text).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "reports/flat_report.h"
#include "reports/report.h"

namespace podsim::reports {

enum class Format { kTable, kJson, kCsv, kMarkdown };

// What the machine formats (json, csv) carry besides the simulated results.
struct FormatOptions {
  // compile_wall_s and simulate_wall_s are wall-clock times of this process,
  // different on every run. Left out by default so that json and csv are
  // byte-identical for the same input, whatever -j (determinism);
  // `podsim run --timings` puts them back (last keys / columns). table and
  // markdown, read by people, always show them.
  bool wall_times = false;
};

// "table" | "json" | "csv" | "markdown"; UserError otherwise.
Format format_from_name(const std::string& name);

std::string format_report(const Report& report, Format format, const FormatOptions& options = {});

// One JSON object, keys in a fixed order (docs/design.md lists the required ones).
nlohmann::ordered_json report_to_json(const Report& report, const FormatOptions& options = {});
std::string report_json(const Report& report,
                        const FormatOptions& options = {});  // pretty, ends with a newline

// The flat form (reports/flat_report.h), fixed columns for every run (the
// csv row, and the sweep tables later). Nested json objects become dotted
// keys; top-op lists are left out.
FlatReport report_flat_fields(const Report& report, const FormatOptions& options = {});
std::string report_csv(const Report& report,
                       const FormatOptions& options = {});  // report_flat_fields(...).csv()

std::string report_table(const Report& report);
std::string report_markdown(const Report& report);

// Unit helpers shared by table and markdown ("12.3 ms", "3.20 GiB", ...).
std::string format_seconds(double seconds);  // three significant digits in s, ms or us: "46.5 s"
std::string format_gib(double bytes);
std::string format_bytes(double bytes);  // GiB, MiB, KiB or B: "1.50 MiB"
std::string format_tflops(double flops_per_second);
std::string format_percent(double fraction);
std::string format_count(double value);  // 1.10 T, 512 M, 4.2 k

}  // namespace podsim::reports
