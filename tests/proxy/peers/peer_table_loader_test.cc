// The loader resolves peer hostnames at each load (never on the request path) and keeps names
// that do not resolve without an address, counted.

#include "proxy/peers/peer_table_loader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "proxy/peers/peer_resolver.h"
#include "tests/support/stats/stats_lookup.h"

namespace ferry::peers {
namespace {

class PeerTableLoaderTest : public ::testing::Test {
 protected:
  PeerTableSource inlinePeers(std::map<std::string, std::string> peers) {
    PeerTableSource config;
    config.peers = std::move(peers);
    config.policy.allow_http = true;
    return config;
  }
  event::Dispatcher main_;
  stats::Store stats_;
  event::WorkerSlots slots_;
  PeerTableProvider provider_{slots_};
  std::map<std::string, int> lookups_;
  HostResolver fakeResolver() {
    return [this](const std::string& host) -> std::optional<std::string> {
      ++lookups_[host];
      if (host == "owner.example") return std::string("10.1.2.3");
      return std::nullopt;
    };
  }
};

TEST_F(PeerTableLoaderTest, HostnamesAreResolvedAtLoadAndUsedToConnect) {
  auto config = inlinePeers({{"inst-2", "https://owner.example:8443"},
                             {"inst-3", "http://127.0.0.1:9000"},
                             {"inst-4", "http://localhost:9001"}});
  PeerTableLoader loader(main_, config, provider_, stats_, fakeResolver());
  ASSERT_TRUE(loader.start().isOk());
  auto table = provider_.latest();
  ASSERT_TRUE(table);
  const PeerOrigin* owner = table->find("inst-2");
  ASSERT_NE(owner, nullptr);
  EXPECT_EQ(owner->host, "owner.example") << "the origin stays as published";
  EXPECT_EQ(owner->address, "10.1.2.3");
  EXPECT_EQ(owner->connectHost(), "10.1.2.3");
  EXPECT_EQ(table->find("inst-3")->connectHost(), "127.0.0.1");
  EXPECT_EQ(table->find("inst-4")->connectHost(), "127.0.0.1");
  // Only the hostname was looked up: literals and localhost need no resolver.
  EXPECT_EQ(lookups_.size(), 1u);
  EXPECT_EQ(lookups_["owner.example"], 1);
  EXPECT_NE(loader.renderJson().find("\"addresses\":{\"inst-2\":\"10.1.2.3\"}"), std::string::npos)
      << loader.renderJson();
}

TEST_F(PeerTableLoaderTest, UnresolvableHostKeepsThePeerWithoutAnAddressAndIsCounted) {
  auto config = inlinePeers({{"inst-2", "http://nowhere.invalid:80"}});
  PeerTableLoader loader(main_, config, provider_, stats_, fakeResolver());
  ASSERT_TRUE(loader.start().isOk()) << "one bad name does not reject the table";
  const PeerOrigin* peer = provider_.latest()->find("inst-2");
  ASSERT_NE(peer, nullptr);
  EXPECT_TRUE(peer->address.empty());
  EXPECT_EQ(peer->connectHost(), "nowhere.invalid") << "not numeric: the connect fails early";
  EXPECT_EQ(ferry::testing::statOf(stats_, "ferry_peer_resolve_failures_total"), 1);
}

TEST_F(PeerTableLoaderTest, ReloadResolvesAgain) {
  auto config = inlinePeers({{"inst-2", "https://owner.example:8443"}});
  PeerTableLoader loader(main_, config, provider_, stats_, fakeResolver());
  ASSERT_TRUE(loader.start().isOk());
  loader.reload();  // SIGHUP
  EXPECT_EQ(lookups_["owner.example"], 2);
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

// An operator fixes a broken urls.json by putting back the same table: /peers must say the
// file is good again (last_error null, read_at moved) although the version does not move.
TEST_F(PeerTableLoaderTest, AGoodReadClearsTheLastErrorEvenWhenTheTableIsUnchanged) {
  const std::string path = ::testing::TempDir() + "/peer_table_loader_test_urls.json";
  const std::string good = R"({"inst-2":"http://127.0.0.1:9000"})";
  writeFile(path, good);
  PeerTableSource config;
  config.fleet_file = path;
  config.policy.allow_http = true;
  PeerTableLoader loader(main_, config, provider_, stats_, fakeResolver());
  ASSERT_TRUE(loader.start().isOk());
  EXPECT_NE(loader.renderJson().find("\"last_error\":null"), std::string::npos);

  writeFile(path, "{ not json");
  loader.reload();
  const std::string broken = loader.renderJson();
  EXPECT_EQ(broken.find("\"last_error\":null"), std::string::npos) << broken;
  EXPECT_NE(broken.find("\"version\":1"), std::string::npos) << broken;

  writeFile(path, good);
  loader.reload();
  const std::string fixed = loader.renderJson();
  EXPECT_NE(fixed.find("\"last_error\":null"), std::string::npos) << fixed;
  EXPECT_NE(fixed.find("\"last_error_at\":null"), std::string::npos) << fixed;
  EXPECT_NE(fixed.find("\"version\":1"), std::string::npos) << "same table, same version";
  EXPECT_NE(fixed.find("\"read_at\":\""), std::string::npos) << fixed;
  std::remove(path.c_str());
}

TEST(PeerResolverTest, SystemResolverReturnsNumericAddressesOrNothing) {
  std::optional<std::string> address = resolveWithSystem("localhost");
  ASSERT_TRUE(address.has_value());
  EXPECT_TRUE(isIpLiteral(*address)) << *address;
  EXPECT_FALSE(resolveWithSystem("no-such-host.invalid").has_value());
  EXPECT_TRUE(isIpLiteral("127.0.0.1"));
  EXPECT_TRUE(isIpLiteral("::1"));
  EXPECT_FALSE(isIpLiteral("owner.example"));
}

}  // namespace
}  // namespace ferry::peers
