// `fault` (fault injection, filters/fault/): off by default, every key with its range, the
// errors naming the exact key, the check against the stream timeouts, and /config's rendering.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "config/config_json.h"
#include "tests/config/config_test_util.h"

namespace ferry::config {
namespace {

using namespace std::chrono_literals;

TEST(FaultConfigTest, OffByDefaultAndOffUnlessEnabledIsTrue) {
  FerryConfig c = configOf("instance_name: a\n");
  EXPECT_FALSE(c.fault.enabled);
  EXPECT_EQ(c.fault.header, "x-ferry-fault");
  EXPECT_EQ(c.fault.abort.percent, 0u);
  EXPECT_EQ(c.fault.abort.status, 503u);
  EXPECT_EQ(c.fault.delay.percent, 0u);
  EXPECT_EQ(c.fault.delay.duration, 1s);
  // A section with percentages but without `enabled: true` injects nothing.
  c = configOf("instance_name: a\nfault: {abort: {percent: 100}}\n");
  EXPECT_FALSE(c.fault.enabled);
  EXPECT_EQ(c.fault.abort.percent, 100u);
}

TEST(FaultConfigTest, EveryKeyIsRead) {
  FerryConfig c = configOf(
      "instance_name: a\n"
      "fault:\n"
      "  enabled: true\n"
      "  header: X-Chaos-Test\n"
      "  abort: {percent: 25, status: 429}\n"
      "  delay: {percent: 50, duration: 250ms}\n");
  EXPECT_TRUE(c.fault.enabled);
  EXPECT_EQ(c.fault.header, "x-chaos-test") << "kept lower-cased";
  EXPECT_EQ(c.fault.abort.percent, 25u);
  EXPECT_EQ(c.fault.abort.status, 429u);
  EXPECT_EQ(c.fault.delay.percent, 50u);
  EXPECT_EQ(c.fault.delay.duration, 250ms);
}

TEST(FaultConfigTest, ErrorsNameTheKey) {
  EXPECT_ONE_ERROR("instance_name: a\nfault: {enabled: yes please}\n",
                   "fault.enabled: must be true or false");
  EXPECT_ONE_ERROR("instance_name: a\nfault: {abort: {percent: 101}}\n",
                   "fault.abort.percent: must be an integer 0..100");
  EXPECT_ONE_ERROR("instance_name: a\nfault: {abort: {status: 200}}\n",
                   "fault.abort.status: must be an integer 400..599");
  EXPECT_ONE_ERROR("instance_name: a\nfault: {delay: {percent: 1000}}\n",
                   "fault.delay.percent: must be an integer 0..100");
  EXPECT_ONE_ERROR("instance_name: a\nfault: {delay: {duration: 0ms}}\n",
                   "fault.delay.duration: must be at least 1ms");
  EXPECT_ONE_ERROR("instance_name: a\nfault: {delay: {duration: soon}}\n",
                   "fault.delay.duration: invalid duration \"soon\"");
  EXPECT_ONE_ERROR("instance_name: a\nfault: {header: \"x fault\"}\n",
                   "fault.header: must be a header field name");
  EXPECT_ONE_ERROR("instance_name: a\nfault: {header: \"\"}\n",
                   "fault.header: must be a header field name");
  EXPECT_ONE_ERROR("instance_name: a\nfault: {abort: {percent: 1, code: 1}}\n",
                   "fault.abort.code: unknown key");
  EXPECT_ONE_ERROR("instance_name: a\nfault: {delay: {percent: 1, fixed_delay: 1s}}\n",
                   "fault.delay.fixed_delay: unknown key");
  EXPECT_ONE_ERROR("instance_name: a\nfault: {percent: 1}\n", "fault.percent: unknown key");
  EXPECT_ONE_ERROR("instance_name: a\nfault: [abort]\n", "fault: must be a mapping");
}

TEST(FaultConfigTest, ADelayMustEndBeforeTheStreamTimesOut) {
  EXPECT_ONE_ERROR(
      "instance_name: a\ntimeouts: {stream_idle: 10s}\n"
      "fault: {enabled: true, delay: {percent: 1, duration: 10s}}\n",
      "fault.delay.duration: must be shorter than timeouts.stream_idle (10s)");
  EXPECT_ONE_ERROR(
      "instance_name: a\ntimeouts: {response: 5s}\n"
      "fault: {enabled: true, delay: {percent: 1, duration: 6s}}\n",
      "fault.delay.duration: must be shorter than timeouts.response (5s)");
  // Not checked when no delay can happen.
  configOf(
      "instance_name: a\ntimeouts: {stream_idle: 10s}\n"
      "fault: {enabled: false, delay: {percent: 1, duration: 10s}}\n");
  configOf(
      "instance_name: a\ntimeouts: {stream_idle: 10s}\n"
      "fault: {enabled: true, delay: {percent: 0, duration: 10s}}\n");
}

TEST(FaultConfigTest, ConfigEndpointShowsTheSection) {
  FerryConfig c = configOf(
      "instance_name: a\nfault: {enabled: true, abort: {percent: 5}, delay: {duration: 2s}}\n");
  rapidjson::Document doc;
  doc.Parse(renderConfigJson(c, RuntimeFacts{}).c_str());
  ASSERT_FALSE(doc.HasParseError());
  const auto& fault = doc["config"]["fault"];
  EXPECT_TRUE(fault["enabled"].GetBool());
  EXPECT_STREQ(fault["header"].GetString(), "x-ferry-fault");
  EXPECT_EQ(fault["abort"]["percent"].GetUint(), 5u);
  EXPECT_EQ(fault["abort"]["status"].GetUint(), 503u);
  EXPECT_EQ(fault["delay"]["percent"].GetUint(), 0u);
  EXPECT_STREQ(fault["delay"]["duration"].GetString(), "2s");
}

}  // namespace
}  // namespace ferry::config
