// proxy/upstream/conn_pool_base.cc: the pools' ownership of their streams (by unique_ptr,
// linked through the streams), deferred deletion, and the waiting queue shared by the HTTP/1.1
// and HTTP/2 pools.

#include "proxy/upstream/conn_pool_base.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "proxy/event/dispatcher.h"

namespace ferry::upstream {
namespace {

struct NullDecoder : public http::ResponseDecoder {
  void onInformational(http::ResponseHeadersPtr) override {}
  void onResponseHeaders(http::ResponseHeadersPtr, bool) override {}
  void onResponseData(Buffer&, bool) override {}
};

struct NullCallbacks : public UpstreamStreamCallbacks {
  void onPoolReady(http::RequestEncoder&, UpstreamStream&) override {}
  void onPoolFailure(const UpstreamFailure&) override {}
  void onStreamReset(const UpstreamFailure&) override {}
  void onRequestSent() override {}
  void onAboveWriteBufferHighWatermark() override {}
  void onBelowWriteBufferLowWatermark() override {}
};

struct NullSource : public RequestSource {
  const http::RequestHeaders& requestHead() const override { return head; }
  bool copyRequestBody(Buffer&) const override { return true; }
  http::RequestHeaders head;
};

// Records its own deletion in `deleted`.
class TestStream : public PoolStreamBase {
 public:
  TestStream(int id, std::vector<int>& deleted, http::ResponseDecoder& decoder,
             UpstreamStreamCallbacks& callbacks, const RequestSource& source)
      : PoolStreamBase(decoder, callbacks, source), id_(id), deleted_(deleted) {}
  ~TestStream() override { deleted_.push_back(id_); }
  bool queued() const { return queued_; }
  int id() const { return id_; }

 private:
  void removeFromPool() override {}
  const int id_;
  std::vector<int>& deleted_;
};

class TestPool : public ConnPoolBase {
 public:
  explicit TestPool(event::Dispatcher& dispatcher) : ConnPoolBase(dispatcher) {}
  UpstreamStream* newStream(http::ResponseDecoder&, UpstreamStreamCallbacks&,
                            const RequestSource&) override {
    return nullptr;
  }
  const UpstreamTarget& target() const override { return target_; }

  using ConnPoolBase::addStream;
  using ConnPoolBase::cancel;
  using ConnPoolBase::dequeue;
  using ConnPoolBase::destroyStream;
  using ConnPoolBase::enqueue;
  size_t waiting() const { return pending_.size(); }

 private:
  UpstreamTarget target_;
};

class ConnPoolBaseTest : public ::testing::Test {
 protected:
  TestStream& add(TestPool& pool, int id) {
    return pool.addStream(
        std::make_unique<TestStream>(id, deleted_, decoder_, callbacks_, source_));
  }
  // Runs what the dispatcher deferred (as the next read callback would).
  void runDeferred() {
    dispatcher_.enterReadCallback();
    dispatcher_.leaveReadCallback();
  }

  event::Dispatcher dispatcher_;
  NullDecoder decoder_;
  NullCallbacks callbacks_;
  NullSource source_;
  std::vector<int> deleted_;
};

TEST_F(ConnPoolBaseTest, DestroyedStreamIsDeletedDeferredTheOthersStay) {
  TestPool pool(dispatcher_);
  TestStream& oldest = add(pool, 1);
  TestStream& middle = add(pool, 2);
  TestStream& newest = add(pool, 3);
  pool.destroyStream(middle);
  EXPECT_TRUE(deleted_.empty());  // it may be on the stack
  runDeferred();
  EXPECT_EQ(deleted_, std::vector<int>{2});
  pool.destroyStream(newest);
  pool.destroyStream(oldest);
  runDeferred();
  EXPECT_EQ(deleted_, (std::vector<int>{2, 3, 1}));
}

TEST_F(ConnPoolBaseTest, DestroyingAWaitingStreamTakesItOutOfTheQueue) {
  TestPool pool(dispatcher_);
  TestStream& first = add(pool, 1);
  TestStream& second = add(pool, 2);
  pool.enqueue(first);
  pool.enqueue(second);
  EXPECT_TRUE(first.queued());
  pool.destroyStream(first);
  EXPECT_EQ(pool.waiting(), 1u);
  PoolStreamBase& next = pool.dequeue();
  EXPECT_EQ(&next, &second);
  EXPECT_FALSE(second.queued());
  EXPECT_EQ(pool.waiting(), 0u);
  pool.enqueue(second);
  pool.cancel(second);
  EXPECT_EQ(pool.waiting(), 0u);
  EXPECT_FALSE(second.queued());
}

TEST_F(ConnPoolBaseTest, PoolDeletesTheStreamsLeftWhenItGoes) {
  {
    TestPool pool(dispatcher_);
    add(pool, 1);
    pool.enqueue(add(pool, 2));
    pool.destroyStream(add(pool, 3));
    runDeferred();
    EXPECT_EQ(deleted_, std::vector<int>{3});
  }
  EXPECT_EQ(deleted_, (std::vector<int>{3, 2, 1}));
}

TEST_F(ConnPoolBaseTest, ManyStreamsLeftAreDeletedWithoutDeepRecursion) {
  // A chain of unique_ptrs deleted by their own destructors would recurse once per stream.
  constexpr int kStreams = 300'000;
  {
    TestPool pool(dispatcher_);
    for (int i = 0; i < kStreams; ++i) add(pool, i);
  }
  EXPECT_EQ(deleted_.size(), static_cast<size_t>(kStreams));
}

}  // namespace
}  // namespace ferry::upstream
