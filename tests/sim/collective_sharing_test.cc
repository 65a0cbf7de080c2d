// shared_speeds: max-min fair progress rates of concurrent collectives on
// shared links, against hand-solved progressive filling.
#include <gtest/gtest.h>

#include "sim/collective_sharing.h"

namespace podsim::sim {
namespace {

using LinkBusy = std::vector<std::pair<hw::LinkId, double>>;

TEST(SharedSpeeds, AloneOrOnDisjointLinksRunAtFullSpeed) {
  const LinkBusy a = {{0, 1.0}, {1, 1.0}}, b = {{2, 1.0}};
  EXPECT_EQ(shared_speeds({{1.0, &a}}), std::vector<double>{1.0});
  EXPECT_EQ(shared_speeds({{1.0, &a}, {1.0, &b}}), (std::vector<double>{1.0, 1.0}));
}

TEST(SharedSpeeds, BandwidthBoundCollectivesOnOneLinkEndTogether) {
  // Each keeps link 0 busy for its whole transfer (2 s and 3 s). Equal
  // progress rates r (fraction per second): 2r + 3r = 1 -> r = 1/5, so both
  // end at 5 s, when the link has carried both; speeds r x T = 0.4 and 0.6.
  const LinkBusy a = {{0, 2.0}}, b = {{0, 3.0}};
  const auto s = shared_speeds({{2.0, &a}, {3.0, &b}});
  EXPECT_DOUBLE_EQ(s[0], 0.4);
  EXPECT_DOUBLE_EQ(s[1], 0.6);
  EXPECT_DOUBLE_EQ(2.0 / s[0], 5.0);
  EXPECT_DOUBLE_EQ(3.0 / s[1], 5.0);
}

TEST(SharedSpeeds, LatencyBoundCollectivesBarelyShare) {
  // u = 0.1 each: 0.2 of the link at full speed, nothing saturates.
  const LinkBusy a = {{0, 0.1}};
  const auto s = shared_speeds({{1.0, &a}, {1.0, &a}});
  EXPECT_DOUBLE_EQ(s[0], 1.0);
  EXPECT_DOUBLE_EQ(s[1], 1.0);
}

TEST(SharedSpeeds, ProgressiveFillingFreezesTheBottleneckFirst) {
  // All transfers take 1 s alone (rate cap 1). A: link 0 busy 1 s. B: links
  // 0 and 1 busy 1 s. C: link 1 busy 0.25 s. Rising together, link 0
  // saturates first at r = 1/2 (A and B freeze); link 1 then holds
  // 0.5 x 1 + r x 0.25 <= 1, i.e. r <= 2, so C reaches its cap of 1.
  const LinkBusy a = {{0, 1.0}}, b = {{0, 1.0}, {1, 1.0}}, c = {{1, 0.25}};
  const auto s = shared_speeds({{1.0, &a}, {1.0, &b}, {1.0, &c}});
  EXPECT_DOUBLE_EQ(s[0], 0.5);
  EXPECT_DOUBLE_EQ(s[1], 0.5);
  EXPECT_DOUBLE_EQ(s[2], 1.0);
}

TEST(SharedSpeeds, UnequalUsesOfOneLinkShareItInProportion) {
  // Link 0 busy 1 s for A and 1/2 s for B: r (1 + 1/2) = 1 -> r = 2/3 for
  // both (link 1 alone would allow B r = 1).
  const LinkBusy a = {{0, 1.0}}, b = {{0, 0.5}, {1, 1.0}};
  const auto s = shared_speeds({{1.0, &a}, {1.0, &b}});
  EXPECT_DOUBLE_EQ(s[0], 2.0 / 3);
  EXPECT_DOUBLE_EQ(s[1], 2.0 / 3);
}

TEST(SharedSpeeds, BusierThanAloneIsNormalisedToFullSpeedAlone) {
  // An asymmetric collective whose groups together load a link 2 s while the
  // slowest group alone takes 1 s still runs at full speed alone; with a
  // copy of itself each gets half.
  const LinkBusy a = {{0, 2.0}};
  EXPECT_EQ(shared_speeds({{1.0, &a}}), std::vector<double>{1.0});
  const auto s = shared_speeds({{1.0, &a}, {1.0, &a}});
  EXPECT_DOUBLE_EQ(s[0], 0.5);
}

TEST(SharingCache, RemembersBySpecSet) {
  SharingCache cache;
  const LinkBusy a = {{0, 1.0}};
  EXPECT_DOUBLE_EQ(cache.speeds({3, 4}, {{1.0, &a}, {1.0, &a}})[0], 0.5);
  // Same specs: the cached answer, whatever the inputs say now.
  const LinkBusy none;
  EXPECT_DOUBLE_EQ(cache.speeds({3, 4}, {{1.0, &none}, {1.0, &none}})[0], 0.5);
  EXPECT_DOUBLE_EQ(cache.speeds({3, 5}, {{1.0, &none}, {1.0, &none}})[0], 1.0);
}

}  // namespace
}  // namespace podsim::sim
