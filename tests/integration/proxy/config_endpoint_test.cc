// Admin GET /config: the effective config, the running process's facts, the peer table version.

#include <rapidjson/document.h>

#include "tests/integration/proxy/support/proxy_test_base.h"

namespace ferry::itest {
namespace {

using ConfigEndpointTest = ProxyTest;

TEST_F(ConfigEndpointTest, ShowsTheEffectiveConfigAndThePeerTableVersion) {
  FerryConfigParams params;
  params.forwarding_yaml =
      "{enabled: true, allow_http_peers: true, peers: {inst-2: \"http://127.0.0.1:1\"}}";
  params.extra_yaml = "forwarded_headers: {trusted_hops: 2}\n";
  startFerry(params);
  int status = 0;
  auto body = ferry_->adminGet("/config", &status);
  ASSERT_TRUE(body);
  EXPECT_EQ(status, 200);
  rapidjson::Document doc;
  doc.Parse(body->c_str());
  ASSERT_FALSE(doc.HasParseError()) << *body;
  EXPECT_STREQ(doc["config"]["instance_name"].GetString(), "inst-1");
  EXPECT_EQ(doc["config"]["local_instance"]["port"].GetUint(), upstream_.port());
  EXPECT_EQ(doc["config"]["forwarded_headers"]["trusted_hops"].GetUint(), 2u);
  EXPECT_STREQ(doc["config"]["forwarding"]["peers"]["inst-2"].GetString(), "http://127.0.0.1:1");
  EXPECT_EQ(doc["config"]["listener"]["port"].GetUint(), 0u);              // as configured
  EXPECT_EQ(doc["effective"]["listener_port"].GetUint(), ferry_->port());  // as bound
  EXPECT_EQ(doc["effective"]["admin_port"].GetUint(), ferry_->adminPort());
  EXPECT_EQ(doc["effective"]["workers"].GetUint(), 1u);
  ASSERT_TRUE(doc["peer_table_version"].IsUint64()) << *body;
  EXPECT_EQ(static_cast<int64_t>(doc["peer_table_version"].GetUint64()),
            ferry_->stat("ferry_peer_table_version"));
}

TEST_F(ConfigEndpointTest, NoForwardingNoPeerTableVersion) {
  startFerry();
  auto body = ferry_->adminGet("/config");
  ASSERT_TRUE(body);
  rapidjson::Document doc;
  doc.Parse(body->c_str());
  ASSERT_FALSE(doc.HasParseError()) << *body;
  EXPECT_TRUE(doc["peer_table_version"].IsNull());
  EXPECT_FALSE(doc["config"]["forwarding"]["enabled"].GetBool());
}

}  // namespace
}  // namespace ferry::itest
