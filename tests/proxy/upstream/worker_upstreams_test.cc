// The per-worker upstream context: one pool per target, reached through current() on the
// thread that set it, and nowhere else.

#include "proxy/upstream/worker_upstreams.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "proxy/event/dispatcher.h"
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

TEST_F(WorkerUpstreamsTest, CurrentIsTheScopedContextAndIsRestored) {
  WorkerUpstreams outer(dispatcher_, PoolSettings{}, stats_);
  WorkerUpstreams inner(dispatcher_, PoolSettings{}, stats_);
  WorkerUpstreams::ScopedCurrent outer_scope(outer);
  EXPECT_EQ(&WorkerUpstreams::current(), &outer);
  {
    WorkerUpstreams::ScopedCurrent inner_scope(inner);
    EXPECT_EQ(&WorkerUpstreams::current(), &inner);
  }
  EXPECT_EQ(&WorkerUpstreams::current(), &outer);
}

// Each worker thread sees its own context: another thread's is not visible.
TEST_F(WorkerUpstreamsTest, CurrentIsPerThread) {
  WorkerUpstreams mine(dispatcher_, PoolSettings{}, stats_);
  WorkerUpstreams theirs(dispatcher_, PoolSettings{}, stats_);
  WorkerUpstreams::ScopedCurrent scope(mine);
  WorkerUpstreams* seen = nullptr;
  std::thread worker([&] {
    WorkerUpstreams::ScopedCurrent worker_scope(theirs);
    seen = &WorkerUpstreams::current();
  });
  worker.join();
  EXPECT_EQ(seen, &theirs);
  EXPECT_EQ(&WorkerUpstreams::current(), &mine);
}

// forwarding.owner_protocol picks the pool per target; the local instance never gets h2.
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

TEST(WorkerUpstreamsDeathTest, CurrentWithoutAContextAborts) {
  EXPECT_DEATH(WorkerUpstreams::current(), "no worker upstream context");
}

}  // namespace
}  // namespace ferry::upstream
