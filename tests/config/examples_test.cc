// Every example under config/examples/ must stay valid.

#include <gtest/gtest.h>

#include <filesystem>

#include "app/config_check.h"
#include "config/config_loader.h"
#include "proxy/peers/peer_table_parser.h"

namespace ferry::config {
namespace {

const std::string kDir = FERRY_CONFIG_EXAMPLES_DIR;

LoadResult loadExample(const std::string& name) {
  LoadResult r = app::loadConfigFile(kDir + "/" + name);
  for (const auto& e : r.errors) {
    ADD_FAILURE() << name << ": " << e.toString();
  }
  return r;
}

TEST(ExamplesTest, FerryYamlIsValidAndSetsEveryKey) {
  const LoadResult r = loadExample("ferry.yaml");
  ASSERT_TRUE(r.ok());
  const FerryConfig& c = *r.config;
  EXPECT_EQ(c.instance_name, "streams-1");
  EXPECT_EQ(c.listener.host, "0.0.0.0");
  EXPECT_EQ(c.workers, 2u);
  EXPECT_EQ(c.access_log, "-");
  EXPECT_EQ(c.timeouts.response_head, std::chrono::seconds(15));
  EXPECT_EQ(c.forwarding.peer_domains, std::vector<std::string>{"streams.internal"});
  EXPECT_EQ(c.forwarding.fleet_file,
            (std::filesystem::path(kDir) / "fleet-urls.json").lexically_normal().string());
}

TEST(ExamplesTest, MinimalYamlIsValid) {
  const LoadResult r = loadExample("minimal.yaml");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.config->instance_name, "streams-1");
}

TEST(ExamplesTest, FleetUrlsJsonIsValid) {
  auto table = peers::loadFleetFile(kDir + "/fleet-urls.json",
                                    peers::PeerPolicy{false, {"streams.internal"}});
  ASSERT_TRUE(table.isOk()) << table.status().message();
  EXPECT_EQ(table->size(), 4u);
  EXPECT_EQ(table->at("streams-4").port, 443);
}

}  // namespace
}  // namespace ferry::config
