// When a Connection writes its output. With the dispatcher's write batch (io_uring, the
// default where the kernel allows it): at the end of the loop pass, every socket's write of the
// pass in one submission. Without it: at the end of the read callback that produced it (not
// after every other socket ready in the same loop pass), or, for output produced by a timer,
// later in the same pass. Real sockets (socketpairs) on a real dispatcher.

#include "proxy/net/connection.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace ferry::net {
namespace {

// One end wrapped in a Connection, the other left raw for the test to poke at.
struct Pair {
  int peer = -1;
  ConnectionPtr connection;
  Pair(event::Dispatcher& dispatcher) {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    connection = Connection::fromAccepted(dispatcher, fds[0]);
    peer = fds[1];
  }
  ~Pair() { ::close(peer); }
  // Bytes the Connection has written so far, without consuming them.
  size_t peerPending() const {
    char buf[256];
    ssize_t n = ::recv(peer, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
    return n > 0 ? static_cast<size_t>(n) : 0;
  }
};

class OnData : public ConnectionCallbacks {
 public:
  explicit OnData(std::function<void(Buffer&)> fn) : fn_(std::move(fn)) {}
  void onData(Buffer& input) override { fn_(input); }
  void onEvent(ConnectionEvent) override {}

 private:
  std::function<void(Buffer&)> fn_;
};

// Two sources ready in the same loop pass, each relaying to its own sink: a fan-out of one
// event to two feeds. `second_saw_first_written`: whether the second source's callback found
// the first relay already sent.
struct TwoRelays {
  event::Dispatcher& dispatcher;
  Pair source_a, source_b, sink_a, sink_b;
  Pair* first_sink = nullptr;
  bool second_saw_first_written = false;
  int calls = 0;
  explicit TwoRelays(event::Dispatcher& d)
      : dispatcher(d), source_a(d), source_b(d), sink_a(d), sink_b(d) {}
  std::function<void(Buffer&)> relayTo(Pair& sink) {
    return [this, &sink](Buffer& input) {
      sink.connection->output().move(input);
      if (++calls == 1) {
        first_sink = &sink;
      } else {
        second_saw_first_written = first_sink->peerPending() > 0;
        dispatcher.exit();  // after this pass
      }
    };
  }
  void run() {
    OnData relay_a(relayTo(sink_a)), relay_b(relayTo(sink_b));
    source_a.connection->setCallbacks(relay_a);
    source_b.connection->setCallbacks(relay_b);
    ASSERT_EQ(::write(source_a.peer, "event-1", 7), 7);
    ASSERT_EQ(::write(source_b.peer, "event-1", 7), 7);
    dispatcher.run();
    ASSERT_EQ(calls, 2);
  }
};

TEST(ConnectionTest, OutputIsWrittenWhenTheReadCallbackReturnsBeforeTheNextReadySocket) {
  event::Dispatcher dispatcher;
  dispatcher.setBatchedWrites(false);
  TwoRelays relays(dispatcher);
  relays.run();
  EXPECT_TRUE(relays.second_saw_first_written);
  EXPECT_EQ(relays.sink_a.peerPending(), 7u);
  EXPECT_EQ(relays.sink_b.peerPending(), 7u);
}

TEST(ConnectionTest, WithTheWriteBatchTheWritesOfALoopPassLeaveTogetherAtItsEnd) {
  event::Dispatcher dispatcher;
  if (!dispatcher.batchesWrites()) GTEST_SKIP() << "io_uring is not usable on this kernel";
  TwoRelays relays(dispatcher);
  relays.run();
  EXPECT_FALSE(relays.second_saw_first_written);  // held for the end of the pass
  EXPECT_EQ(relays.sink_a.peerPending(), 7u);
  EXPECT_EQ(relays.sink_b.peerPending(), 7u);
  EXPECT_EQ(dispatcher.writeBatch().writes(), 2u);
  EXPECT_EQ(dispatcher.writeBatch().submissions(), 1u);
}

TEST(ConnectionTest, ABatchedWriteToAFullSocketFinishesWhenThePeerReads) {
  // More than the socket takes at once: the batch writes what fits, the rest waits for
  // EPOLLOUT and goes out the usual way, whole and in order.
  event::Dispatcher dispatcher;
  if (!dispatcher.batchesWrites()) GTEST_SKIP() << "io_uring is not usable on this kernel";
  Pair sink(dispatcher);
  std::string expected;
  for (size_t i = 0; i < (4u << 20); ++i) expected.push_back(static_cast<char>('a' + i % 23));
  sink.connection->output().add(expected);
  std::string received;
  std::thread reader([&] {
    char buf[65536];
    while (received.size() < expected.size()) {
      ssize_t n = ::read(sink.peer, buf, sizeof(buf));
      if (n <= 0) break;
      received.append(buf, static_cast<size_t>(n));
    }
    dispatcher.post([&] { dispatcher.exit(); });
  });
  dispatcher.run();
  reader.join();
  EXPECT_EQ(received.size(), expected.size());
  EXPECT_TRUE(received == expected);
  EXPECT_GE(dispatcher.writeBatch().writes(), 1u);
  EXPECT_TRUE(sink.connection->output().empty());
}

TEST(ConnectionTest, AFlushingCloseWithABatchedWriteClosesOnceItIsWritten) {
  event::Dispatcher dispatcher;
  if (!dispatcher.batchesWrites()) GTEST_SKIP() << "io_uring is not usable on this kernel";
  Pair sink(dispatcher);
  sink.connection->output().add("last words");
  sink.connection->close(CloseMode::FlushWrite);
  auto stop = dispatcher.createTimer([&] { dispatcher.exit(); });
  stop->fireSoon();
  dispatcher.run();
  EXPECT_FALSE(sink.connection->open());
  char buf[64];
  ssize_t n = ::read(sink.peer, buf, sizeof(buf));
  ASSERT_EQ(n, 10);
  EXPECT_EQ(std::string(buf, 10), "last words");
  EXPECT_EQ(::read(sink.peer, buf, sizeof(buf)), 0);  // then the close
  EXPECT_EQ(dispatcher.writeBatch().writes(), 1u);
}

TEST(ConnectionTest, AnOutputOfMorePiecesThanOneWriteTakesArrivesWholeAndInOrder) {
  // Many separate pieces (an HTTP/2 connection's frames for many streams): the batch's write
  // takes WriteBatch::kMaxIovecs of them, the rest follows in the same pass.
  event::Dispatcher dispatcher;
  Pair sink(dispatcher);
  std::string expected;
  for (int i = 0; i < 5 * event::WriteBatch::kMaxIovecs + 3; ++i) {
    Buffer piece;
    const std::string bytes = "piece-" + std::to_string(i) + ";";
    piece.add(bytes);
    expected += bytes;
    sink.connection->output().move(piece);
  }
  auto stop = dispatcher.createTimer([&] { dispatcher.exit(); });
  stop->fireSoon();
  dispatcher.run();
  std::string received(expected.size() + 16, '\0');
  ssize_t n = ::recv(sink.peer, received.data(), received.size(), MSG_DONTWAIT);
  ASSERT_EQ(n, static_cast<ssize_t>(expected.size()));
  received.resize(static_cast<size_t>(n));
  EXPECT_EQ(received, expected);
  EXPECT_TRUE(sink.connection->output().empty());
}

TEST(ConnectionTest, OutputFromATimerIsWrittenLaterInTheSameLoopPass) {
  event::Dispatcher dispatcher;
  Pair sink(dispatcher);
  size_t seen = 0;
  auto check = dispatcher.createTimer([&] {
    seen = sink.peerPending();
    dispatcher.exit();
  });
  auto produce = dispatcher.createTimer([&] {
    sink.connection->output().add("tick");
    check->fireSoon();  // queued behind the flush that add() just activated
  });
  produce->fireSoon();
  dispatcher.run();
  EXPECT_EQ(seen, 4u);
}

TEST(ConnectionTest, AConnectionDestroyedWithAQueuedFlushIsSkipped) {
  event::Dispatcher dispatcher;
  Pair source(dispatcher), doomed(dispatcher), survivor(dispatcher);
  OnData relay([&](Buffer& input) {
    doomed.connection->output().add("lost");
    survivor.connection->output().move(input);
    doomed.connection.reset();  // its flush is queued with the dispatcher
    dispatcher.exit();
  });
  source.connection->setCallbacks(relay);
  ASSERT_EQ(::write(source.peer, "kept", 4), 4);
  dispatcher.run();
  EXPECT_EQ(survivor.peerPending(), 4u);
}

TEST(ConnectionTest, ReadsArriveIntactAcrossSmallAndLargeReads) {
  // Small reads go through a stack buffer, large ones straight into the input buffer; the
  // connection switches by the size of the last read. Bytes must arrive whole and in order
  // through every switch, whether or not the consumer drains input each time.
  event::Dispatcher dispatcher;
  Pair source(dispatcher);
  std::string expected;
  for (size_t size : {100u, 70000u, 10u, 40000u, 5u, 1u, 30000u}) {
    for (size_t i = 0; i < size; ++i) {
      expected.push_back(static_cast<char>('a' + (i * 7 + size) % 26));
    }
  }
  std::string received;
  int calls = 0;
  OnData collect([&](Buffer& input) {
    // Every other callback leaves its bytes in the buffer: later reads append to them.
    if (++calls % 2 == 0 || input.length() + received.size() == expected.size()) {
      received += input.toString();
      input.clear();
    }
    if (received.size() == expected.size()) dispatcher.exit();
  });
  source.connection->setCallbacks(collect);
  std::thread writer([&] {
    size_t at = 0;
    for (size_t size : {100u, 70000u, 10u, 40000u, 5u, 1u, 30000u}) {
      size_t left = size;
      while (left > 0) {
        ssize_t n = ::write(source.peer, expected.data() + at, left);
        if (n <= 0) return;
        at += static_cast<size_t>(n);
        left -= static_cast<size_t>(n);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  dispatcher.run();
  writer.join();
  EXPECT_EQ(received.size(), expected.size());
  EXPECT_TRUE(received == expected);
}

TEST(ConnectionTest, ReadingStopsAtTheReadLimitAndResumesWhenInputIsDrainedLater) {
  // The consumer keeps what it is given (as a paused stream does) and drains it later, from a
  // timer, outside any read callback: reading must stop at the limit, then resume.
  event::Dispatcher dispatcher;
  Pair source(dispatcher);
  constexpr size_t kLimit = 1000;
  source.connection->setReadLimit(kLimit);
  const std::string sent(50000, 'r');
  std::string received;
  bool held_at_limit = false;  // input reached the limit and was not drained since
  int times_at_limit = 0;
  event::TimerPtr drain;
  drain = dispatcher.createTimer([&] {
    Buffer& input = source.connection->input();
    received += input.toString();
    input.clear();  // below the limit again: reading resumes
    held_at_limit = false;
    if (received.size() == sent.size()) dispatcher.exit();
  });
  OnData hold([&](Buffer& input) {
    EXPECT_FALSE(held_at_limit) << "read on past the read limit";
    held_at_limit = input.length() >= kLimit;
    if (held_at_limit) ++times_at_limit;
    drain->enable(std::chrono::milliseconds(1));
  });
  source.connection->setCallbacks(hold);
  // All of it waits in the socket before the loop starts: the first read reaches the limit.
  ASSERT_EQ(::write(source.peer, sent.data(), sent.size()), static_cast<ssize_t>(sent.size()));
  auto guard = dispatcher.createTimer([&] { dispatcher.exit(); });
  guard->enable(std::chrono::seconds(10));
  dispatcher.run();
  EXPECT_EQ(received, sent);
  EXPECT_GT(times_at_limit, 0);
}

// Counts the events a connection raises.
class EventLog : public ConnectionCallbacks {
 public:
  void onData(Buffer&) override {}
  void onEvent(ConnectionEvent event) override { events.push_back(event); }
  std::vector<ConnectionEvent> events;
};

// Lowers the soft descriptor limit to the lowest free descriptor (so the next socket() fails
// with EMFILE) while in scope, and restores it after.
class NoFreeDescriptor {
 public:
  NoFreeDescriptor() {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    const int next = ::dup(0);
    ::close(next);
    rlimit low = saved_;
    low.rlim_cur = static_cast<rlim_t>(next);
    ::setrlimit(RLIMIT_NOFILE, &low);
  }
  ~NoFreeDescriptor() { ::setrlimit(RLIMIT_NOFILE, &saved_); }

 private:
  rlimit saved_{};
};

TEST(ConnectionTest, AConnectWithoutADescriptorFailsOnTheNextLoopTurnOnce) {
  // At the descriptor limit an upstream connect() cannot even get a socket: the owner must
  // still see ConnectFailed as an event (never from inside connect()), once, and a connection
  // destroyed before that turn must raise nothing. Both connections have no socket (fd -1).
  event::Dispatcher dispatcher;
  Pair warm(dispatcher);  // the Connection code paths below are met once with descriptors free
  ConnectionPtr failed, dropped;
  {
    NoFreeDescriptor limit;
    failed = Connection::connect(dispatcher, "127.0.0.1", 9);
    dropped = Connection::connect(dispatcher, "127.0.0.1", 9);
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const int error = errno;
    ASSERT_EQ(fd, -1) << "the limit did not apply";
    EXPECT_EQ(error, EMFILE);
  }
  EventLog log, dropped_log;
  failed->setCallbacks(log);
  dropped->setCallbacks(dropped_log);
  EXPECT_TRUE(failed->open());
  dropped.reset();
  EXPECT_TRUE(log.events.empty()) << "raised from inside connect()";
  // Queued behind both failures' turn: the loop ends once they have run (or been cancelled).
  auto end = dispatcher.createTimer([&] { dispatcher.exit(); });
  end->fireSoon();
  dispatcher.run();
  ASSERT_EQ(log.events.size(), 1u);
  EXPECT_EQ(log.events[0], ConnectionEvent::ConnectFailed);
  EXPECT_FALSE(failed->open());
  failed->close(CloseMode::NoFlush);  // already closed: raises nothing more
  EXPECT_EQ(log.events.size(), 1u);
  EXPECT_TRUE(dropped_log.events.empty());
}

}  // namespace
}  // namespace ferry::net
