// `podsim run --serve`'s server loop (driver/serve.h).
#include "driver/serve.h"

#include <istream>
#include <ostream>
#include <sstream>

#include "common/error.h"
#include "reports/formats.h"

namespace podsim::driver {

std::vector<std::pair<std::string, std::string>> parse_serve_line(const std::string& line) {
  std::vector<std::pair<std::string, std::string>> overrides;
  std::istringstream words(line);
  for (std::string word; words >> word;) {
    const size_t eq = word.find('=');
    if (!word.starts_with("hardware.") || eq == std::string::npos)
      throw UserError(SourceLocation{word, 0, 0},
                      "a --serve line holds hardware.<key>=<value> words",
                      "e.g. hardware.core.op_overhead_s=2e-6 hardware.ici.link_efficiency=0.8");
    overrides.emplace_back(word.substr(9, eq - 9), word.substr(eq + 1));
  }
  return overrides;
}

void serve_workload(const RunRequest& request, bool wall_times, std::istream& in,
                    std::ostream& out) {
  CompiledWorkload compiled = compile_workload(request);
  reports::FormatOptions format_options;
  format_options.wall_times = wall_times;
  std::string last_header;
  for (std::string line; std::getline(in, line);) {
    try {
      const RunResult result = simulate_compiled(compiled, request, parse_serve_line(line));
      const std::string csv =
          reports::format_report(result.report, reports::Format::kCsv, format_options);
      const size_t end_of_header = csv.find('\n') + 1;
      if (csv.compare(0, end_of_header, last_header) != 0) {
        last_header = csv.substr(0, end_of_header);
        out << last_header;
      }
      out << csv.substr(end_of_header);
    } catch (const UserError& e) {
      std::string message = e.what();
      for (char& c : message)
        if (c == '\n') c = ' ';
      out << "error: " << message << '\n';
    }
    out.flush();
  }
}

}  // namespace podsim::driver
