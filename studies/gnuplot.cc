// Running gnuplot (studies/gnuplot.h).
#include "studies/gnuplot.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "common/files.h"

namespace podsim::studies {

bool gnuplot_installed() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

bool run_gnuplot(const std::string& script, const std::string& script_path) {
  write_file_atomically(script_path, script);
  if (std::system(fmt::format("gnuplot '{}'", script_path).c_str()) != 0) return false;
  std::filesystem::remove(script_path);
  return true;
}

}  // namespace podsim::studies
