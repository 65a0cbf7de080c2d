// podsim's one progress display, on stderr, for a long `podsim run` (stages
// done by a fraction) and for studies over many runs (sweep, regress,
// calibrate and the fit: items done of a total). Silent for the first
// `quiet_seconds` (short runs print nothing). A stage reads
// "podsim: <stage> NN%  ETA 1m05s", the ETA from the stage's pace so far; a
// count reads "<label> [#####.....] 12/40  30%  elapsed 1m05s  ETA 2m31s".
// In place (a terminal): rewritten with \r (a stage at most 10 times a
// second, erased by finish(); a count at each item, kept once complete). As
// lines (a log file): a stage once per 10%, a count at each item.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace podsim {

enum class ProgressStyle { kInPlace, kLines };

class ProgressLine {
 public:
  explicit ProgressLine(std::FILE* stream, double quiet_seconds = 1.0,
                        ProgressStyle style = ProgressStyle::kInPlace);
  ~ProgressLine();
  void update(const std::string& stage, double fraction);
  // `done` of `total` items since this display was made.
  void update(const std::string& label, int done, int total);
  // A line of news, on a line of its own.
  void note(const std::string& text);
  void finish();  // in place: erases the line if one was printed

 private:
  std::FILE* stream_;
  double quiet_seconds_;
  ProgressStyle style_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
  std::string stage_;
  std::chrono::steady_clock::time_point stage_start_;
  int last_tenth_ = -1;  // lines: the last 10% step printed in this stage
  std::string last_text_;
  bool printed_ = false;
};

// kInPlace when `stream` is a terminal, else kLines.
ProgressStyle progress_style_of(std::FILE* stream);

// "45s", "2m05s", "1h02m" (rounded to the second).
std::string duration_text(double seconds);

// The ETA of a stage `fraction` done after `elapsed_seconds`, assuming the
// rest goes at the same pace: elapsed x (1 - f) / f; "?" before any progress.
std::string eta_text(double fraction, double elapsed_seconds);

// "[#####.....] 12/40  30%  elapsed 1m05s  ETA 2m31s": the ETA assumes the
// remaining points take the mean time of the finished ones.
std::string progress_bar_text(int done, int total, double elapsed_seconds, int width = 30);

}  // namespace podsim
