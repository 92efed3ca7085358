// --journal (integration/streams_emulator/journal.h): an emulator killed with SIGKILL and
// started again with the same journal has every stream it acknowledged, producer state
// included; a cut-short last record is dropped.
#include <signal.h>

#include <fstream>

#include "tests/integration/streams_emulator/emulator_fixture.h"

namespace ferry::testing {
namespace {

class JournalTest : public EmulatorTest {
 protected:
  void SetUp() override {
    auto dir = makeTempDir("ferry-emulator-journal");
    ASSERT_TRUE(dir.isOk());
    dir_ = *dir;
    journal_ = dir_ + "/inst-1.journal";
    startEmulator({"--journal", journal_});
  }
  void TearDown() override {
    EmulatorTest::TearDown();
    removeTempDir(dir_);
  }
  // SIGKILL, then the same emulator with the same journal (a new port).
  void killAndRestart() {
    emulator_->signal(SIGKILL);
    ASSERT_TRUE(emulator_->waitExit(10s).has_value());
    startEmulator({"--journal", journal_});
  }
  Headers producer(int seq) {
    return {{"producer-id", "p"}, {"producer-epoch", "0"}, {"producer-seq", std::to_string(seq)}};
  }

  std::string dir_;
  std::string journal_;
};

TEST_F(JournalTest, AStreamSurvivesSigkillWithItsProducerState) {
  const std::string bytes = ownedName("journal-bytes");
  const std::string json = ownedName("journal-json");
  const std::string gone = ownedName("journal-gone");
  createStream(bytes, "text/plain");
  createStream(json, "application/json");
  createStream(gone, "text/plain");
  EXPECT_EQ(request("POST", "/v1/stream/" + bytes, producer(0), "a;")->status, 200);
  EXPECT_EQ(request("POST", "/v1/stream/" + bytes, producer(1), "b;")->status, 204);
  EXPECT_EQ(request("POST", "/v1/stream/" + bytes, producer(1), "b;")->status, 204);  // dup
  EXPECT_EQ(request("POST", "/v1/stream/" + json, {}, R"([{"a":1},{"b":2}])")->status, 204);
  EXPECT_EQ(request("DELETE", "/v1/stream/" + gone)->status, 204);
  // A hand-over's copy (PUT /v1/debug/stream) is journaled too.
  const Headers token = {{"x-control-token", kToken}};
  auto put = request("PUT", "/v1/debug/stream?stream=" + ownedName("journal-copy"), token,
                     R"({"content_type":"text/plain","data_hex":"6869","producers":[]})");
  EXPECT_EQ(put->status, 204);

  killAndRestart();
  EXPECT_EQ(request("GET", "/v1/stream/" + bytes + "?offset=-1")->body, "a;b;");
  EXPECT_EQ(request("GET", "/v1/stream/" + json + "?offset=-1")->body, R"([{"a":1},{"b":2}])");
  EXPECT_EQ(request("GET", "/v1/stream/" + gone)->status, 404);
  EXPECT_EQ(request("GET", "/v1/stream/" + ownedName("journal-copy") + "?offset=-1")->body, "hi");
  // The retried seq 1 is a duplicate at its original offset; seq 3 is a gap; seq 2 appends.
  auto dup = request("POST", "/v1/stream/" + bytes, producer(1), "b;");
  EXPECT_EQ(dup->status, 204);
  EXPECT_EQ(dup->headerOr("stream-next-offset"), "0000000000000004");
  EXPECT_EQ(request("POST", "/v1/stream/" + bytes, producer(3), "d;")->status, 409);
  EXPECT_EQ(request("POST", "/v1/stream/" + bytes, producer(2), "c;")->status, 204);

  killAndRestart();  // what was appended after a replay is journaled after it
  EXPECT_EQ(request("GET", "/v1/stream/" + bytes + "?offset=-1")->body, "a;b;c;");
}

TEST_F(JournalTest, ACutShortLastRecordIsDropped) {
  const std::string name = ownedName("journal-cut");
  createStream(name, "text/plain");
  EXPECT_EQ(request("POST", "/v1/stream/" + name, {}, "whole")->status, 204);
  emulator_->signal(SIGKILL);
  ASSERT_TRUE(emulator_->waitExit(10s).has_value());
  {
    std::ofstream f(journal_, std::ios::app | std::ios::binary);
    f << "A" << name.size() << ":" << name << "1:0";  // dies inside a write()
  }
  startEmulator({"--journal", journal_});
  EXPECT_EQ(request("GET", "/v1/stream/" + name + "?offset=-1")->body, "whole");
  EXPECT_EQ(request("POST", "/v1/stream/" + name, {}, "+more")->status, 204);
  killAndRestart();
  EXPECT_EQ(request("GET", "/v1/stream/" + name + "?offset=-1")->body, "whole+more");
}

TEST_F(JournalTest, AMalformedJournalStopsTheStart) {
  emulator_->signal(SIGKILL);
  ASSERT_TRUE(emulator_->waitExit(10s).has_value());
  emulator_.reset();
  {
    std::ofstream f(journal_, std::ios::trunc | std::ios::binary);
    f << "Z3:abc\n";
  }
  ProcessOptions o;
  o.argv = {FERRY_STREAMS_EMULATOR_PATH, "--port", "0", "--journal", journal_};
  auto p = Process::start(std::move(o));
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ((*p)->waitExit(10s), std::optional<int>(1));
  EXPECT_NE((*p)->stderrText().find("bad record at byte 0"), std::string::npos);
}

}  // namespace
}  // namespace ferry::testing
