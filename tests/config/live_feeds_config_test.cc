// live_feeds: resume, resume_deadline and the sharing keys (docs/configuration.md).
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

TEST(LiveFeedsConfigTest, SharingIsOffByDefault) {
  const FerryConfig c = configOf("instance_name: a\n");
  EXPECT_FALSE(c.live_feeds.share);
  EXPECT_EQ(c.live_feeds.subscriber_buffer, 256u * 1024);
  EXPECT_TRUE(c.live_feeds.share_key_headers.empty());
}

TEST(LiveFeedsConfigTest, ReadsTheSharingKeysWithHeaderNamesLowerCased) {
  const FerryConfig c = configOf(
      "instance_name: a\nlive_feeds: {share: true, subscriber_buffer: 65536, "
      "share_key_headers: [X-Tenant, x-api-key]}\n");
  EXPECT_TRUE(c.live_feeds.share);
  EXPECT_EQ(c.live_feeds.subscriber_buffer, 65536u);
  EXPECT_EQ(c.live_feeds.share_key_headers, (std::vector<std::string>{"x-tenant", "x-api-key"}));
}

TEST(LiveFeedsConfigTest, ErrorsNameTheKey) {
  EXPECT_ONE_ERROR("instance_name: a\nlive_feeds: {resume: maybe}\n", "live_feeds.resume: ");
  EXPECT_ONE_ERROR("instance_name: a\nlive_feeds: {resume_deadline: 10ms}\n",
                   "live_feeds.resume_deadline: ");
  EXPECT_ONE_ERROR("instance_name: a\nlive_feeds: {resume_deadline: 2h}\n",
                   "live_feeds.resume_deadline: ");
  EXPECT_ONE_ERROR("instance_name: a\nlive_feeds: {shared: true}\n",
                   "live_feeds.shared: unknown key");
  EXPECT_ONE_ERROR("instance_name: a\nlive_feeds: {share: 1}\n", "live_feeds.share: ");
  EXPECT_ONE_ERROR("instance_name: a\nlive_feeds: {subscriber_buffer: 100}\n",
                   "live_feeds.subscriber_buffer: ");
  EXPECT_ONE_ERROR("instance_name: a\nlive_feeds: {share_key_headers: [x-tenant, \"a b\"]}\n",
                   "live_feeds.share_key_headers[1]: ");
  EXPECT_ONE_ERROR("instance_name: a\nlive_feeds: {share_key_headers: x-tenant}\n",
                   "live_feeds.share_key_headers: ");
  EXPECT_ONE_ERROR("instance_name: a\nlive_feeds: [1]\n", "live_feeds: ");
}

}  // namespace
}  // namespace ferry::config
