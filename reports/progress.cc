// ProgressLine (reports/progress.h). Redraws at most 10 times a second.
#include "reports/progress.h"

#include <fmt/format.h>

#include <algorithm>

namespace podsim::reports {

ProgressLine::ProgressLine(std::FILE* stream, double quiet_seconds)
    : stream_(stream), quiet_seconds_(quiet_seconds), start_(std::chrono::steady_clock::now()), last_print_(start_) {}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::update(const std::string& stage, double fraction) {
  auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - start_).count() < quiet_seconds_) return;
  if (printed_ && std::chrono::duration<double>(now - last_print_).count() < 0.1) return;
  int percent = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * 100.0);
  std::string text = fmt::format("podsim: {} {:3d}%", stage, percent);
  if (printed_ && text == last_text_) return;
  // Pad with spaces so a shorter line fully covers the previous one.
  fmt::print(stream_, "\r{:<{}}", text, std::max(text.size(), last_text_.size()));
  std::fflush(stream_);
  last_text_ = text;
  last_print_ = now;
  printed_ = true;
}

void ProgressLine::finish() {
  if (!printed_) return;
  fmt::print(stream_, "\r{:<{}}\r", "", last_text_.size());
  std::fflush(stream_);
  printed_ = false;
  last_text_.clear();
}

}  // namespace podsim::reports
