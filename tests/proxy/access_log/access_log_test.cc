#include "proxy/access_log/access_log.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

namespace ferry::access_log {
namespace {

// Fields as a filter declares them (owner forwarding's shape: filters/owner_forwarding/
// forward_log.cc).
InfoFields filterFields() {
  return {InfoField::withDefault("forward", "none"), InfoField::optional("forward_reason"),
          InfoField::nullable("owner"), InfoField::optional("route")};
}

StreamInfo sampleInfo() {
  StreamInfo info;
  info.set("owner", "inst-2");
  info.set("forward", "skipped");
  info.set("forward_reason", "marked");
  return info;
}
const StreamInfo kSampleInfo = sampleInfo();

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
  e.info = &kSampleInfo;
  e.end = "ok";
  return e;
}

TEST(AccessLogFormatTest, JsonRecordsParseBackToWhatWasLogged) {
  const std::string line = formatJson(sample(), filterFields());
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
  const std::string line = formatText(sample(), filterFields());
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_NE(line.find("path=\"/v1/stream/a\\\"b\\n\""), std::string::npos) << line;
  EXPECT_NE(line.find(" status=409 "), std::string::npos) << line;
  EXPECT_NE(line.find(" user_agent=- "), std::string::npos) << line;
}

// The filters' fields come between "upstream" and "end", in the declared order (not the order
// written); one nobody wrote renders as declared: its default, null, or not at all.
TEST(AccessLogFormatTest, InfoFieldsRenderInDeclaredOrderWithTheirAbsentForms) {
  Entry e = sample();
  EXPECT_NE(formatJson(e, filterFields())
                .find(R"("upstream":"local","forward":"skipped","forward_reason":"marked",)"
                      R"("owner":"inst-2","end":"ok"})"),
            std::string::npos)
      << formatJson(e, filterFields());
  e.info = nullptr;  // no filter wrote anything (or a codec refusal)
  EXPECT_NE(formatJson(e, filterFields())
                .find(R"("upstream":"local","forward":"none","owner":null,"end":"ok"})"),
            std::string::npos)
      << formatJson(e, filterFields());
  EXPECT_NE(
      formatText(e, filterFields()).find(R"(upstream="local" forward="none" owner=- end="ok")"),
      std::string::npos)
      << formatText(e, filterFields());
  StreamInfo routed;
  routed.set("route", "right");
  e.info = &routed;
  EXPECT_NE(formatJson(e, filterFields()).find(R"("forward":"none","owner":null,"route":"right",)"),
            std::string::npos)
      << formatJson(e, filterFields());
  EXPECT_EQ(formatJson(e).find("route"), std::string::npos) << "undeclared: not rendered";
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
