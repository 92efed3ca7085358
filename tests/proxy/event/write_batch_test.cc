// WriteBatch: many sockets' writes in one io_uring submission, each result told before
// submit() returns. Real sockets (socketpairs). Skipped where the kernel refuses io_uring (the
// fallback, each socket written on its own, is what every other test of the tree then runs).

#include "proxy/event/write_batch.h"

#include <event2/event.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>
#include <vector>

#include "proxy/event/dispatcher.h"

namespace ferry::event {
namespace {

// A non-blocking socketpair; `writer` writes `bytes` from its end and records what it was told.
struct Writer : BatchedWriter {
  int fd = -1;
  int peer = -1;
  std::string bytes;
  std::vector<int> results;
  std::function<void()> on_result;  // runs after the result is recorded

  explicit Writer(std::string data) : bytes(std::move(data)) {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    fd = fds[0];
    peer = fds[1];
    EXPECT_EQ(::fcntl(fd, F_SETFL, O_NONBLOCK), 0);
  }
  ~Writer() {
    if (fd >= 0) ::close(fd);
    if (peer >= 0) ::close(peer);
  }
  int prepareBatchedWrite(iovec* iov, int max) override {
    if (bytes.empty() || max < 2) return 0;
    // Two pieces: the batch writes a vector, not one buffer.
    const size_t half = bytes.size() / 2;
    iov[0] = {bytes.data(), half};
    iov[1] = {bytes.data() + half, bytes.size() - half};
    return 2;
  }
  void onBatchedWrite(int result) override {
    results.push_back(result);
    if (on_result) on_result();
  }
  int batchedWriteFd() const override { return fd; }
  std::string received() const {
    std::string out;
    char buf[65536];
    ssize_t n;
    while ((n = ::recv(peer, buf, sizeof(buf), MSG_DONTWAIT)) > 0) out.append(buf, n);
    return out;
  }
};

// `w` was told one result, all of its bytes, and its peer got them whole.
void expectWrittenWhole(const Writer& w) {
  SCOPED_TRACE("writer of \"" + w.bytes + "\"");
  EXPECT_EQ(w.results, std::vector<int>{static_cast<int>(w.bytes.size())});
  EXPECT_EQ(w.received(), w.bytes);
}

#define SKIP_WITHOUT_IO_URING(batch) \
  if (!(batch).available()) GTEST_SKIP() << "io_uring is not usable on this kernel"

TEST(WriteBatchTest, ManySocketsAreWrittenInOneSubmission) {
  WriteBatch batch;
  SKIP_WITHOUT_IO_URING(batch);
  std::vector<std::unique_ptr<Writer>> writers;
  for (int i = 0; i < 5; ++i) {
    writers.push_back(std::make_unique<Writer>("answer-" + std::to_string(i)));
    batch.queue(*writers.back());
  }
  EXPECT_EQ(batch.submit(), 1);
  EXPECT_EQ(batch.submissions(), 1u);
  EXPECT_EQ(batch.writes(), 5u);
  for (int i = 0; i < 5; ++i) {
    const std::string expected = "answer-" + std::to_string(i);
    ASSERT_EQ(writers[i]->results.size(), 1u) << "writer " << i;
    EXPECT_EQ(writers[i]->results[0], static_cast<int>(expected.size()));
    EXPECT_EQ(writers[i]->received(), expected);
  }
  EXPECT_TRUE(batch.empty());
}

TEST(WriteBatchTest, MoreWritersThanEntriesGoInSeveralSubmissions) {
  WriteBatch batch(4);
  SKIP_WITHOUT_IO_URING(batch);
  std::vector<std::unique_ptr<Writer>> writers;
  for (int i = 0; i < 10; ++i) {
    writers.push_back(std::make_unique<Writer>(std::string(100, static_cast<char>('a' + i))));
    batch.queue(*writers.back());
  }
  EXPECT_EQ(batch.submit(), 3);  // 4 + 4 + 2
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(writers[i]->results, std::vector<int>{100}) << "writer " << i;
    EXPECT_EQ(writers[i]->received(), std::string(100, static_cast<char>('a' + i)));
  }
}

// Each of these runs once through a submission (a second writer beside it) and once alone
// (a plain sendmsg): both must tell the same results.
class BothWays : public ::testing::TestWithParam<bool> {
 protected:
  // Queues `writer`, and a second writer when the parameter asks for a submission.
  void queue(WriteBatch& batch, Writer& writer) {
    batch.queue(writer);
    if (GetParam()) batch.queue(companion_);
  }
  void expectWay(const WriteBatch& batch, uint64_t rounds) {
    EXPECT_EQ(batch.submissions(), GetParam() ? rounds : 0u);
  }
  Writer companion_{"beside"};
};

TEST_P(BothWays, AFullSocketTakesWhatFitsAndThenAnswersEagainWithoutWaiting) {
  WriteBatch batch;
  SKIP_WITHOUT_IO_URING(batch);
  Writer writer(std::string(8 << 20, 'x'));  // more than a socketpair's buffers hold
  queue(batch, writer);
  batch.submit();  // returns: the write did not wait for the peer to read
  ASSERT_EQ(writer.results.size(), 1u);
  ASSERT_GT(writer.results[0], 0);
  EXPECT_LT(writer.results[0], static_cast<int>(writer.bytes.size()));
  writer.bytes.assign(1000, 'y');
  companion_.bytes = "again";
  queue(batch, writer);
  batch.submit();
  ASSERT_EQ(writer.results.size(), 2u);
  EXPECT_EQ(writer.results[1], -EAGAIN);
  expectWay(batch, 2);
}

TEST_P(BothWays, AClosedPeerIsAnErrorNotASignal) {
  WriteBatch batch;
  SKIP_WITHOUT_IO_URING(batch);
  Writer writer("to nobody");
  ::close(writer.peer);
  writer.peer = -1;
  queue(batch, writer);
  batch.submit();  // MSG_NOSIGNAL: no SIGPIPE ends the test process
  ASSERT_EQ(writer.results.size(), 1u);
  EXPECT_EQ(writer.results[0], -EPIPE);
  expectWay(batch, 1);
}

TEST_P(BothWays, BytesArriveWholeAndInOrder) {
  WriteBatch batch;
  SKIP_WITHOUT_IO_URING(batch);
  Writer writer("0123456789abcdef");
  queue(batch, writer);
  batch.submit();
  EXPECT_EQ(writer.results, std::vector<int>{16});
  EXPECT_EQ(writer.received(), "0123456789abcdef");
  EXPECT_EQ(batch.writes(), GetParam() ? 2u : 1u);
  expectWay(batch, 1);
}

INSTANTIATE_TEST_SUITE_P(WriteBatchTest, BothWays, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Submitted" : "Alone"; });

TEST(WriteBatchTest, ACancelledWriterIsNeitherWrittenNorTold) {
  WriteBatch batch;
  SKIP_WITHOUT_IO_URING(batch);
  Writer kept("kept"), cancelled("cancelled");
  batch.queue(kept);
  batch.queue(cancelled);
  batch.cancel(cancelled);
  batch.submit();
  EXPECT_EQ(kept.results, std::vector<int>{4});
  EXPECT_TRUE(cancelled.results.empty());
  EXPECT_EQ(cancelled.received(), "");
  EXPECT_EQ(batch.writes(), 1u);
}

TEST(WriteBatchTest, AWriterCancelledByAnotherOnesResultIsNotTold) {
  // The first result's reaction destroys the second writer (a stream ending closes another
  // connection): its write already went out, but nobody may call it any more.
  WriteBatch batch;
  SKIP_WITHOUT_IO_URING(batch);
  Writer first("first");
  auto second = std::make_unique<Writer>("second");
  first.on_result = [&] {
    batch.cancel(*second);
    second.reset();
  };
  batch.queue(first);
  batch.queue(*second);
  batch.submit();
  EXPECT_EQ(first.results, std::vector<int>{5});
  EXPECT_EQ(second, nullptr);
}

TEST(WriteBatchTest, AWriterQueuedFromAResultGoesInTheNextRound) {
  WriteBatch batch;
  SKIP_WITHOUT_IO_URING(batch);
  Writer first("first"), later("later");
  Writer other("other");
  first.on_result = [&] { batch.queue(later); };
  batch.queue(first);
  batch.queue(other);
  EXPECT_EQ(batch.submit(), 1);  // the second round holds one write: made alone
  expectWrittenWhole(later);
  EXPECT_EQ(batch.writes(), 3u);
}

TEST(WriteBatchTest, ASubmitFromAResultLeavesTheWorkToTheRunningOne) {
  // A result can lead to a submit() from further down (a connection that reads again and
  // whose read callback ends with the dispatcher sending its writes). Were it to run, it
  // would take over the round being reported and the rest of that round would never be told.
  WriteBatch batch;
  SKIP_WITHOUT_IO_URING(batch);
  Writer a("a"), b("bb"), c("ccc"), later("later");
  int nested = -1;
  a.on_result = [&] {
    batch.queue(later);
    nested = batch.submit();
  };
  batch.queue(a);
  batch.queue(b);
  batch.queue(c);
  batch.submit();
  EXPECT_EQ(nested, 0);
  for (const Writer* w : {&a, &b, &c, &later}) expectWrittenWhole(*w);
  EXPECT_TRUE(batch.empty());
}

TEST(WriteBatchTest, AWriteAloneLeavesNothingInTheRingForTheNextSubmission) {
  // A round of one write is a plain sendmsg(): were its entry left in the ring, the next
  // submission would send those bytes again (and hand out a completion nobody asked for).
  WriteBatch batch;
  SKIP_WITHOUT_IO_URING(batch);
  Writer alone("alone"), b("bb"), c("ccc");
  batch.queue(alone);
  EXPECT_EQ(batch.submit(), 0);
  batch.queue(b);
  batch.queue(c);
  EXPECT_EQ(batch.submit(), 1);
  for (const Writer* w : {&alone, &b, &c}) expectWrittenWhole(*w);
  EXPECT_EQ(batch.writes(), 3u);
}

TEST(WriteBatchTest, AWriterWithNothingToWriteIsNotSubmitted) {
  WriteBatch batch;
  SKIP_WITHOUT_IO_URING(batch);
  Writer empty("");
  batch.queue(empty);
  EXPECT_EQ(batch.submit(), 0);
  EXPECT_TRUE(empty.results.empty());
  EXPECT_EQ(batch.writes(), 0u);
}

// When a dispatcher sends its batch. Inside a read callback (enter/leaveReadCallback), the
// writes leave as the outermost callback ends if libevent has nothing else left to run in the
// pass; otherwise at the end of the pass, after every other callback.

// An event made active by hand: a callback still to run in this pass.
struct OtherCallback {
  ::event* ev;
  std::function<void()> run;
  explicit OtherCallback(Dispatcher& dispatcher)
      : ev(event_new(dispatcher.base(), -1, 0, &OtherCallback::onActive, this)) {}
  ~OtherCallback() { event_free(ev); }
  void activate() { event_active(ev, 0, 0); }
  static void onActive(evutil_socket_t, short, void* arg) {
    auto* self = static_cast<OtherCallback*>(arg);
    if (self->run) self->run();
  }
};

void runOnePass(Dispatcher& dispatcher) {
  event_base_loop(dispatcher.base(), EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

TEST(DispatcherWriteBatchTest, TheLastCallbackOfAPassWritesAsItEnds) {
  Dispatcher dispatcher;
  SKIP_WITHOUT_IO_URING(dispatcher.writeBatch());
  Writer w("response");
  dispatcher.enterReadCallback();
  dispatcher.queueBatchedWrite(w);
  EXPECT_TRUE(w.results.empty());  // not while the callback is still producing
  dispatcher.leaveReadCallback();
  expectWrittenWhole(w);
}

TEST(DispatcherWriteBatchTest, AFlushAWritesResultQueuesRunsBeforeTheCallbackEnds) {
  // Sent as the read callback ends, a write's result can make an HTTP/2 codec write again,
  // which queues a flush with the dispatcher (still inside the callback). That flush must run
  // before leaveReadCallback() returns: queued after the flushes were run, it would never run,
  // and the codec, waiting for it, would write nothing more.
  Dispatcher dispatcher;
  SKIP_WITHOUT_IO_URING(dispatcher.writeBatch());
  struct Flush : Flushable {
    int runs = 0;
    void flushNow() override { ++runs; }
  } flush;
  Writer w("response");
  bool queued = false;
  w.on_result = [&] { queued = dispatcher.queueFlush(flush); };
  dispatcher.enterReadCallback();
  dispatcher.queueBatchedWrite(w);
  dispatcher.leaveReadCallback();
  EXPECT_EQ(w.results, std::vector<int>{8});
  ASSERT_TRUE(queued);
  EXPECT_EQ(flush.runs, 1);
}

TEST(DispatcherWriteBatchTest, WritesThatKeepCausingWritesLeaveTheRestToTheEndOfThePass) {
  // Each result queues a flush that writes again (a peer answering at once, a codec with more
  // to say): the callback's end sends a bounded number of rounds, then the batch waits for the
  // end of the pass like any other, instead of the callback looping on.
  Dispatcher dispatcher;
  SKIP_WITHOUT_IO_URING(dispatcher.writeBatch());
  Writer w("again");
  struct Flush : Flushable {
    std::function<void()> run;
    void flushNow() override { run(); }
  } flush;
  flush.run = [&] { dispatcher.queueBatchedWrite(w); };
  w.on_result = [&] {
    if (w.results.size() < 10) dispatcher.queueFlush(flush);
  };
  dispatcher.enterReadCallback();
  dispatcher.queueBatchedWrite(w);
  dispatcher.leaveReadCallback();
  EXPECT_EQ(w.results.size(), 4u);  // the rounds leaveReadCallback() makes
  EXPECT_FALSE(dispatcher.writeBatch().empty());
  runOnePass(dispatcher);
  EXPECT_EQ(w.results.size(), 5u);
  EXPECT_TRUE(dispatcher.writeBatch().empty());
}

TEST(DispatcherWriteBatchTest, DeferredDeletionsDoNotHoldTheWritesBack) {
  Dispatcher dispatcher;
  SKIP_WITHOUT_IO_URING(dispatcher.writeBatch());
  Writer w("response");
  bool deleted = false;
  struct Flag : DeferredDeletable {
    bool& set;
    explicit Flag(bool& s) : set(s) {}
    ~Flag() override { set = true; }
  };
  dispatcher.enterReadCallback();
  dispatcher.queueBatchedWrite(w);
  dispatcher.deferredDelete(std::make_unique<Flag>(deleted));
  dispatcher.leaveReadCallback();
  EXPECT_EQ(w.results, std::vector<int>{8});
  EXPECT_FALSE(deleted);  // still deferred: only the write went early
  runOnePass(dispatcher);
  EXPECT_TRUE(deleted);
}

TEST(DispatcherWriteBatchTest, WithAnotherCallbackLeftTheWritesWaitForItAndGoTogether) {
  Dispatcher dispatcher;
  SKIP_WITHOUT_IO_URING(dispatcher.writeBatch());
  Writer first("first"), second("second");
  OtherCallback other(dispatcher);
  bool first_written_before_other = true;
  other.run = [&] {
    first_written_before_other = !first.results.empty();
    dispatcher.enterReadCallback();
    dispatcher.queueBatchedWrite(second);
    dispatcher.leaveReadCallback();
  };
  other.activate();
  dispatcher.enterReadCallback();
  dispatcher.queueBatchedWrite(first);
  dispatcher.leaveReadCallback();
  EXPECT_TRUE(first.results.empty());
  runOnePass(dispatcher);
  EXPECT_FALSE(first_written_before_other);
  EXPECT_EQ(dispatcher.writeBatch().submissions(), 1u);  // both in one
  expectWrittenWhole(first);
  expectWrittenWhole(second);
}

TEST(DispatcherWriteBatchTest, OutsideAReadCallbackTheWritesWaitForTheEndOfThePass) {
  Dispatcher dispatcher;
  SKIP_WITHOUT_IO_URING(dispatcher.writeBatch());
  Writer w("timer");
  dispatcher.queueBatchedWrite(w);  // as a timer's callback would
  EXPECT_TRUE(w.results.empty());
  runOnePass(dispatcher);
  EXPECT_EQ(w.results, std::vector<int>{5});
}

}  // namespace
}  // namespace ferry::event
