// Tests proxy/peers/peer_table_provider.cc: a table published on the main thread reaches a
// worker's own slot through its dispatcher; until that posted callback runs, the worker keeps
// the table it had (a request in flight never sees a swap underneath it).

#include "proxy/peers/peer_table_provider.h"

#include <gtest/gtest.h>

#include <future>
#include <map>
#include <memory>
#include <thread>

#include "proxy/event/dispatcher.h"

namespace ferry::peers {
namespace {

PeerTableSharedPtr table(uint64_t version, uint16_t port) {
  return std::make_shared<const PeerTable>(
      std::map<std::string, PeerOrigin>{{"inst-b", {"http", "10.0.0.2", port, ""}}}, version);
}

// A worker thread running its own dispatcher.
class Worker {
 public:
  Worker() : thread_([this] { dispatcher_.run(); }) {}
  ~Worker() {
    dispatcher_.post([this] { dispatcher_.exit(); });
    thread_.join();
  }
  event::Dispatcher& dispatcher() { return dispatcher_; }
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
  std::thread thread_;
};

uint64_t versionOf(const PeerTableSharedPtr& t) { return t ? t->version() : 0; }

TEST(PeerTableProviderTest, NothingPublishedMeansNoTable) {
  PeerTableProvider provider;
  EXPECT_EQ(provider.current(), nullptr);
  EXPECT_EQ(provider.latest(), nullptr);
}

TEST(PeerTableProviderTest, NonWorkerThreadsReadTheLatest) {
  PeerTableProvider provider;
  provider.publish(table(1, 8081));
  EXPECT_EQ(versionOf(provider.current()), 1u);
  provider.publish(table(2, 8082));
  EXPECT_EQ(versionOf(provider.current()), 2u);
  EXPECT_EQ(provider.current()->find("inst-b")->port, 8082);
}

TEST(PeerTableProviderTest, WorkerSeesTheNewTableAfterThePostedCallbackRuns) {
  PeerTableProvider provider;
  Worker worker;
  provider.addWorker(worker.dispatcher());
  provider.publish(table(1, 8081));
  // Posted after the publish: runs after the provider's own callback.
  EXPECT_EQ(worker.call([&] { return versionOf(provider.current()); }), 1u);

  // Hold the worker inside a callback while the main thread publishes v2.
  std::promise<void> published;
  std::promise<std::pair<uint64_t, uint64_t>> seen_inside;
  worker.dispatcher().post([&] {
    published.get_future().wait();
    seen_inside.set_value({versionOf(provider.current()), versionOf(provider.latest())});
  });
  provider.publish(table(2, 8082));
  published.set_value();
  auto [current_inside, latest_inside] = seen_inside.get_future().get();
  EXPECT_EQ(latest_inside, 2u) << "the provider knows the new table at once";
  EXPECT_EQ(current_inside, 1u) << "the worker keeps its table until its posted update runs";

  EXPECT_EQ(worker.call([&] { return versionOf(provider.current()); }), 2u);
  EXPECT_EQ(worker.call([&] { return provider.current()->find("inst-b")->port; }), 8082);
}

TEST(PeerTableProviderTest, SnapshotHeldByARequestOutlivesASwap) {
  PeerTableProvider provider;
  provider.publish(table(1, 8081));
  PeerTableSharedPtr held = provider.current();
  provider.publish(table(2, 8082));
  EXPECT_EQ(held->version(), 1u);
  EXPECT_EQ(held->find("inst-b")->port, 8081);
}

TEST(PeerTableProviderTest, TwoProvidersOnOneWorkerStayApart) {
  PeerTableProvider a, b;
  Worker worker;
  a.addWorker(worker.dispatcher());
  b.addWorker(worker.dispatcher());
  a.publish(table(10, 1000));
  b.publish(table(20, 2000));
  auto [va, vb] =
      worker.call([&] { return std::make_pair(versionOf(a.current()), versionOf(b.current())); });
  EXPECT_EQ(va, 10u);
  EXPECT_EQ(vb, 20u);
}

}  // namespace
}  // namespace ferry::peers
