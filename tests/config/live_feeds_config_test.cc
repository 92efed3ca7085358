// live_feeds: resume and resume_deadline (docs/configuration.md).
#include <gtest/gtest.h>

#include "tests/config/config_test_util.h"

namespace ferry::config {
namespace {

TEST(LiveFeedsConfigTest, ResumeIsOnWithA30sDeadlineByDefault) {
  const FerryConfig c = configOf("instance_name: a\n");
  EXPECT_TRUE(c.live_feeds.resume);
  EXPECT_EQ(c.live_feeds.resume_deadline, Millis(30'000));
}

TEST(LiveFeedsConfigTest, ReadsBothKeys) {
  const FerryConfig c =
      configOf("instance_name: a\nlive_feeds: {resume: false, resume_deadline: 5s}\n");
  EXPECT_FALSE(c.live_feeds.resume);
  EXPECT_EQ(c.live_feeds.resume_deadline, Millis(5'000));
}

TEST(LiveFeedsConfigTest, ErrorsNameTheKey) {
  EXPECT_ONE_ERROR("instance_name: a\nlive_feeds: {resume: maybe}\n", "live_feeds.resume: ");
  EXPECT_ONE_ERROR("instance_name: a\nlive_feeds: {resume_deadline: 10ms}\n",
                   "live_feeds.resume_deadline: ");
  EXPECT_ONE_ERROR("instance_name: a\nlive_feeds: {resume_deadline: 2h}\n",
                   "live_feeds.resume_deadline: ");
  EXPECT_ONE_ERROR("instance_name: a\nlive_feeds: {share: true}\n",
                   "live_feeds.share: unknown key");
  EXPECT_ONE_ERROR("instance_name: a\nlive_feeds: [1]\n", "live_feeds: ");
}

}  // namespace
}  // namespace ferry::config
