// A cell with a ferry in front of each emulator: the cell's ferry code path. Registered only
// when the `ferry` target exists (see CMakeLists.txt).
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <signal.h>

#include <fstream>
#include <optional>
#include <sstream>

#include "integration/cell/cell.h"

namespace ferry::testing {
namespace {

TEST(CellWithFerryTest, FerriesFrontEveryEmulatorAndForwardToTheOwner) {
  CellOptions o;
  o.members = 3;
  o.ferry_path = FERRY_BINARY_PATH;
  auto created = Cell::create(o);
  ASSERT_TRUE(created.isOk()) << created.status().message();
  Cell& cell = **created;

  std::ifstream in(cell.urlsJsonPath());
  std::stringstream text;
  text << in.rdbuf();
  rapidjson::Document urls;
  urls.Parse(text.str().c_str());
  ASSERT_TRUE(urls.IsObject()) << text.str();
  for (size_t i = 0; i < cell.size(); ++i) {
    const CellMember& m = cell.member(i);
    EXPECT_NE(m.ferry_port, 0);
    EXPECT_NE(m.ferry_admin_port, 0);
    EXPECT_EQ(m.entryPort(), m.ferry_port);
    EXPECT_FALSE(m.ferry_config_path.empty());
    // urls.json names the ferries' listeners (see cell.cc).
    EXPECT_EQ(std::string(urls[m.name.c_str()].GetString()),
              "http://127.0.0.1:" + std::to_string(m.ferry_port));
  }

  // Through a non-owner's ferry: created and appended at the owner.
  const std::string name = cell.streamOwnedBy(0, "via-ferry");
  const uint16_t entry = cell.member(1).ferry_port;
  auto put = httpRequest(entry, "PUT", "/v1/stream/" + name, {{"content-type", "text/plain"}});
  ASSERT_TRUE(put.isOk()) << put.status().message();
  EXPECT_EQ(put->status, 201) << put->body;
  auto post = httpRequest(entry, "POST", "/v1/stream/" + name, {}, "hello");
  ASSERT_TRUE(post.isOk());
  EXPECT_EQ(post->status, 204) << post->body;
  EXPECT_EQ(post->headerOr("prisma-streams-origin"), "inst-1");
  auto applied =
      httpRequest(cell.member(0).emulator_port, "GET", "/v1/debug/applied?stream=" + name,
                  {{"x-control-token", o.control_token}});
  ASSERT_TRUE(applied.isOk());
  EXPECT_NE(applied->body.find("\"forwarded_by\":\"inst-2\""), std::string::npos) << applied->body;
}

// https mode: urls.json names the ferries' TLS listeners, a client of the cell talks https
// with the cell's CA and client certificate, and the forward between ferries is mTLS (the
// owner's ferry accepted two verified handshakes: the client's PUT and the forward).
TEST(CellWithFerryTest, HttpsModeServesAndForwardsOverMutualTls) {
  CellOptions o;
  o.members = 2;
  o.ferry_path = FERRY_BINARY_PATH;
  o.tls = true;
  auto created = Cell::create(o);
  ASSERT_TRUE(created.isOk()) << created.status().message();
  Cell& cell = **created;
  ASSERT_NE(cell.tlsFiles(), nullptr);
  ASSERT_TRUE(cell.clientTls().has_value());

  std::ifstream in(cell.urlsJsonPath());
  std::stringstream text;
  text << in.rdbuf();
  rapidjson::Document urls;
  urls.Parse(text.str().c_str());
  ASSERT_TRUE(urls.IsObject()) << text.str();
  for (size_t i = 0; i < cell.size(); ++i) {
    const CellMember& m = cell.member(i);
    EXPECT_EQ(std::string(urls[m.name.c_str()].GetString()),
              "https://127.0.0.1:" + std::to_string(m.ferry_port));
  }
  EXPECT_NE(cell.describe().find("url=https://127.0.0.1:"), std::string::npos);
  EXPECT_NE(cell.describe().find("ferry-cell tls ca=" + cell.tlsFiles()->ca_file),
            std::string::npos);

  // The listener speaks only TLS now: a plain request is not served.
  auto plain = httpRequest(cell.member(1).ferry_port, "GET", "/v1/stream/x");
  EXPECT_TRUE(!plain.isOk() || plain->status == 400);

  const ClientTls tls = *cell.clientTls();
  const std::string name = cell.streamOwnedBy(0, "via-https");
  const uint16_t owner = cell.member(0).ferry_port;
  const uint16_t entry = cell.member(1).ferry_port;
  auto put = httpRequest(owner, "PUT", "/v1/stream/" + name, {{"content-type", "text/plain"}}, {},
                         std::chrono::seconds(10), &tls);
  ASSERT_TRUE(put.isOk()) << put.status().message();
  EXPECT_EQ(put->status, 201) << put->body;
  auto post =
      httpRequest(entry, "POST", "/v1/stream/" + name, {}, "hello", std::chrono::seconds(10), &tls);
  ASSERT_TRUE(post.isOk()) << post.status().message();
  EXPECT_EQ(post->status, 204) << post->body;
  EXPECT_EQ(post->headerOr("streams-forwarded-to"), "inst-1");
  auto stats = httpRequest(cell.member(0).ferry_admin_port, "GET", "/stats");
  ASSERT_TRUE(stats.isOk());
  EXPECT_NE(stats->body.find("ferry_downstream_tls_handshakes_total{outcome=\"ok\"} 2"),
            std::string::npos)
      << stats->body;
}

// The launcher: `ferry-cell --ferry F --tls` prints https URLs and the client files, which
// are enough for a client to reach a member over verified mTLS; SIGTERM stops it.
TEST(CellWithFerryTest, FerryCellTlsFlagStartsAnHttpsCell) {
  ProcessOptions o;
  o.argv = {FERRY_CELL_PATH, "--members", "2", "--ferry", FERRY_BINARY_PATH, "--tls"};
  auto p = Process::start(std::move(o));
  ASSERT_TRUE(p.isOk()) << p.status().message();
  Process& launcher = **p;
  auto member = launcher.waitForLine(
      R"(^ferry-cell member inst-1 .* url=https://127\.0\.0\.1:(\d+)$)", std::chrono::seconds(15));
  ASSERT_TRUE(member.isOk()) << member.status().message() << launcher.stderrText();
  auto files = launcher.waitForLine(
      R"(^ferry-cell tls ca=(\S+) client_cert=(\S+) client_key=(\S+)$)", std::chrono::seconds(5));
  ASSERT_TRUE(files.isOk()) << files.status().message();
  ASSERT_TRUE(launcher.waitForLine("^ferry-cell ready$", std::chrono::seconds(5)).isOk());
  const ClientTls tls{files->at(1), files->at(2), files->at(3), ""};
  auto r = httpRequest(static_cast<uint16_t>(std::stoi(member->at(1))), "GET", "/health", {}, {},
                       std::chrono::seconds(10), &tls);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  launcher.signal(SIGTERM);
  EXPECT_EQ(launcher.waitExit(std::chrono::seconds(15)), std::optional<int>(0));
}

TEST(CellWithFerryTest, HttpsModeNeedsFerries) {
  CellOptions o;
  o.members = 1;
  o.tls = true;
  auto created = Cell::create(o);
  ASSERT_FALSE(created.isOk());
  EXPECT_NE(created.status().message().find("tls"), std::string::npos);
}

}  // namespace
}  // namespace ferry::testing
