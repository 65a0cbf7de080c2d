// Edit distance and the nearest-name lookup behind "did you mean" hints.
#include "common/did_you_mean.h"

#include <gtest/gtest.h>

namespace podsim {
namespace {

TEST(DidYouMean, EditDistanceCountsSingleCharacterEdits) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);  // k->s, e->i, +g
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("maximun", "maximum"), 1u);
}

TEST(DidYouMean, ClosestOnlyWhenNear) {
  EXPECT_EQ(closest("maximun", {"minimum", "maximum", "multiply"}), "maximum");
  // "zzzz" is 4 edits from every entry, over max(2, 4/3) = 2.
  EXPECT_EQ(closest("zzzz", {"add", "tanh"}), "");
}

}  // namespace
}  // namespace podsim
