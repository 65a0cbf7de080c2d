// `podsim run --trace` flags -> TraceRequest (driver/trace_request.h).
#include "driver/trace_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "common/error.h"
#include "compiler/spmd/verify.h"
#include "reports/trace.h"

namespace podsim::driver {

void parse_trace_devices(const std::string& text, sim::TraceSelection& selection) {
  const SourceLocation where{"--trace-devices " + text, 0, 0};
  const char* hint =
      "write a list of device numbers (0,5,17), sample:N (N devices evenly spread) or all";
  auto integer = [&](const std::string& word) {
    size_t used = 0;
    int64_t value = -1;
    try {
      value = std::stoll(word, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != word.size() || value < 0)
      throw UserError(where, fmt::format("'{}' is not a device number", word), hint);
    return value;
  };
  if (text.empty() || text == "all") return;
  if (text.starts_with("sample:")) {
    selection.sample = integer(text.substr(7));
    if (selection.sample == 0) throw UserError(where, "sample:0 traces no device", hint);
    return;
  }
  std::istringstream words(text);
  for (std::string word; std::getline(words, word, ',');)
    selection.devices.push_back(integer(word));
  if (selection.devices.empty()) throw UserError(where, "no device given", hint);
}

void parse_trace_window(const std::string& text, sim::TraceSelection& selection) {
  if (text.empty()) return;
  const SourceLocation where{"--trace-window " + text, 0, 0};
  const char* hint =
      "write the window as A:B milliseconds of the step, e.g. 0:50 (A: or :B leave a side open)";
  const size_t colon = text.find(':');
  if (colon == std::string::npos) throw UserError(where, "the window has no ':'", hint);
  auto ms = [&](const std::string& word, double open) {
    if (word.empty()) return open;
    size_t used = 0;
    double value = -1;
    try {
      value = std::stod(word, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != word.size() || !(value >= 0) || !std::isfinite(value))
      throw UserError(where, fmt::format("'{}' is not a time in milliseconds", word), hint);
    return value * 1e-3;
  };
  selection.window_begin_s = ms(text.substr(0, colon), 0);
  selection.window_end_s = ms(text.substr(colon + 1), std::numeric_limits<double>::infinity());
  if (!(selection.window_end_s > selection.window_begin_s))
    throw UserError(where, "the window ends before it begins", hint);
  selection.window_given = true;
}

double parse_trace_limit(const std::string& text) {
  if (text == "0" || text == "none") return 0;
  if (text.empty()) return reports::kDefaultTraceLimitBytes;
  return compiler::parse_byte_size(text, "--trace-limit");
}

std::optional<TraceRequest> parse_trace_flags(const TraceFlags& flags) {
  auto only_with_trace = [&](const std::string& value, const char* flag) {
    if (!value.empty() && flags.path.empty())
      throw UserError(SourceLocation{flag, 0, 0},
                      fmt::format("{} selects what --trace writes", flag), "add --trace FILE.json");
  };
  only_with_trace(flags.devices, "--trace-devices");
  only_with_trace(flags.window, "--trace-window");
  only_with_trace(flags.limit, "--trace-limit");
  if (flags.path.empty()) return std::nullopt;
  TraceRequest trace;
  trace.path = flags.path;
  parse_trace_devices(flags.devices, trace.selection);
  parse_trace_window(flags.window, trace.selection);
  trace.limit_bytes = parse_trace_limit(flags.limit);
  trace.selection.max_events =
      trace.limit_bytes > 0
          ? std::max<int64_t>(1,
                              static_cast<int64_t>(trace.limit_bytes / reports::kTraceBytesPerItem))
          : 0;
  trace.selection.bytes_per_item = reports::kTraceBytesPerItem;
  return trace;
}

}  // namespace podsim::driver
