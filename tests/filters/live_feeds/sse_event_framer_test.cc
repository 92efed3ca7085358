// Tests filters/live_feeds/sse_event_framer.cc: a Streams SSE body (the frames the instance and
// the emulator send, integration/streams_emulator/live_feeds.cc) reaches the client in whole
// units only (a data event with its control frame), byte for byte, however the bytes are split;
// the last delivered position is what a resumed read starts from.
#include "filters/live_feeds/sse_event_framer.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace ferry::filters {
namespace {

std::string dataEvent(std::string_view payload) {
  return "event: data\ndata:" + std::string(payload) + "\n\n";
}
std::string control(std::string_view next, bool closed = false) {
  return "event: control\ndata:{\"streamNextOffset\":\"" + std::string(next) +
         "\",\"streamCursor\":\"" + std::string(next) +
         (closed ? "\",\"streamClosed\":true}\n\n" : "\",\"upToDate\":true}\n\n");
}
const std::string kKeepAlive = ": keep-alive\n\n";

// Pushes and fails the test on an error; returns what became deliverable.
std::string pushOk(SseEventFramer& framer, std::string_view bytes) {
  std::string out;
  const Status status = framer.push(bytes, out);
  EXPECT_TRUE(status.isOk()) << status.message();
  return out;
}

// A feed as the instance sends it, and the offsets where a client may be cut off (the ends of
// its units: a control frame with the data before it, or a comment with nothing held).
struct Feed {
  std::string bytes;
  std::set<size_t> boundaries{0};
  void unit(const std::string& u) {
    bytes += u;
    boundaries.insert(bytes.size());
  }
};

Feed sampleFeed() {
  Feed feed;
  feed.unit(control("0000000000000000_0000000000000000"));  // a feed at the tail: control only
  feed.unit(kKeepAlive);
  feed.unit(dataEvent("[{\"a\":1},{\"b\":\"x\\ny\"}]") +
            control("0000000000000000_0000000000000017"));
  feed.unit(dataEvent("aGVsbG8=") + control("0000000000000000_0000000000000022"));
  feed.unit(kKeepAlive);
  feed.unit(dataEvent("[3]") + control("0000000000000000_0000000000000025", true));
  return feed;
}

TEST(SseEventFramerTest, PassesAPairWholeAndRemembersItsPosition) {
  SseEventFramer framer;
  const std::string pair = dataEvent("[1]") + control("0_5");
  EXPECT_EQ(pushOk(framer, pair), pair);
  ASSERT_TRUE(framer.delivered().has_value());
  EXPECT_EQ(framer.delivered()->next_offset, "0_5");
  EXPECT_EQ(framer.delivered()->cursor, "0_5");
  EXPECT_FALSE(framer.closed());
  EXPECT_EQ(framer.heldBytes(), 0u);
  EXPECT_EQ(framer.deliveredBytes(), pair.size());
}

// What a read starting at the delivered position begins with (a shared feed gives it to a read
// that joins there at once): the last control frame alone, byte for byte.
TEST(SseEventFramerTest, RemembersTheLastDeliveredControlFrameVerbatim) {
  SseEventFramer framer;
  EXPECT_EQ(framer.deliveredFrame(), "");
  pushOk(framer, dataEvent("[1]") + kKeepAlive + control("0_5") + kKeepAlive);
  EXPECT_EQ(framer.deliveredFrame(), control("0_5"));
  pushOk(framer, dataEvent("[2]"));  // held: not delivered
  EXPECT_EQ(framer.deliveredFrame(), control("0_5"));
  framer.dropHeld();
  const std::string crlf = "event: control\r\ndata:{\"streamNextOffset\":\"0_7\"}\r\n\r\n";
  pushOk(framer, dataEvent("[2]") + crlf);
  EXPECT_EQ(framer.deliveredFrame(), crlf);
}

TEST(SseEventFramerTest, HoldsADataEventUntilItsControlFrameIsWhole) {
  SseEventFramer framer;
  const std::string data = dataEvent("[1]");
  const std::string ctl = control("0_5");
  EXPECT_EQ(pushOk(framer, data), "");
  EXPECT_EQ(framer.heldBytes(), data.size());
  EXPECT_FALSE(framer.delivered().has_value());
  // All of the control frame but its blank line: still nothing.
  EXPECT_EQ(pushOk(framer, ctl.substr(0, ctl.size() - 1)), "");
  EXPECT_EQ(pushOk(framer, "\n"), data + ctl);
  EXPECT_EQ(framer.delivered()->next_offset, "0_5");
}

TEST(SseEventFramerTest, CommentsPassAtOnceButNeverOvertakeAHeldEvent) {
  SseEventFramer framer;
  EXPECT_EQ(pushOk(framer, kKeepAlive), kKeepAlive);
  const std::string data = dataEvent("[1]");
  EXPECT_EQ(pushOk(framer, data + kKeepAlive), "");
  EXPECT_EQ(pushOk(framer, control("0_5")), data + kKeepAlive + control("0_5"));
}

// The invariant's unit test: split anywhere (two pieces at every position, then one byte at a
// time), the client gets the same bytes, only ever up to a unit's end.
TEST(SseEventFramerTest, BytesSplitAtEveryPositionGiveTheSameUnits) {
  const Feed feed = sampleFeed();
  for (size_t cut = 0; cut <= feed.bytes.size(); ++cut) {
    SseEventFramer framer;
    std::string got = pushOk(framer, std::string_view(feed.bytes).substr(0, cut));
    EXPECT_TRUE(feed.boundaries.count(got.size())) << "cut " << cut << " gave " << got.size();
    got += pushOk(framer, std::string_view(feed.bytes).substr(cut));
    EXPECT_EQ(got, feed.bytes) << "cut " << cut;
    EXPECT_TRUE(framer.closed());
    EXPECT_EQ(framer.delivered()->next_offset, "0000000000000000_0000000000000025");
  }
  SseEventFramer framer;
  std::string got;
  for (char c : feed.bytes) {
    got += pushOk(framer, std::string_view(&c, 1));
    EXPECT_TRUE(feed.boundaries.count(got.size())) << got.size();
  }
  EXPECT_EQ(got, feed.bytes);
}

// A feed that ends in the middle of a pair: what was held is dropped, the position stays at
// the last delivered control frame, and a read resumed there gives the rest whole: the client's
// bytes equal one direct read's (no gap, no event twice).
TEST(SseEventFramerTest, AResumeFromTheDeliveredPositionContinuesWithoutGapOrDuplicate) {
  const std::string first = dataEvent("[1]") + control("0_3");
  const std::string second = dataEvent("[2]") + control("0_6");
  const std::string third = dataEvent("[3]") + control("0_9");
  const std::string direct = first + second + third;
  for (size_t cut = first.size(); cut < first.size() + second.size(); ++cut) {
    SseEventFramer framer;
    std::string client = pushOk(framer, std::string_view(direct).substr(0, cut));
    EXPECT_EQ(client, first);
    EXPECT_EQ(framer.dropHeld(), cut - first.size());
    ASSERT_EQ(framer.delivered()->next_offset, "0_3");
    // The resumed read from 0_3: the instance starts again with a control frame at the tail
    // it is at, or with the data after 0_3.
    client += pushOk(framer, second + third);
    EXPECT_EQ(client, direct) << "cut " << cut;
  }
}

TEST(SseEventFramerTest, CrLfAndCrLineEndsAndMultiLineData) {
  for (std::string_view eol : {"\r\n", "\r"}) {
    const std::string e(eol);
    const std::string feed = "event: data" + e + "data:[1," + e + "data:2]" + e + e +
                             "event:control" + e + "data:{\"streamNextOffset\":" + e +
                             "data:\"0_4\"}" + e + e;
    SseEventFramer framer;
    std::string got;
    for (char c : feed) got += pushOk(framer, std::string_view(&c, 1));
    // Whole at its last line end: a CR is not kept waiting for a possible LF.
    EXPECT_EQ(got, feed);
    ASSERT_TRUE(framer.delivered().has_value());
    EXPECT_EQ(framer.delivered()->next_offset, "0_4");
    EXPECT_EQ(framer.delivered()->cursor, "");
    for (size_t cut = 0; cut <= feed.size(); ++cut) {
      SseEventFramer split;
      std::string both = pushOk(split, std::string_view(feed).substr(0, cut));
      both += pushOk(split, std::string_view(feed).substr(cut));
      EXPECT_EQ(both, feed) << "cut " << cut;
      EXPECT_EQ(split.delivered().value_or(FeedPosition{}).next_offset, "0_4") << "cut " << cut;
    }
  }
}

TEST(SseEventFramerTest, RecognisesOnlyATrueStreamClosed) {
  SseEventFramer framer;
  pushOk(framer, "event: control\ndata:{\"streamNextOffset\":\"0_1\",\"streamClosed\":false}\n\n");
  EXPECT_FALSE(framer.closed());
  pushOk(framer, control("0_1", true));
  EXPECT_TRUE(framer.closed());
}

TEST(SseEventFramerTest, AControlFrameWithoutAnOffsetFailsTheFeedAndReleasesNothing) {
  for (const char* bad : {"event: control\ndata:{\"streamCursor\":\"1\"}\n\n",
                          "event: control\ndata:{\"streamNextOffset\":5}\n\n",
                          "event: control\ndata:not json\n\n", "event: control\n\n"}) {
    SseEventFramer framer;
    std::string out;
    EXPECT_TRUE(framer.push(dataEvent("[1]"), out).isOk());
    const Status status = framer.push(bad, out);
    EXPECT_EQ(status.code(), StatusCode::ProtocolError) << bad;
    EXPECT_EQ(out, "") << bad;
    // It stays failed: a feed whose position is unknown cannot be resumed.
    EXPECT_EQ(framer.push(control("0_1"), out).code(), StatusCode::ProtocolError);
    EXPECT_EQ(out, "");
    EXPECT_FALSE(framer.delivered().has_value());
  }
}

}  // namespace
}  // namespace ferry::filters
