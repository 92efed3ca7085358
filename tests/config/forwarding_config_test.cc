// The `forwarding:` section: inline peers, the fleet file, domains and routes.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/config/config_test_util.h"

namespace ferry::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

const std::string kBase = "instance_name: a\nforwarding:\n";

TEST(ForwardingConfigTest, InlinePeers) {
  const FerryConfig c = configOf(kBase +
                                 "  peers:\n"
                                 "    inst-1: https://10.0.0.1:8443\n"
                                 "    inst-2: https://inst-2.example\n");
  EXPECT_EQ(c.forwarding.peers.size(), 2u);
  EXPECT_EQ(c.forwarding.peers.at("inst-1"), "https://10.0.0.1:8443");
}

TEST(ForwardingConfigTest, EveryBadPeerIsReportedUnderItsName) {
  EXPECT_THAT(
      errorsOf(kBase + "  peers:\n"
                       "    inst-1: https://u@h\n"
                       "    inst-2: https://h/path\n"
                       "    inst-3: https://h?q\n"
                       "    inst-4: https://h#f\n"
                       "    inst-5: http://h\n"
                       "    inst-6: https://h:0\n"
                       "    ok: https://h\n"
                       "    bad name: https://h\n"
                       "    inst-7: [https://h]\n"),
      UnorderedElementsAre("forwarding.peers.inst-1: userinfo not allowed in \"https://u@h\"",
                           "forwarding.peers.inst-2: path not allowed in \"https://h/path\"",
                           "forwarding.peers.inst-3: query not allowed in \"https://h?q\"",
                           "forwarding.peers.inst-4: fragment not allowed in \"https://h#f\"",
                           StartsWith("forwarding.peers.inst-5: http not allowed"),
                           "forwarding.peers.inst-6: port must be 1..65535 in \"https://h:0\"",
                           StartsWith("forwarding.peers.bad name: not a valid instance name"),
                           "forwarding.peers.inst-7: must be a string (got a list)"));
}

TEST(ForwardingConfigTest, PolicyAppliesToInlinePeers) {
  configOf(kBase + "  allow_http_peers: true\n  peers: {a: \"http://127.0.0.1:8081\"}\n");
  EXPECT_ONE_ERROR(kBase + "  peer_domains: [streams.internal]\n  peers: {a: https://x.other}\n",
                   "forwarding.peers.a: host \"x.other\" not in peer_domains in "
                   "\"https://x.other\"");
  configOf(kBase +
           "  peer_domains: [streams.internal]\n  peers: {a: https://a.streams.internal}\n");
}

TEST(ForwardingConfigTest, PeersMustBeAMapping) {
  EXPECT_ONE_ERROR(kBase + "  peers: [https://h]\n",
                   "forwarding.peers: must be a mapping of instance name to origin");
  EXPECT_ONE_ERROR(kBase + "  peers: {a: https://h, a: https://g}\n",
                   "forwarding.peers.a: duplicate key");
}

TEST(ForwardingConfigTest, PeerDomains) {
  EXPECT_ONE_ERROR(kBase + "  peer_domains: [ok.example, .bad.example]\n",
                   "forwarding.peer_domains[1]: invalid domain \".bad.example\"");
  EXPECT_ONE_ERROR(kBase + "  peer_domains: [ok.example, [x]]\n",
                   "forwarding.peer_domains[1]: must be a string (got a list)");
  EXPECT_ONE_ERROR(kBase + "  peer_domains: ok.example\n",
                   "forwarding.peer_domains: must be a list (got \"ok.example\")");
  EXPECT_EQ(configOf(kBase + "  peer_domains: [a.example, 10.0.0.1, \"[::1]\"]\n")
                .forwarding.peer_domains.size(),
            3u);
}

TEST(ForwardingConfigTest, Routes) {
  EXPECT_ONE_ERROR(kBase + "  routes: [/v1/stream/, v1/streams/]\n",
                   "forwarding.routes[1]: must be a path prefix starting with \"/\"");
  EXPECT_ONE_ERROR(kBase + "  routes: [\"\"]\n", "forwarding.routes[0]: must be a path prefix");
  EXPECT_ONE_ERROR(kBase + "  routes: [\"/a b\"]\n", "forwarding.routes[0]: must be a path prefix");
  EXPECT_ONE_ERROR(kBase + "  routes: [\"/a?b\"]\n", "forwarding.routes[0]: must be a path prefix");
  EXPECT_TRUE(configOf(kBase + "  routes: []\n").forwarding.routes.empty());
}

TEST(ForwardingConfigTest, WatchInterval) {
  EXPECT_ONE_ERROR(kBase + "  watch_interval: 50ms\n",
                   "forwarding.watch_interval: must be at least 100ms");
  EXPECT_ONE_ERROR(kBase + "  watch_interval: soon\n",
                   "forwarding.watch_interval: invalid duration \"soon\"");
  EXPECT_EQ(configOf(kBase + "  watch_interval: 5s\n").forwarding.watch_interval, Millis(5000));
}

TEST(ForwardingConfigTest, OwnerRouting) {
  const auto defaults = configOf(kBase).forwarding.owner_routing;
  EXPECT_TRUE(defaults.enabled);
  EXPECT_EQ(defaults.max_entries, 100000u);
  EXPECT_EQ(defaults.ttl, Millis(30000));
  const auto set = configOf(kBase + "  owner_routing: {enabled: false, max_entries: 10, ttl: 2s}\n")
                       .forwarding.owner_routing;
  EXPECT_FALSE(set.enabled);
  EXPECT_EQ(set.max_entries, 10u);
  EXPECT_EQ(set.ttl, Millis(2000));
  EXPECT_ONE_ERROR(kBase + "  owner_routing: {max_entries: 0}\n",
                   "forwarding.owner_routing.max_entries: must be an integer 1..10000000");
  EXPECT_ONE_ERROR(kBase + "  owner_routing: {ttl: 10ms}\n",
                   "forwarding.owner_routing.ttl: must be at least 100ms");
  EXPECT_ONE_ERROR(kBase + "  owner_routing: {enabled: maybe}\n",
                   "forwarding.owner_routing.enabled: must be true or false");
  EXPECT_ONE_ERROR(kBase + "  owner_routing: {entries: 5}\n",
                   "forwarding.owner_routing.entries: unknown key");
}

class FleetFileConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One folder per test and process: ctest runs these tests in parallel processes.
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("ferry_fleet_config_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const auto path = dir_ / name;
    std::ofstream(path, std::ios::trunc) << text;
    return path.string();
  }

  std::filesystem::path dir_;
};

TEST_F(FleetFileConfigTest, ValidFleetFile) {
  const std::string fleet = write("urls.json", R"({"a":"https://10.0.0.1:8443"})");
  const FerryConfig c = configOf(kBase + "  fleet_file: " + fleet + "\n");
  EXPECT_EQ(c.forwarding.fleet_file, fleet);
  EXPECT_TRUE(c.forwarding.peers.empty());
}

TEST_F(FleetFileConfigTest, MissingFleetFile) {
  const std::string missing = (dir_ / "missing.json").string();
  EXPECT_ONE_ERROR(
      kBase + "  fleet_file: " + missing + "\n",
      "forwarding.fleet_file: cannot read \"" + missing + "\": No such file or directory");
  EXPECT_ONE_ERROR(kBase + "  fleet_file: \"\"\n", "forwarding.fleet_file: must not be empty");
}

TEST_F(FleetFileConfigTest, InvalidFleetFileCarriesTheParserMessage) {
  const std::string bad = write("bad.json", R"({"inst-1":"https://h","inst-2":"https://u@h"})");
  EXPECT_ONE_ERROR(kBase + "  fleet_file: " + bad + "\n",
                   "forwarding.fleet_file: inst-2: userinfo not allowed in \"https://u@h\"");
  const std::string not_json = write("not.json", "{");
  EXPECT_ONE_ERROR(kBase + "  fleet_file: " + not_json + "\n",
                   "forwarding.fleet_file: invalid JSON at offset");
  const std::string array = write("array.json", "[]");
  EXPECT_ONE_ERROR(kBase + "  fleet_file: " + array + "\n",
                   "forwarding.fleet_file: fleet urls must be a JSON object");
}

TEST_F(FleetFileConfigTest, FleetFileIsCheckedWithThePolicy) {
  const std::string http = write("http.json", R"({"a":"http://127.0.0.1:8081"})");
  EXPECT_ONE_ERROR(kBase + "  fleet_file: " + http + "\n",
                   "forwarding.fleet_file: a: http not allowed");
  configOf(kBase + "  allow_http_peers: true\n  fleet_file: " + http + "\n");
  EXPECT_ONE_ERROR(kBase +
                       "  allow_http_peers: true\n  peer_domains: [x.example]\n"
                       "  fleet_file: " +
                       http + "\n",
                   "forwarding.fleet_file: a: host \"127.0.0.1\" not in peer_domains");
}

TEST_F(FleetFileConfigTest, FleetFileAndPeersAreMutuallyExclusive) {
  const std::string fleet = write("urls.json", R"({"a":"https://h"})");
  EXPECT_ONE_ERROR(kBase + "  fleet_file: " + fleet + "\n  peers: {b: https://g}\n",
                   "forwarding.peers: cannot be used together with forwarding.fleet_file");
}

TEST_F(FleetFileConfigTest, RelativeFleetFileIsRelativeToTheConfigFile) {
  write("urls.json", R"({"a":"https://h"})");
  const std::string config = write("ferry.yaml", kBase + "  fleet_file: urls.json\n");
  const LoadResult r = app::loadConfigFile(config);
  ASSERT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors[0].toString());
  EXPECT_EQ(r.config->forwarding.fleet_file, (dir_ / "urls.json").string());

  const std::string missing = write("other.yaml", kBase + "  fleet_file: nope.json\n");
  const LoadResult bad = app::loadConfigFile(missing);
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_EQ(bad.errors[0].path, "forwarding.fleet_file");
  EXPECT_THAT(bad.errors[0].message, HasSubstr((dir_ / "nope.json").string()));
}

}  // namespace
}  // namespace ferry::config
