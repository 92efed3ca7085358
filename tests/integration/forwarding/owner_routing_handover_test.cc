// Hand-over under continuous appends with owner routing on (project issue 15): idempotent
// producers append to one stream through every ferry while the emulators move the stream's
// shard from inst-2 to inst-3 (members change, the old owner answers 503 shard_moving for
// handover_ms, then 409 naming the new owner). Afterwards every acknowledged append is in the
// stream exactly once and each producer's appends are in order: one writer, order kept.
//
// The emulator keeps streams per process; the stream's data and producer state are copied from
// the old owner to the new one (GET / PUT /v1/debug/stream) while no instance accepts appends
// for it, standing in for the fleet's shared storage (integration/streams_emulator/README.md).
//
// FERRY_HANDOVER_APPENDS=N (default 150) appends per producer; the test prints the counts on
// one line starting "handover:". The cell bench's arm handover (bench/cell/run.py --handover on,
// bench/cell/handover.py) runs the same hand-over with more producers for a fixed time.
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <map>
#include <thread>

#include "integration/streams_emulator/ownership.h"
#include "tests/integration/forwarding/forwarding_test.h"

namespace ferry::fwdtest {
namespace {

class OwnerRoutingHandoverTest : public ForwardingTest {
 protected:
  CellOptions cellOptions() const override {
    CellOptions o;
    o.owner_routing_yaml = "{enabled: true}";
    return o;
  }
};

struct ProducerResult {
  int acked = 0;
  int attempts = 0;
  std::map<int, int> statuses;  // answers that were not acknowledgements
};

TEST_F(OwnerRoutingHandoverTest, EveryAcknowledgedAppendIsInTheStreamOnceAndInOrder) {
  const int appends = std::getenv("FERRY_HANDOVER_APPENDS") != nullptr
                          ? std::atoi(std::getenv("FERRY_HANDOVER_APPENDS"))
                          : 150;
  const std::vector<std::string> moved{"inst-1", "inst-3"};
  std::string s;
  for (int n = 0; s.empty() && n < 100000; ++n) {
    const std::string name = "handover-" + std::to_string(n);
    const int now = streams::ownerIndex(name, 16, moved);
    if (cell_->ownerIndexOf(name) == 1 && now >= 0 && moved[now] == "inst-3") s = name;
  }
  ASSERT_FALSE(s.empty());
  Emulator& old_owner = cell_->emulator(1);
  Emulator& new_owner = cell_->emulator(2);
  createAt(1, s);

  const size_t producers = cell_->size();  // one per ferry
  std::vector<ProducerResult> results(producers);
  std::atomic<int> progress{0};
  std::vector<std::thread> threads;
  for (size_t p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      ProducerResult& r = results[p];
      const uint16_t port = cell_->ferry(p).port();
      for (int seq = 0; seq < appends; ++seq) {
        // The same seq until it is acknowledged: a retry of an append that was applied is a
        // duplicate the owner acknowledges without appending it again. A seq never acknowledged
        // (e.g. a new owner without the producer's state: 409 producer_seq_gap) ends the run.
        for (int tries = 0;; ++tries) {
          if (tries == 300) {
            ADD_FAILURE() << "p" << p << " seq " << seq << " never acknowledged";
            progress += appends;  // unblock the hand-over
            return;
          }
          ++r.attempts;
          auto answer = testing::httpRequest(
              port, "POST", "/v1/stream/" + s,
              {{"content-type", "text/plain"},
               {"producer-id", "p" + std::to_string(p)},
               {"producer-epoch", "0"},
               {"producer-seq", std::to_string(seq)}},
              "p" + std::to_string(p) + "-" + std::to_string(seq) + ";", Ms(10000));
          if (answer.isOk() && answer->status / 100 == 2) break;
          ++r.statuses[answer.isOk() ? answer->status : 0];
          // A client's back-off (503 says Retry-After), not a synchronisation.
          std::this_thread::sleep_for(Ms(20));
        }
        ++r.acked;
        ++progress;
      }
    });
  }
  // A third of the way in, the hand-over: the old owner stops taking appends for the stream
  // (503 shard_moving, then 409 naming inst-3); its state is copied to the new owner; then the
  // others learn the new members (until then they name inst-2, which says 503).
  const int total = appends * static_cast<int>(producers);
  while (progress.load() < total / 3) std::this_thread::yield();
  ASSERT_TRUE(old_owner.control(R"({"members":["inst-1","inst-3"],"handover_ms":500})"));
  auto exported = testing::httpRequest(old_owner.port(), "GET", "/v1/debug/stream?stream=" + s,
                                       {{"x-control-token", kControlToken}});
  ASSERT_TRUE(exported.isOk() && exported->status == 200);
  auto imported = testing::httpRequest(new_owner.port(), "PUT", "/v1/debug/stream?stream=" + s,
                                       {{"x-control-token", kControlToken}}, exported->body);
  ASSERT_TRUE(imported.isOk() && imported->status == 204);
  ASSERT_TRUE(cell_->emulator(0).control(R"({"members":["inst-1","inst-3"]})"));
  ASSERT_TRUE(new_owner.control(R"({"members":["inst-1","inst-3"]})"));
  const int at_handover = progress.load();
  for (auto& t : threads) t.join();

  // Every append applied, in order: the old owner's log, then the new owner's.
  std::vector<Applied> applied = appliedAt(1, s);
  const size_t before = applied.size();
  for (const Applied& a : appliedAt(2, s)) applied.push_back(a);
  std::map<std::string, std::vector<std::string>> by_producer;  // body hashes, in order
  for (const Applied& a : applied) by_producer[a.producer_id].push_back(a.body_sha256);
  int acked = 0, attempts = 0, retries = 0;
  for (size_t p = 0; p < producers; ++p) {
    acked += results[p].acked;
    attempts += results[p].attempts;
    EXPECT_EQ(results[p].acked, appends);
    const auto& got = by_producer["p" + std::to_string(p)];
    ASSERT_EQ(got.size(), static_cast<size_t>(appends)) << "producer p" << p;
    for (int seq = 0; seq < appends; ++seq) {
      EXPECT_EQ(got[seq], sha256Hex("p" + std::to_string(p) + "-" + std::to_string(seq) + ";"))
          << "producer p" << p << " position " << seq;
    }
    for (const auto& [status, n] : results[p].statuses) retries += n;
  }
  EXPECT_EQ(applied.size(), static_cast<size_t>(total));
  // The stream's data at the new owner holds every append exactly once.
  auto read = httpRequest(new_owner.port(), "GET", "/v1/stream/" + s + "?offset=-1");
  ASSERT_TRUE(read.isOk() && read->status == 200);
  size_t expected_bytes = 0;
  for (const Applied& a : applied) expected_bytes += a.bytes;
  EXPECT_EQ(read->body.size(), expected_bytes);
  // Owner routing was at work: requests were routed, and a wrong entry was corrected.
  int64_t right = 0, corrected = 0;
  for (size_t i = 0; i < cell_->size(); ++i) {
    right += cell_->ferry(i).stat("ferry_owner_routing_requests_total{outcome=\"right\"}");
    corrected += cell_->ferry(i).stat(
        "ferry_owner_routing_requests_total{outcome=\"wrong_then_corrected\"}");
  }
  EXPECT_GT(right, 0);
  EXPECT_GT(corrected, 0);
  std::map<int, int> statuses;
  for (const auto& r : results)
    for (const auto& [status, n] : r.statuses) statuses[status] += n;
  std::cout << "handover: producers " << producers << ", acknowledged " << acked << ", applied "
            << applied.size() << " (old owner " << before << ", new owner "
            << applied.size() - before << "), attempts " << attempts << ", retried answers "
            << retries << " (";
  for (const auto& [status, n] : statuses) std::cout << status << ": " << n << " ";
  std::cout << "), acknowledged before the hand-over " << at_handover << ", routed right " << right
            << ", wrong_then_corrected " << corrected << std::endl;
}

}  // namespace
}  // namespace ferry::fwdtest
