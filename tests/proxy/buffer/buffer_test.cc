// Tests proxy/buffer/buffer.cc: the basics, and the property the active stream's replay copy
// relies on: a reference taken with addReference() keeps its bytes whatever later happens to
// the source (drained, moved on and drained elsewhere, refilled). And the growth watcher a
// connection's output relies on to write what codecs append: told on every way bytes are
// added, not on drains, staying with the Buffer object.

#include "proxy/buffer/buffer.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferry {
namespace {

TEST(BufferTest, AddLengthToString) {
  Buffer b;
  EXPECT_TRUE(b.empty());
  b.add("hello ");
  b.add("world", 5);
  EXPECT_EQ(b.length(), 11u);
  EXPECT_FALSE(b.empty());
  EXPECT_EQ(b.toString(), "hello world");
  // toString does not consume.
  EXPECT_EQ(b.length(), 11u);
}

TEST(BufferTest, DrainAndClear) {
  Buffer b;
  b.add("abcdef");
  b.drain(2);
  EXPECT_EQ(b.toString(), "cdef");
  b.clear();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.toString(), "");
}

TEST(BufferTest, MoveAllLeavesSourceEmpty) {
  Buffer a, b;
  a.add("123");
  b.add("abc");
  b.move(a);
  EXPECT_EQ(b.toString(), "abc123");
  EXPECT_TRUE(a.empty());
}

TEST(BufferTest, MovePrefix) {
  Buffer a, b;
  a.add("0123456789");
  b.move(a, 4);
  EXPECT_EQ(b.toString(), "0123");
  EXPECT_EQ(a.toString(), "456789");
}

TEST(BufferTest, MoveConstructionAndAssignment) {
  Buffer a;
  a.add("xyz");
  Buffer b(std::move(a));
  EXPECT_EQ(b.toString(), "xyz");
  EXPECT_TRUE(a.empty());
  a.add("still usable");  // a moved-from buffer is a valid empty buffer
  EXPECT_EQ(a.toString(), "still usable");

  Buffer c;
  c.add("old");
  c = std::move(b);
  EXPECT_EQ(c.toString(), "xyz");
}

TEST(BufferTest, LinearizeAcrossChains) {
  Buffer b;
  std::string big(10000, 'a');
  b.add(big);
  b.add("tail");
  Buffer other;
  other.add("more");
  b.move(other);
  EXPECT_EQ(b.linearize(), big + "tailmore");
  EXPECT_EQ(b.linearize(3), "aaa");
  Buffer empty;
  EXPECT_TRUE(empty.linearize().empty());
}

TEST(BufferTest, CopyFromLeavesSourceUnchanged) {
  Buffer src, dst;
  src.add("abc");
  Buffer more;
  more.add(std::string(5000, 'z'));
  src.move(more);
  dst.add(">");
  dst.copyFrom(src);
  EXPECT_EQ(dst.toString(), ">abc" + std::string(5000, 'z'));
  EXPECT_EQ(src.toString(), "abc" + std::string(5000, 'z'));
  // A real copy: draining the source does not touch the copy.
  src.clear();
  EXPECT_EQ(dst.length(), 5004u);
}

TEST(BufferTest, BorrowDoesNotFree) {
  evbuffer* raw = evbuffer_new();
  {
    Buffer borrowed = Buffer::borrow(raw);
    borrowed.add("kept");
  }
  EXPECT_EQ(evbuffer_get_length(raw), 4u);
  evbuffer_free(raw);
}

// ---- addReference: the replay property -------------------------------------------------------

TEST(BufferReferenceTest, ReferenceSurvivesDrainingTheSource) {
  Buffer source, kept;
  source.add("first chunk");
  ASSERT_TRUE(kept.addReference(source));
  EXPECT_EQ(source.toString(), "first chunk") << "the source keeps its bytes";
  source.clear();
  EXPECT_EQ(kept.toString(), "first chunk");
}

TEST(BufferReferenceTest, ReferenceSurvivesSourceMovedOnAndDrained) {
  // What the stream does: keep a reference, hand the data to the router, which moves it into
  // its connection's output, which is then written and drained.
  Buffer kept;
  Buffer output;
  {
    Buffer source;
    source.add("body-part-1");
    ASSERT_TRUE(kept.addReference(source));
    output.move(source);
    EXPECT_TRUE(source.empty());
  }  // the source buffer itself is gone
  EXPECT_EQ(output.toString(), "body-part-1");
  output.clear();
  EXPECT_EQ(kept.toString(), "body-part-1");
}

TEST(BufferReferenceTest, PartialDrainOfSourceDoesNotShiftReference) {
  Buffer source, kept;
  source.add("0123456789");
  ASSERT_TRUE(kept.addReference(source));
  source.drain(3);
  EXPECT_EQ(source.toString(), "3456789");
  EXPECT_EQ(kept.toString(), "0123456789");
}

TEST(BufferReferenceTest, SourceRefilledAfterReferenceDoesNotLeakIntoReference) {
  Buffer source, kept;
  source.add("abc");
  ASSERT_TRUE(kept.addReference(source));
  source.add("def");  // the shared chain is immutable: new bytes go to a new chain
  EXPECT_EQ(kept.toString(), "abc");
  EXPECT_EQ(source.toString(), "abcdef");
  source.clear();
  source.add("zzz");
  EXPECT_EQ(kept.toString(), "abc");
}

TEST(BufferReferenceTest, SeveralReferencesAccumulateInOrder) {
  Buffer kept;
  for (std::string part : {"a1", "b22", "c333"}) {
    Buffer source;
    source.add(part);
    ASSERT_TRUE(kept.addReference(source));
    Buffer sink;
    sink.move(source);
    sink.clear();
  }
  EXPECT_EQ(kept.toString(), "a1b22c333");
}

TEST(BufferReferenceTest, ReferenceOfReferenceFailsAndCopyFromWorks) {
  Buffer source, kept;
  source.add("payload");
  ASSERT_TRUE(kept.addReference(source));
  source.clear();

  // kept holds references: it cannot itself be referenced, so callers copy.
  Buffer second;
  EXPECT_FALSE(second.addReference(kept));
  EXPECT_TRUE(second.empty()) << "a failed addReference adds nothing";

  Buffer copy;
  copy.copyFrom(kept);
  EXPECT_EQ(copy.toString(), "payload");
  EXPECT_EQ(kept.toString(), "payload") << "copyFrom leaves the source unchanged";
  kept.clear();
  EXPECT_EQ(copy.toString(), "payload") << "the copy owns its bytes";
}

TEST(BufferReferenceTest, CopyFromMixedReferenceAndOwnedChains) {
  Buffer kept;
  kept.add("own-");
  Buffer source;
  source.add("ref-");
  ASSERT_TRUE(kept.addReference(source));
  kept.add("own2");
  source.clear();
  Buffer copy;
  copy.copyFrom(kept);
  EXPECT_EQ(copy.toString(), "own-ref-own2");
}

TEST(BufferReferenceTest, ReferenceToEmptySourceAddsNothing) {
  Buffer source, kept;
  EXPECT_TRUE(kept.addReference(source));
  EXPECT_TRUE(kept.empty());
}

struct CountingWatcher : Buffer::GrowthWatcher {
  void onBufferGrew() override { ++grew; }
  int grew = 0;
};

TEST(BufferGrowthWatcherTest, ToldOnEveryWayBytesAreAdded) {
  Buffer watched;
  CountingWatcher watcher;
  watched.watchGrowth(&watcher);
  Buffer source;
  int expected = 0;
  // Each step adds bytes to `watched` one way; the watcher hears of each.
  const std::vector<std::pair<const char*, std::function<void()>>> ways = {
      {"add(view)", [&] { watched.add(std::string_view("ab")); }},
      {"add(data, size)", [&] { watched.add("cd", 2); }},
      {"move(all)",
       [&] {
         source.add("ef");
         watched.move(source);
       }},
      {"move(prefix)",
       [&] {
         source.add("ghij");
         watched.move(source, 2);
       }},
      {"addReference", [&] { ASSERT_TRUE(watched.addReference(source)); }},
      {"copyFrom", [&] { watched.copyFrom(source); }},
  };
  for (const auto& [name, add] : ways) {
    add();
    EXPECT_EQ(watcher.grew, ++expected) << name;
  }
  EXPECT_EQ(watched.toString(), "abcdefghijij");
}

TEST(BufferGrowthWatcherTest, NotToldOfDrainsOrOfNothingAdded) {
  Buffer watched;
  CountingWatcher watcher;
  watched.watchGrowth(&watcher);
  watched.add("abc");
  watched.drain(1);
  watched.clear();
  Buffer empty;
  watched.move(empty);
  watched.move(empty, 4);
  EXPECT_TRUE(watched.addReference(empty));
  watched.copyFrom(empty);
  EXPECT_EQ(watcher.grew, 1);
}

TEST(BufferGrowthWatcherTest, StaysWithTheBufferObjectAcrossMoves) {
  Buffer watched;
  CountingWatcher watcher;
  watched.watchGrowth(&watcher);
  watched.add("abc");
  Buffer moved_to(std::move(watched));  // the bytes go, the watch stays behind
  moved_to.add("d");
  EXPECT_EQ(watcher.grew, 1);
  Buffer incoming;
  incoming.add("xyz");
  watched = std::move(incoming);  // bytes moved into the watched buffer are growth too
  EXPECT_EQ(watcher.grew, 2);
  watched.watchGrowth(nullptr);
  watched.add("q");
  EXPECT_EQ(watcher.grew, 2);
  EXPECT_EQ(watched.toString(), "xyzq");
}

}  // namespace
}  // namespace ferry
