// A one-line progress indicator on stderr for long `podsim run`s: silent for
// the first second (short runs print nothing), then "podsim: <stage> NN%"
// rewritten in place, cleared by finish().
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace podsim::reports {

class ProgressLine {
 public:
  explicit ProgressLine(std::FILE* stream, double quiet_seconds = 1.0);
  ~ProgressLine();
  void update(const std::string& stage, double fraction);
  void finish();  // erases the line if one was printed

 private:
  std::FILE* stream_;
  double quiet_seconds_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
  std::string last_text_;
  bool printed_ = false;
};

}  // namespace podsim::reports
