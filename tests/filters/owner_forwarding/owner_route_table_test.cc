// Owner routing's pieces on their own: the stream key of a data-plane path (raw and product
// routes name the same stream) and the table's bounds (max entries, least recently used first;
// ttl after the last evidence; forget); one table per worker (OwnerRouting::table(worker)).
#include "filters/owner_forwarding/owner_route_table.h"

#include <gtest/gtest.h>

#include "filters/owner_forwarding/owner_routing.h"
#include "filters/owner_forwarding/stream_key.h"
#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"
#include "proxy/stats/stats.h"

namespace ferry::filters {
namespace {

TEST(StreamKeyTest, RawAndProductRoutesNameTheStream) {
  EXPECT_EQ(streamKey("/v1/stream/orders"), "orders");
  EXPECT_EQ(streamKey("/v1/stream/a/b/c?offset=-1&live=sse"), "a/b/c");
  EXPECT_EQ(streamKey("/v1/stream/with%20space"), "with space");
  EXPECT_EQ(streamKey("/v1/stream/%2541"), "%41");  // decoded once
  EXPECT_EQ(streamKey("/v1/streams/orders"), "orders");
  EXPECT_EQ(streamKey("/v1/streams/orders/records"), "orders");
  EXPECT_EQ(streamKey("/v1/streams/orders/records:long-poll?cursor=1"), "orders");
  EXPECT_EQ(streamKey("/v1/streams/a/b/records:batch"), "a/b");
  EXPECT_EQ(streamKey("/v1/streams/orders:seal"), "orders");
  EXPECT_EQ(streamKey("/v1/streams/orders/producers/p1"), "orders");
  EXPECT_EQ(streamKey("/v1/stream/"), std::nullopt);
  EXPECT_EQ(streamKey("/v1/streams/"), std::nullopt);
  EXPECT_EQ(streamKey("/health"), std::nullopt);
  EXPECT_EQ(streamKey("/v1/debug/applied?stream=x"), std::nullopt);
}

class OwnerRouteTableTest : public ::testing::Test {
 protected:
  using Clock = OwnerRouteTable::Clock;
  stats::Store store_;
  OwnerRouteTableStats stats_{store_};
  Clock::time_point t0_ = Clock::now();
};

TEST_F(OwnerRouteTableTest, LearnsFindsAndRefreshes) {
  OwnerRouteTable table(10, std::chrono::milliseconds(1000), stats_);
  EXPECT_EQ(table.find("s", t0_), nullptr);
  table.learn("s", "inst-2", t0_);
  ASSERT_NE(table.find("s", t0_), nullptr);
  EXPECT_EQ(*table.find("s", t0_), "inst-2");
  table.learn("s", "inst-3", t0_ + std::chrono::milliseconds(900));  // new evidence
  ASSERT_NE(table.find("s", t0_ + std::chrono::milliseconds(1500)), nullptr);
  EXPECT_EQ(*table.find("s", t0_ + std::chrono::milliseconds(1500)), "inst-3");
  EXPECT_EQ(stats_.entries.value(), 1);
}

TEST_F(OwnerRouteTableTest, EntriesExpireTtlAfterTheLastEvidence) {
  OwnerRouteTable table(10, std::chrono::milliseconds(1000), stats_);
  table.learn("s", "inst-2", t0_);
  EXPECT_EQ(table.find("s", t0_ + std::chrono::milliseconds(1000)), nullptr);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(stats_.evicted_expired.value(), 1u);
  EXPECT_EQ(stats_.entries.value(), 0);
}

TEST_F(OwnerRouteTableTest, AFullTableEvictsTheLeastRecentlyUsed) {
  OwnerRouteTable table(2, std::chrono::milliseconds(10000), stats_);
  table.learn("a", "inst-1", t0_);
  table.learn("b", "inst-2", t0_);
  ASSERT_NE(table.find("a", t0_), nullptr);  // a is now more recent than b
  table.learn("c", "inst-3", t0_);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_NE(table.find("a", t0_), nullptr);
  EXPECT_EQ(table.find("b", t0_), nullptr);
  EXPECT_NE(table.find("c", t0_), nullptr);
  EXPECT_EQ(stats_.evicted_capacity.value(), 1u);
  EXPECT_EQ(stats_.entries.value(), 2);
}

TEST_F(OwnerRouteTableTest, ForgetCountsWhy) {
  OwnerRouteTable table(10, std::chrono::milliseconds(10000), stats_);
  table.learn("a", "inst-1", t0_);
  table.learn("b", "inst-2", t0_);
  table.forget("a", OwnerRouteTable::Drop::OwnerGone);
  table.forget("b", OwnerRouteTable::Drop::Wrong);
  table.forget("missing", OwnerRouteTable::Drop::Wrong);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(stats_.evicted_owner_gone.value(), 1u);
  EXPECT_EQ(stats_.entries.value(), 0);
}

// Each worker learns for itself (owner_route_table.h): what one worker's table learned is not
// in another's; the same worker finds its own table again.
TEST(OwnerRoutingTest, EachWorkerHasItsOwnTable) {
  stats::Store store;
  event::WorkerSlots slots;
  OwnerRouting routing(OwnerRoutingSettings{}, store, slots);
  event::Dispatcher d1, d2;
  event::WorkerContext one(d1, slots), two(d2, slots);
  const auto now = OwnerRouteTable::Clock::now();
  routing.table(one).learn("s", "inst-2", now);
  EXPECT_EQ(&routing.table(one), &routing.table(one));
  ASSERT_NE(routing.table(one).find("s", now), nullptr);
  EXPECT_EQ(routing.table(two).find("s", now), nullptr);
}

}  // namespace
}  // namespace ferry::filters
