// Tests proxy/peers/peer_table_provider.cc: a table published on the main thread reaches each
// worker's own slot (in its context) through its dispatcher; until that posted callback runs,
// the worker keeps the table it had (a request in flight never sees a swap underneath it).

#include "proxy/peers/peer_table_provider.h"

#include <gtest/gtest.h>

#include <future>
#include <map>
#include <memory>
#include <thread>

#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"

namespace ferry::peers {
namespace {

PeerTableSharedPtr table(uint64_t version, uint16_t port) {
  return std::make_shared<const PeerTable>(
      std::map<std::string, PeerOrigin>{{"inst-b", {"http", "10.0.0.2", port, ""}}}, version);
}

// A worker thread running its own dispatcher, with its context (made on the test's thread, as
// server::Worker makes its own).
class Worker {
 public:
  explicit Worker(event::WorkerSlots& slots)
      : context_(dispatcher_, slots), thread_([this] { dispatcher_.run(); }) {}
  ~Worker() {
    dispatcher_.post([this] { dispatcher_.exit(); });
    thread_.join();
  }
  event::Dispatcher& dispatcher() { return dispatcher_; }
  event::WorkerContext& context() { return context_; }
  // Runs `f` on the worker and waits for its result.
  template <class F>
  auto call(F f) {
    std::promise<decltype(f())> done;
    auto result = done.get_future();
    dispatcher_.post([&] { done.set_value(f()); });
    return result.get();
  }

 private:
  event::Dispatcher dispatcher_;
  event::WorkerContext context_;
  std::thread thread_;
};

uint64_t versionOf(const PeerTableSharedPtr& t) { return t ? t->version() : 0; }

TEST(PeerTableProviderTest, NothingPublishedMeansNoTable) {
  event::WorkerSlots slots;
  PeerTableProvider provider(slots);
  event::Dispatcher dispatcher;
  event::WorkerContext worker(dispatcher, slots);
  EXPECT_EQ(provider.current(worker), nullptr);
  EXPECT_EQ(provider.latest(), nullptr);
}

TEST(PeerTableProviderTest, AWorkerNoPublishReachedReadsTheLatest) {
  event::WorkerSlots slots;
  PeerTableProvider provider(slots);
  event::Dispatcher dispatcher;
  event::WorkerContext worker(dispatcher, slots);  // never added
  provider.publish(table(1, 8081));
  EXPECT_EQ(versionOf(provider.current(worker)), 1u);
  provider.publish(table(2, 8082));
  EXPECT_EQ(versionOf(provider.current(worker)), 2u);
  EXPECT_EQ(provider.current(worker)->find("inst-b")->port, 8082);
}

TEST(PeerTableProviderTest, WorkerSeesTheNewTableAfterThePostedCallbackRuns) {
  event::WorkerSlots slots;
  PeerTableProvider provider(slots);
  Worker worker(slots);
  provider.addWorker(worker.context());
  provider.publish(table(1, 8081));
  auto current = [&] { return versionOf(provider.current(worker.context())); };
  // Posted after the publish: runs after the provider's own callback.
  EXPECT_EQ(worker.call(current), 1u);

  // Hold the worker inside a callback while the main thread publishes v2.
  std::promise<void> published;
  std::promise<std::pair<uint64_t, uint64_t>> seen_inside;
  worker.dispatcher().post([&] {
    published.get_future().wait();
    seen_inside.set_value({current(), versionOf(provider.latest())});
  });
  provider.publish(table(2, 8082));
  published.set_value();
  auto [current_inside, latest_inside] = seen_inside.get_future().get();
  EXPECT_EQ(latest_inside, 2u) << "the provider knows the new table at once";
  EXPECT_EQ(current_inside, 1u) << "the worker keeps its table until its posted update runs";

  EXPECT_EQ(worker.call(current), 2u);
  EXPECT_EQ(worker.call([&] { return provider.current(worker.context())->find("inst-b")->port; }),
            8082);
}

// Two workers, two snapshots: one held inside a callback keeps v1 while the other has v2.
TEST(PeerTableProviderTest, EachWorkerKeepsItsOwnSnapshot) {
  event::WorkerSlots slots;
  PeerTableProvider provider(slots);
  Worker held(slots), other(slots);
  provider.addWorker(held.context());
  provider.addWorker(other.context());
  provider.publish(table(1, 8081));
  EXPECT_EQ(held.call([&] { return versionOf(provider.current(held.context())); }), 1u);

  std::promise<void> checked;
  std::promise<uint64_t> held_saw;
  held.dispatcher().post([&] {
    checked.get_future().wait();
    held_saw.set_value(versionOf(provider.current(held.context())));
  });
  provider.publish(table(2, 8082));
  EXPECT_EQ(other.call([&] { return versionOf(provider.current(other.context())); }), 2u);
  checked.set_value();
  EXPECT_EQ(held_saw.get_future().get(), 1u) << "the held worker's snapshot is its own";
}

TEST(PeerTableProviderTest, SnapshotHeldByARequestOutlivesASwap) {
  event::WorkerSlots slots;
  PeerTableProvider provider(slots);
  provider.publish(table(1, 8081));
  PeerTableSharedPtr held = provider.latest();
  provider.publish(table(2, 8082));
  EXPECT_EQ(held->version(), 1u);
  EXPECT_EQ(held->find("inst-b")->port, 8081);
}

TEST(PeerTableProviderTest, TwoProvidersOnOneWorkerStayApart) {
  event::WorkerSlots slots;
  PeerTableProvider a(slots), b(slots);
  Worker worker(slots);
  a.addWorker(worker.context());
  b.addWorker(worker.context());
  a.publish(table(10, 1000));
  b.publish(table(20, 2000));
  auto [va, vb] = worker.call([&] {
    return std::make_pair(versionOf(a.current(worker.context())),
                          versionOf(b.current(worker.context())));
  });
  EXPECT_EQ(va, 10u);
  EXPECT_EQ(vb, 20u);
}

}  // namespace
}  // namespace ferry::peers
