// The cell: N emulators that agree on ownership, urls.json, hand-over across members, and
// the ferry-cell launcher stopping everything it started.
#include "integration/cell/cell.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace ferry::testing {
namespace {

using namespace std::chrono_literals;

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CellTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CellOptions o;
    o.members = 4;
    auto cell = Cell::create(o);
    ASSERT_TRUE(cell.isOk()) << cell.status().message();
    cell_ = std::move(*cell);
  }
  std::unique_ptr<Cell> cell_;
};

TEST_F(CellTest, MembersListenAndUrlsJsonNamesThem) {
  rapidjson::Document urls;
  const std::string text = readFile(cell_->urlsJsonPath());
  urls.Parse(text.c_str());
  ASSERT_TRUE(urls.IsObject()) << text;
  ASSERT_EQ(urls.MemberCount(), 4u);
  for (size_t i = 0; i < cell_->size(); ++i) {
    const CellMember& m = cell_->member(i);
    EXPECT_EQ(m.name, "inst-" + std::to_string(i + 1));
    EXPECT_NE(m.emulator_port, 0);
    EXPECT_EQ(m.entryPort(), m.emulator_port);  // no ferries
    EXPECT_EQ(std::string(urls[m.name.c_str()].GetString()),
              "http://127.0.0.1:" + std::to_string(m.emulator_port));
    auto h = httpRequest(m.emulator_port, "GET", "/health");
    ASSERT_TRUE(h.isOk());
    EXPECT_EQ(h->headerOr("prisma-streams-origin"), m.name);
  }
  EXPECT_NE(cell_->describe().find("ferry-cell urls.json " + cell_->urlsJsonPath()),
            std::string::npos);
}

TEST_F(CellTest, OwnershipSpreadsOverEveryMember) {
  std::set<size_t> owners;
  for (int i = 0; i < 200; ++i) owners.insert(cell_->ownerIndexOf("spread-" + std::to_string(i)));
  EXPECT_EQ(owners.size(), cell_->size());
  // And the emulators agree: each member accepts a stream the cell says it owns.
  for (size_t i = 0; i < cell_->size(); ++i) {
    const std::string name = cell_->streamOwnedBy(i, "spread");
    auto r = httpRequest(cell_->member(i).emulator_port, "PUT", "/v1/stream/" + name);
    ASSERT_TRUE(r.isOk());
    EXPECT_EQ(r->status, 201) << name << " at " << cell_->member(i).name;
  }
}

TEST_F(CellTest, EveryMemberAgreesOnTheOwner) {
  for (int n = 0; n < 24; ++n) {
    const std::string name = "agree-" + std::to_string(n);
    const std::string owner = cell_->ownerOf(name);
    for (size_t i = 0; i < cell_->size(); ++i) {
      auto r =
          httpRequest(cell_->member(i).emulator_port, "PUT", "/v1/stream/" + name, {}, "first");
      ASSERT_TRUE(r.isOk());
      if (cell_->member(i).name == owner) {
        EXPECT_EQ(r->status, 201) << name;
      } else {
        EXPECT_EQ(r->status, 409) << name << " at " << cell_->member(i).name;
        EXPECT_EQ(r->headerOr("streams-replay-to"), owner) << name;
        EXPECT_EQ(r->body, "{\"error\":{\"code\":\"not_ring_owner\",\"message\":\"shard " +
                               cell_->shardOf(name) + " belongs to " + owner + "\"}}");
      }
    }
  }
}

TEST_F(CellTest, HandOverMovesAShardToItsNewOwner) {
  const std::string name = cell_->streamOwnedBy(3, "handover");  // owned by inst-4
  const uint16_t old_port = cell_->member(3).emulator_port;
  ASSERT_EQ(httpRequest(old_port, "PUT", "/v1/stream/" + name)->status, 201);
  // inst-4 leaves: every member learns the new member set.
  for (size_t i = 0; i < cell_->size(); ++i) {
    auto r = cell_->control(i, R"({"members":["inst-1","inst-2","inst-3"],"handover_ms":300})");
    ASSERT_TRUE(r.isOk());
    ASSERT_EQ(r->status, 200) << r->body;
  }
  EXPECT_EQ(httpRequest(old_port, "POST", "/v1/stream/" + name, {}, "x")->status, 503);
  StatusOr<HttpResponse> r = unavailable("");
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  do {
    r = httpRequest(old_port, "POST", "/v1/stream/" + name, {}, "x");
    ASSERT_TRUE(r.isOk());
  } while (r->status == 503 && std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(r->status, 409);
  const std::string new_owner = r->headerOr("streams-replay-to");
  const CellMember* m = cell_->memberByName(new_owner);
  ASSERT_NE(m, nullptr) << new_owner;
  EXPECT_NE(new_owner, "inst-4");
  // The new owner accepts it (emulators keep no shared state: the stream is created anew).
  EXPECT_EQ(httpRequest(m->emulator_port, "PUT", "/v1/stream/" + name)->status, 201);
}

TEST(CellLifecycleTest, DestroyingTheCellStopsEveryProcess) {
  std::vector<pid_t> pids;
  std::vector<uint16_t> ports;
  {
    CellOptions o;
    o.members = 3;
    auto cell = Cell::create(o);
    ASSERT_TRUE(cell.isOk()) << cell.status().message();
    for (size_t i = 0; i < (*cell)->size(); ++i) {
      pids.push_back((*cell)->emulatorProcess(i).pid());
      ports.push_back((*cell)->member(i).emulator_port);
    }
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    EXPECT_EQ(kill(pids[i], 0), -1) << "pid " << pids[i] << " still exists";
    HttpClient c;
    EXPECT_FALSE(c.connect(ports[i], 1s).isOk());
  }
}

// A test run leaves nothing in the temporary folder: a directory the cell made is removed with
// it, while one the caller named is created when missing and kept.
TEST(CellLifecycleTest, RemovesTheTempDirItMadeAndKeepsANamedOne) {
  CellOptions options;
  options.members = 1;
  std::string made;
  {
    auto cell = Cell::create(options);
    ASSERT_TRUE(cell.isOk()) << cell.status().message();
    made = (*cell)->workDir();
    EXPECT_TRUE(std::filesystem::exists(made + "/urls.json"));
  }
  EXPECT_FALSE(std::filesystem::exists(made)) << made;

  auto parent = makeTempDir("cell-test-named");
  ASSERT_TRUE(parent.isOk());
  const std::string named = *parent + "/not/yet/there";
  options.work_dir = named;
  {
    auto cell = Cell::create(options);
    ASSERT_TRUE(cell.isOk()) << cell.status().message();
    EXPECT_TRUE(std::filesystem::exists(named + "/urls.json"));
  }
  EXPECT_TRUE(std::filesystem::exists(named + "/urls.json")) << "a named dir is the caller's";
  removeTempDir(*parent);
}

// Each process's own log dir goes with it.
TEST(CellLifecycleTest, AProcessRemovesTheLogDirItMade) {
  std::string log_dir;
  {
    ProcessOptions o;
    o.argv = {FERRY_STREAMS_EMULATOR_PATH, "--port", "0"};
    auto p = Process::start(std::move(o));
    ASSERT_TRUE(p.isOk()) << p.status().message();
    ASSERT_TRUE((*p)->waitForLine("listening on", 10s).isOk());
    log_dir = std::filesystem::path((*p)->stdoutPath()).parent_path();
    EXPECT_TRUE(std::filesystem::exists(log_dir));
  }
  EXPECT_FALSE(std::filesystem::exists(log_dir)) << log_dir;
}

TEST(FerryCellBinaryTest, HelpPrintsTheUsageAndExitsZero) {
  for (const char* binary : {FERRY_CELL_PATH, FERRY_STREAMS_EMULATOR_PATH}) {
    ProcessOptions o;
    o.argv = {binary, "--help"};
    auto p = Process::start(std::move(o));
    ASSERT_TRUE(p.isOk()) << p.status().message();
    EXPECT_EQ((*p)->waitExit(10s), std::optional<int>(0)) << binary << (*p)->stderrText();
    EXPECT_NE((*p)->stdoutText().find("usage:"), std::string::npos) << binary;
  }
}

TEST(FerryCellBinaryTest, PrintsMembersAndStopsEverythingOnSigterm) {
  ProcessOptions o;
  o.argv = {FERRY_CELL_PATH, "--members", "2", "--emulator", FERRY_STREAMS_EMULATOR_PATH};
  auto p = Process::start(std::move(o));
  ASSERT_TRUE(p.isOk()) << p.status().message();
  Process& launcher = **p;
  std::vector<uint16_t> ports;
  for (int i = 1; i <= 2; ++i) {
    auto line =
        launcher.waitForLine("^ferry-cell member inst-" + std::to_string(i) +
                                 R"( emulator=127\.0\.0\.1:(\d+) url=http://127\.0\.0\.1:(\d+)$)",
                             15s);
    ASSERT_TRUE(line.isOk()) << line.status().message() << launcher.stderrText();
    ports.push_back(static_cast<uint16_t>(std::stoi(line->at(1))));
  }
  auto urls = launcher.waitForLine(R"(^ferry-cell urls\.json (\S+)$)", 5s);
  ASSERT_TRUE(urls.isOk());
  ASSERT_TRUE(launcher.waitForLine("^ferry-cell ready$", 5s).isOk());
  EXPECT_EQ(readFile(urls->at(1)),
            "{\"inst-1\":\"http://127.0.0.1:" + std::to_string(ports[0]) +
                "\",\"inst-2\":\"http://127.0.0.1:" + std::to_string(ports[1]) + "\"}\n");
  for (uint16_t port : ports) EXPECT_EQ(httpRequest(port, "GET", "/health")->status, 200);

  launcher.signal(SIGTERM);
  auto code = launcher.waitExit(15s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
  for (uint16_t port : ports) {
    HttpClient c;
    EXPECT_FALSE(c.connect(port, 1s).isOk()) << port;
  }
}

}  // namespace
}  // namespace ferry::testing
