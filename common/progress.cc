// The progress display (common/progress.h).
#include "common/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

namespace podsim {

std::string duration_text(double seconds) {
  auto s = static_cast<long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02d}m", s / 3600, (s / 60) % 60);
  if (s >= 60) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

std::string eta_text(double fraction, double elapsed_seconds) {
  if (!(fraction > 0)) return "?";
  return duration_text(elapsed_seconds * (1 - std::min(fraction, 1.0)) / fraction);
}

ProgressLine::ProgressLine(std::FILE* stream, double quiet_seconds, ProgressStyle style)
    : stream_(stream),
      quiet_seconds_(quiet_seconds),
      style_(style),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_),
      stage_start_(start_) {}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::update(const std::string& stage, double fraction) {
  auto now = std::chrono::steady_clock::now();
  if (stage != stage_) {
    stage_ = stage;
    stage_start_ = now;
    last_tenth_ = -1;
  }
  if (std::chrono::duration<double>(now - start_).count() < quiet_seconds_) return;
  fraction = std::clamp(fraction, 0.0, 1.0);
  const std::string text =
      fmt::format("podsim: {} {:3d}%  ETA {}", stage, static_cast<int>(fraction * 100.0),
                  eta_text(fraction, std::chrono::duration<double>(now - stage_start_).count()));
  if (style_ == ProgressStyle::kLines) {
    const int tenth = static_cast<int>(fraction * 10.0);
    if (tenth == last_tenth_) return;
    last_tenth_ = tenth;
    fmt::print(stream_, "{}\n", text);
    std::fflush(stream_);
    return;
  }
  if (printed_ && std::chrono::duration<double>(now - last_print_).count() < 0.1) return;
  if (printed_ && text == last_text_) return;
  // Pad with spaces so a shorter line fully covers the previous one.
  fmt::print(stream_, "\r{:<{}}", text, std::max(text.size(), last_text_.size()));
  std::fflush(stream_);
  last_text_ = text;
  last_print_ = now;
  printed_ = true;
}

void ProgressLine::update(const std::string& label, int done, int total) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (elapsed < quiet_seconds_) return;
  const std::string text = fmt::format("{} {}", label, progress_bar_text(done, total, elapsed));
  if (style_ == ProgressStyle::kLines) {
    fmt::print(stream_, "{}\n", text);
  } else {
    // The complete count stays on screen: its line ends.
    const bool complete = done == total;
    fmt::print(stream_, "\r{}{}", text, complete ? "\n" : "");
    printed_ = !complete;
    last_text_ = complete ? "" : text;
  }
  std::fflush(stream_);
}

void ProgressLine::note(const std::string& text) {
  finish();
  fmt::print(stream_, "{}\n", text);
  std::fflush(stream_);
}

void ProgressLine::finish() {
  if (!printed_) return;
  fmt::print(stream_, "\r{:<{}}\r", "", last_text_.size());
  std::fflush(stream_);
  printed_ = false;
  last_text_.clear();
}

ProgressStyle progress_style_of(std::FILE* stream) {
  return isatty(fileno(stream)) != 0 ? ProgressStyle::kInPlace : ProgressStyle::kLines;
}

std::string progress_bar_text(int done, int total, double elapsed_seconds, int width) {
  double fraction = total > 0 ? static_cast<double>(done) / total : 1.0;
  int filled = static_cast<int>(fraction * width);
  std::string bar(static_cast<size_t>(width) + 2, '.');
  bar.front() = '[';
  bar.back() = ']';
  std::fill_n(bar.begin() + 1, filled, '#');
  std::string eta = "?";
  // ETA = remaining points x mean seconds per finished point.
  if (done > 0) eta = duration_text(elapsed_seconds / done * (total - done));
  return fmt::format("{} {}/{} {:3d}%  elapsed {}  ETA {}", bar, done, total,
                     static_cast<int>(fraction * 100), duration_text(elapsed_seconds), eta);
}

}  // namespace podsim
