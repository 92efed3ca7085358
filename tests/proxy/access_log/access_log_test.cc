#include "proxy/access_log/access_log.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

namespace ferry::access_log {
namespace {

Entry sample() {
  Entry e;
  e.start = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'764'600'000'123));
  e.duration = std::chrono::microseconds(1900);
  e.client = "127.0.0.1:5000";
  e.method = "POST";
  e.path = "/v1/stream/a\"b\n";
  e.protocol = "HTTP/1.1";
  e.status = 409;
  e.request_id = "id-1";
  e.upstream = "local";
  e.forward = ForwardOutcome::Skipped;
  e.forward_reason = "marked";
  e.owner = "inst-2";
  e.end = "ok";
  return e;
}

TEST(AccessLogFormatTest, JsonRecordsParseBackToWhatWasLogged) {
  const std::string line = formatJson(sample());
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;  // one record, one line
  rapidjson::Document doc;
  doc.Parse(line.c_str());
  ASSERT_FALSE(doc.HasParseError()) << line;
  EXPECT_STREQ(doc["start"].GetString(), "2025-12-01T14:40:00.123Z");
  EXPECT_DOUBLE_EQ(doc["duration_ms"].GetDouble(), 1.9);
  EXPECT_TRUE(doc["upstream_ttfb_ms"].IsNull());
  EXPECT_STREQ(doc["path"].GetString(), "/v1/stream/a\"b\n");
  EXPECT_EQ(doc["status"].GetInt(), 409);
  EXPECT_STREQ(doc["forward"].GetString(), "skipped");
  EXPECT_STREQ(doc["forward_reason"].GetString(), "marked");
  EXPECT_TRUE(doc["user_agent"].IsNull());
  EXPECT_FALSE(doc.HasMember("peer"));
  EXPECT_FALSE(doc.HasMember("error"));
}

TEST(AccessLogFormatTest, TextRecordsQuoteStrings) {
  const std::string line = formatText(sample());
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_NE(line.find("path=\"/v1/stream/a\\\"b\\n\""), std::string::npos) << line;
  EXPECT_NE(line.find(" status=409 "), std::string::npos) << line;
  EXPECT_NE(line.find(" user_agent=- "), std::string::npos) << line;
}

TEST(AccessLogTest, AFailedWriteIsCounted) {
  auto log = AccessLog::open("/dev/full");  // every write fails with ENOSPC
  ASSERT_TRUE(log.isOk()) << log.status().message();
  stats::Counter failures;
  (*log)->setWriteFailureCounter(&failures);
  (*log)->write(sample());
  (*log)->write(sample());
  EXPECT_EQ(failures.value(), 2u);
}

}  // namespace
}  // namespace ferry::access_log
