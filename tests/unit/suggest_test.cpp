// suggest.h: edit distance and the "did you mean" that the wrapper, the configuration and the policy use.
#include "config/suggest.h"

#include <gtest/gtest.h>

namespace blockrun {
namespace {

TEST(Suggest, EditDistanceCountsInsertionsDeletionsSubstitutionsAndSwaps) {
  EXPECT_EQ(edit_distance("abort", "abort"), 0u);
  EXPECT_EQ(edit_distance("abortt", "abort"), 1u);  // an insertion
  EXPECT_EQ(edit_distance("abot", "abort"), 1u);    // a deletion
  EXPECT_EQ(edit_distance("abost", "abort"), 1u);   // a substitution
  EXPECT_EQ(edit_distance("abrot", "abort"), 1u);   // neighbours swapped
  EXPECT_EQ(edit_distance("", "log"), 3u);
  EXPECT_EQ(edit_distance("BLOCK", "block"), 0u);  // case does not count
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(Suggest, ClosestWordIsTheNearestWithinAThirdOfItsLetters) {
  std::vector<std::string> actions = {"block", "block-device", "log", "return", "abort"};
  EXPECT_EQ(closest_word("abortt", actions), "abort");
  EXPECT_EQ(closest_word("blok", actions), "block");
  EXPECT_EQ(closest_word("retrun", actions), "return");
  EXPECT_EQ(closest_word("stencil", actions), std::nullopt);  // nothing near: no suggestion
  EXPECT_EQ(closest_word("abort", actions), std::nullopt);    // the word itself is not a suggestion
  std::vector<std::string> flags = {"--breadcrumbs", "--graph-breadcrumbs", "--block", "--log"};
  EXPECT_EQ(closest_word("--breadcrumb", flags), "--breadcrumbs");
  EXPECT_EQ(closest_word("--bloc", flags), "--block");
  EXPECT_EQ(closest_word("--lo", flags), "--log");
}

TEST(Suggest, DidYouMeanIsEmptyWhereNothingIsNear) {
  std::vector<std::string> variables = {"CUDA_BLOCKRUN_BLOCK", "CUDA_BLOCKRUN_BREADCRUMBS"};
  EXPECT_EQ(did_you_mean("CUDA_BLOCKRUN_BLOK", variables), " (did you mean 'CUDA_BLOCKRUN_BLOCK'?)");
  EXPECT_EQ(did_you_mean("CUDA_BLOCKRUN_VERBOSE", variables), "");
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
