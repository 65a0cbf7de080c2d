// Running gnuplot (studies/gnuplot.h) with a stand-in gnuplot on PATH: found
// or not, the script handed over and removed, or kept when gnuplot fails.
#include "studies/gnuplot.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/files.h"
#include "driver/child_process.h"

namespace podsim::studies {
namespace {

namespace fs = std::filesystem;

// Sets PATH for the test's lifetime.
class PathIs {
 public:
  explicit PathIs(const std::string& path) : old_(std::getenv("PATH") ? std::getenv("PATH") : "") {
    setenv("PATH", path.c_str(), 1);
  }
  ~PathIs() { setenv("PATH", old_.c_str(), 1); }

 private:
  std::string old_;
};

TEST(Gnuplot, FoundOnPathAndHandedTheScript) {
  const driver::ScratchDir scratch("podsim-test-gnuplot", "the test");
  const fs::path bin = scratch.path() / "bin";
  fs::create_directories(bin);
  // Keeps the script it is given; fails when the script says "fail".
  write_file_atomically((bin / "gnuplot").string(),
                        "#!/bin/sh\ncp \"$1\" \"" + (scratch.path() / "seen.gp").string() +
                            "\"\ngrep -q fail \"$1\" && exit 1\nexit 0\n");
  fs::permissions(bin / "gnuplot", fs::perms::owner_all);
  {
    const PathIs path("/nonexistent");
    EXPECT_FALSE(gnuplot_installed());
  }
  const PathIs path(bin.string() + ":/usr/bin:/bin");
  EXPECT_TRUE(gnuplot_installed());
  const fs::path script = scratch.path() / "p.svg.gp";
  EXPECT_TRUE(run_gnuplot("plot x\n", script.string()));
  EXPECT_EQ(read_text_file(scratch.path() / "seen.gp"), "plot x\n");
  EXPECT_FALSE(fs::exists(script));  // removed once drawn
  EXPECT_FALSE(run_gnuplot("fail\n", script.string()));
  EXPECT_EQ(read_text_file(script), "fail\n");  // kept for a look
}

}  // namespace
}  // namespace podsim::studies
