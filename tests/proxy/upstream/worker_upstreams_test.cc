// The per-worker upstream context: one pool per target; through its slot, one per worker
// context, never shared.

#include "proxy/upstream/worker_upstreams.h"

#include <gtest/gtest.h>

#include <string>

#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"
#include "proxy/upstream/http1_conn_pool.h"
#include "proxy/upstream/http2_conn_pool.h"
#include "proxy/upstream/upstream_stats.h"

namespace ferry::upstream {
namespace {

UpstreamTarget target(uint16_t port) {
  UpstreamTarget t;
  t.name = "local";
  t.scheme = "http";
  t.host = "127.0.0.1";
  t.port = port;
  return t;
}

class WorkerUpstreamsTest : public ::testing::Test {
 protected:
  WorkerUpstreamsTest() : stats_(store_) {}
  event::Dispatcher dispatcher_;
  stats::Store store_;
  UpstreamStats stats_;
};

TEST_F(WorkerUpstreamsTest, OnePoolPerTarget) {
  WorkerUpstreams upstreams(dispatcher_, PoolSettings{}, stats_);
  ConnectionPool& a = upstreams.pool(target(8080));
  EXPECT_EQ(&upstreams.pool(target(8080)), &a);
  EXPECT_NE(&upstreams.pool(target(8081)), &a);
  EXPECT_EQ(a.target().port, 8080);
}

// The slot the composition root allocates: each worker's context holds its own pools.
TEST_F(WorkerUpstreamsTest, TheSlotGivesEachWorkerItsOwnPools) {
  event::WorkerSlots slots;
  const PoolSettings settings;
  auto slot = WorkerUpstreams::allocateSlot(slots, settings, stats_);
  event::Dispatcher other_dispatcher;
  event::WorkerContext one(dispatcher_, slots), two(other_dispatcher, slots);
  EXPECT_EQ(&one.get(slot), &one.get(slot));
  EXPECT_NE(&one.get(slot), &two.get(slot));
  ConnectionPool& mine = one.get(slot).pool(target(8080));
  EXPECT_EQ(&one.get(slot).pool(target(8080)), &mine);
  EXPECT_NE(&two.get(slot).pool(target(8080)), &mine);
}

TEST_F(WorkerUpstreamsTest, PoolsFollowTheOwnerProtocolButTheLocalInstanceStaysHttp1) {
  auto owner = [](const std::string& scheme) {
    UpstreamTarget t = target(8443);
    t.name = "inst-2";
    t.scheme = scheme;
    return t;
  };
  auto kind = [](const std::unique_ptr<ConnectionPool>& pool) {
    if (dynamic_cast<Http2ConnPool*>(pool.get()) != nullptr) return std::string("h2");
    if (dynamic_cast<Http1ConnPool*>(pool.get()) != nullptr) return std::string("http1");
    return std::string("?");
  };
  PoolSettings settings;
  settings.local = target(8080);
  for (OwnerProtocol protocol : {OwnerProtocol::Auto, OwnerProtocol::H2, OwnerProtocol::Http1}) {
    settings.owner_protocol = protocol;
    EXPECT_EQ(kind(WorkerUpstreams::makePool(dispatcher_, settings.local, settings, stats_)),
              "http1");
  }
  settings.owner_protocol = OwnerProtocol::Auto;
  EXPECT_EQ(kind(WorkerUpstreams::makePool(dispatcher_, owner("https"), settings, stats_)), "h2");
  EXPECT_EQ(kind(WorkerUpstreams::makePool(dispatcher_, owner("http"), settings, stats_)), "http1");
  settings.owner_protocol = OwnerProtocol::H2;
  EXPECT_EQ(kind(WorkerUpstreams::makePool(dispatcher_, owner("https"), settings, stats_)), "h2");
  EXPECT_EQ(kind(WorkerUpstreams::makePool(dispatcher_, owner("http"), settings, stats_)), "h2");
  settings.owner_protocol = OwnerProtocol::Http1;
  EXPECT_EQ(kind(WorkerUpstreams::makePool(dispatcher_, owner("https"), settings, stats_)),
            "http1");
  EXPECT_EQ(kind(WorkerUpstreams::makePool(dispatcher_, owner("http"), settings, stats_)), "http1");
}

}  // namespace
}  // namespace ferry::upstream
