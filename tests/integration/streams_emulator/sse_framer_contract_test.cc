// The live-feeds framer (filters/live_feeds/sse_event_framer.h) against the emulator's real SSE
// feeds: it finds every control frame's offset, and a feed cut off and read again from the
// offset it delivered gives the records a direct read gives, none twice, none missing
// (docs/live-feeds.md, "The invariant": records and offsets compared, not block boundaries).
#include "filters/live_feeds/sse_event_framer.h"
#include "tests/integration/streams_emulator/emulator_fixture.h"
#include "tests/support/sse/sse_records.h"

namespace ferry::testing {
namespace {

// Reads frames from an open SSE response into `framer` (appending what it delivers to
// `client`) until it has delivered the control frame whose offset is `offset`.
::testing::AssertionResult readUntilDelivered(HttpClient& c, filters::SseEventFramer& framer,
                                              std::string& client, const std::string& offset) {
  while (!framer.delivered() || framer.delivered()->next_offset != offset) {
    auto frame = c.readBodyUntil("\n\n");
    if (!frame.isOk()) {
      return ::testing::AssertionFailure()
             << "waiting for offset " << offset << ": " << frame.status().message();
    }
    const Status status = framer.push(*frame, client);
    if (!status.isOk()) return ::testing::AssertionFailure() << status.message();
  }
  return ::testing::AssertionSuccess();
}

TEST_F(EmulatorTest, AFeedResumedAtTheFramersOffsetGivesTheDirectReadsRecords) {
  const std::string name = ownedName("framer");
  createStream(name, "application/json");
  ASSERT_EQ(request("POST", "/v1/stream/" + name, {}, R"([{"n":1}])")->status, 204);

  filters::SseEventFramer framer;
  std::string client;
  {
    HttpClient first;
    ASSERT_TRUE(first.connect(port_).isOk());
    ASSERT_TRUE(first.sendRequest("GET", "/v1/stream/" + name + "?offset=-1&live=sse").isOk());
    ASSERT_EQ(first.readResponseHead()->status, 200);
    ASSERT_TRUE(readUntilDelivered(first, framer, client, "0000000000000001"));
    ASSERT_EQ(request("POST", "/v1/stream/" + name, {}, R"([{"n":2}])")->status, 204);
    ASSERT_TRUE(readUntilDelivered(first, framer, client, "0000000000000002"));
    first.close();  // the feed ends (as at a hand-over); records keep coming
  }
  framer.dropHeld();
  ASSERT_EQ(request("POST", "/v1/stream/" + name, {}, R"([{"n":3}])")->status, 204);
  ASSERT_EQ(request("POST", "/v1/stream/" + name, {}, R"([{"n":4}])")->status, 204);

  HttpClient resumed;
  ASSERT_TRUE(resumed.connect(port_).isOk());
  ASSERT_TRUE(resumed
                  .sendRequest("GET", "/v1/stream/" + name + "?offset=" +
                                          framer.delivered()->next_offset + "&live=sse")
                  .isOk());
  ASSERT_EQ(resumed.readResponseHead()->status, 200);
  ASSERT_TRUE(readUntilDelivered(resumed, framer, client, "0000000000000004"));

  filters::SseEventFramer direct_framer;
  std::string direct;
  HttpClient reader;
  ASSERT_TRUE(reader.connect(port_).isOk());
  ASSERT_TRUE(reader.sendRequest("GET", "/v1/stream/" + name + "?offset=-1&live=sse").isOk());
  ASSERT_EQ(reader.readResponseHead()->status, 200);
  ASSERT_TRUE(readUntilDelivered(reader, direct_framer, direct, "0000000000000004"));

  EXPECT_EQ(sseRecords(client), R"({"n":1},{"n":2},{"n":3},{"n":4})");
  EXPECT_EQ(sseRecords(client), sseRecords(direct));
}

}  // namespace
}  // namespace ferry::testing
