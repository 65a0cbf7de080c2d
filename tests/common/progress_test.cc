// The progress display (common/progress.h): stages and counts, in place and
// as lines, its ETAs.
#include "common/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace podsim {
namespace {

std::string read_all(std::FILE* stream) {
  std::fflush(stream);
  std::rewind(stream);
  std::string text;
  for (int c; (c = std::fgetc(stream)) != EOF;) text += static_cast<char>(c);
  std::fclose(stream);
  return text;
}

std::string progress_output(double quiet_seconds) {
  std::FILE* stream = std::tmpfile();
  {
    ProgressLine line(stream, quiet_seconds);
    line.update("simulating", 0.5);
  }
  return read_all(stream);
}

TEST(ProgressLine, QuietForShortRunsThenPrintsAndClearsTheLine) {
  EXPECT_EQ(progress_output(3600.0), "");  // a run shorter than the quiet time prints nothing
  std::string shown = progress_output(0.0);
  EXPECT_NE(shown.find("podsim: simulating  50%"), std::string::npos) << shown;
  EXPECT_EQ(shown.back(), '\r');  // finish() returns to the start of the erased line
}

TEST(ProgressEta, RemainingTimeAtTheSamePace) {
  // 30 s for 25%: the other 75% take 3 x 30 s = 90 s.
  EXPECT_EQ(eta_text(0.25, 30), "1m30s");
  EXPECT_EQ(eta_text(1.0, 30), "0s");
  EXPECT_EQ(eta_text(0.0, 30), "?");
  EXPECT_EQ(duration_text(3725), "1h02m");
  EXPECT_EQ(duration_text(44.6), "45s");
}

TEST(ProgressLine, LinesStylePrintsOneLinePerTenPercentAndNoCarriageReturns) {
  std::FILE* stream = std::tmpfile();
  {
    ProgressLine line(stream, 0.0, ProgressStyle::kLines);
    for (int i = 0; i <= 100; ++i) line.update("simulating", i / 100.0);
    line.update("reporting", 0);
  }
  const std::string text = read_all(stream);
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  int lines = 0;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  EXPECT_EQ(lines, 12) << text;  // simulating 0%, 10%, ..., 100%, then reporting 0%
  EXPECT_NE(text.find("podsim: simulating  50%  ETA "), std::string::npos) << text;
  EXPECT_NE(text.find("podsim: reporting   0%  ETA ?\n"), std::string::npos) << text;
}

TEST(ProgressLine, InPlaceStyleShowsTheEta) {
  std::FILE* stream = std::tmpfile();
  {
    ProgressLine line(stream, 0.0);
    line.update("simulating", 0.5);
  }
  const std::string text = read_all(stream);
  EXPECT_NE(text.find("\rpodsim: simulating  50%  ETA 0s"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\r');
}

TEST(ProgressBar, ProgressBarEtaIsMeanTimePerPointTimesRemaining) {
  // 10 of 40 done in 60 s: 6 s per point, 30 left -> 180 s = 3m00s.
  std::string text = progress_bar_text(10, 40, 60.0, 20);
  EXPECT_NE(text.find("[#####...............]"), std::string::npos) << text;
  EXPECT_NE(text.find("10/40"), std::string::npos);
  EXPECT_NE(text.find(" 25%"), std::string::npos);
  EXPECT_NE(text.find("elapsed 1m00s"), std::string::npos);
  EXPECT_NE(text.find("ETA 3m00s"), std::string::npos);
  EXPECT_NE(progress_bar_text(0, 5, 1.0).find("ETA ?"), std::string::npos);
}

// A count: "<label> <bar>" per finished item; done in well under 0.5 s, so
// elapsed and ETA round to 0s.
TEST(ProgressCount, LinesStylePrintsOneLinePerItem) {
  std::FILE* stream = std::tmpfile();
  {
    ProgressLine line(stream, 0.0, ProgressStyle::kLines);
    line.update("sweep s", 1, 2);
    line.update("sweep s", 2, 2);
  }
  EXPECT_EQ(read_all(stream), "sweep s " + progress_bar_text(1, 2, 0) + "\nsweep s " +
                                  progress_bar_text(2, 2, 0) + "\n");
}

TEST(ProgressCount, InPlaceStyleRewritesTheLineAndKeepsTheCompleteCount) {
  std::FILE* stream = std::tmpfile();
  {
    ProgressLine line(stream, 0.0, ProgressStyle::kInPlace);
    line.update("regress", 1, 2);
    line.update("regress", 2, 2);
  }  // finish() after a complete count erases nothing
  EXPECT_EQ(read_all(stream), "\rregress " + progress_bar_text(1, 2, 0) + "\rregress " +
                                  progress_bar_text(2, 2, 0) + "\n");
}

TEST(ProgressCount, QuietForShortRuns) {
  std::FILE* stream = std::tmpfile();
  {
    ProgressLine line(stream, 3600.0, ProgressStyle::kLines);
    line.update("sweep s", 1, 1);
  }
  EXPECT_EQ(read_all(stream), "");
}

TEST(ProgressNote, ALineOfItsOwnAfterErasingAnInPlaceLine) {
  std::FILE* stream = std::tmpfile();
  {
    ProgressLine line(stream, 0.0, ProgressStyle::kInPlace);
    line.update("calibrate", 1, 3);
    line.note("fit: news");
  }
  const std::string bar = "calibrate " + progress_bar_text(1, 3, 0);
  EXPECT_EQ(read_all(stream), "\r" + bar + "\r" + std::string(bar.size(), ' ') + "\rfit: news\n");
  std::FILE* lines = std::tmpfile();
  {
    ProgressLine line(lines, 0.0, ProgressStyle::kLines);
    line.note("fit: news");
  }
  EXPECT_EQ(read_all(lines), "fit: news\n");
}

}  // namespace
}  // namespace podsim
