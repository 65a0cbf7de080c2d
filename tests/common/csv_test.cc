// csv_quote and parse_csv (common/csv.h), RFC 4180.
#include "common/csv.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace podsim {
namespace {

TEST(Csv, QuotesOnlyFieldsThatNeedIt) {
  EXPECT_EQ(csv_quote("plain"), "plain");
  EXPECT_EQ(csv_quote("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_quote("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_quote("two\nlines"), "\"two\nlines\"");
}

TEST(Csv, ParsesQuotedFieldsAndRoundTrips) {
  const auto rows = parse_csv("a,b,c\n1,\"x,y\",\"q\"\"q\"\n", "t.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"1", "x,y", "q\"q"}));
  const std::string field = "m,\"n\"\r\n";
  EXPECT_EQ(parse_csv(csv_quote(field) + "\n", "t.csv")[0][0], field);
}

TEST(Csv, UnclosedQuoteIsAUserErrorNamingTheFile) {
  try {
    parse_csv("a\n\"open\n", "bad.csv");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.location().file, "bad.csv");
  }
}

}  // namespace
}  // namespace podsim
