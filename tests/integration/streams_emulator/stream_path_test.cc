// The emulator's reading of stream names (integration/streams_emulator/stream_path.h) and the
// owner-forwarding filter's (filters/owner_forwarding/stream_key.h) are written apart, so a
// misreading in one shows here as a disagreement instead of hiding in both.

#include "integration/streams_emulator/stream_path.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "filters/owner_forwarding/stream_key.h"
#include "integration/streams_emulator/route.h"

namespace ferry::streams {
namespace {

TEST(StreamPathTest, ReadsTheNameUpToTheSubResource) {
  EXPECT_EQ(readProductTarget("orders").name, "orders");
  EXPECT_EQ(readProductTarget("orders/records").name, "orders");
  EXPECT_EQ(readProductTarget("orders/records").rest, "records");
  EXPECT_EQ(readProductTarget("a/b/records:batch").name, "a/b");
  EXPECT_EQ(readProductTarget("a/b/records:batch").rest, "records:batch");
  EXPECT_EQ(readProductTarget("records/records").name, "records");  // the first segment is a name
  EXPECT_EQ(readProductTarget("orders:seal").name, "orders");
  EXPECT_TRUE(readProductTarget("orders:seal").verb);
  EXPECT_FALSE(readProductTarget("orders/records").verb);
  EXPECT_EQ(readProductTarget("a:b/c").name, "a:b/c");  // a colon before the last segment stays
}

TEST(StreamPathTest, DecodesPercentOnce) {
  EXPECT_EQ(decodePercentOnce("a%2Fb"), "a/b");
  EXPECT_EQ(decodePercentOnce("a%252F"), "a%2F");
  EXPECT_EQ(decodePercentOnce("bad%zz%4"), "bad%zz%4");
}

// The emulator's name for a path (through its router) against the filter's stream key.
TEST(StreamPathTest, TheEmulatorAndTheFilterNameEveryStreamAlike) {
  const char* paths[] = {
      "/v1/stream/orders",           "/v1/stream/a/b/c",
      "/v1/stream/sp%20ace",         "/v1/stream/x%2Fy",
      "/v1/streams/orders",          "/v1/streams/orders/records",
      "/v1/streams/a/b/records",     "/v1/streams/o/records:batch",
      "/v1/streams/o/records:sse",   "/v1/streams/o/consumers/c1",
      "/v1/streams/o/producers/p1",  "/v1/streams/o/watches",
      "/v1/streams/o/forks/f",       "/v1/streams/orders:seal",
      "/v1/streams/records/records", "/v1/streams/a%2Fb/records",
      "/v1/streams/a:b/c",           "/v1/streams/x/recordsy/records",
  };
  for (const char* path : paths) {
    const Route route = parseRoute("GET", path, "");
    const auto key = filters::streamKey(path);
    ASSERT_TRUE(key.has_value()) << path;
    EXPECT_EQ(route.name, *key) << path;
  }
}

}  // namespace
}  // namespace ferry::streams
