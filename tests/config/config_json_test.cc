#include "config/config_json.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "tests/config/config_test_util.h"

namespace ferry::config {
namespace {

rapidjson::Document parse(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.c_str());
  EXPECT_FALSE(doc.HasParseError()) << text;
  return doc;
}

TEST(ConfigJsonTest, EveryKeyUnderItsYamlPathWithDefaults) {
  FerryConfig c = configOf(
      "instance_name: inst-1\nlistener: {port: 10001}\ntimeouts: {drain: 45s}\n"
      "forwarding: {peers: {inst-2: \"https://b.example:8443\"}}\n"
      "access_log: {path: /var/log/f.log, format: text}\n");
  RuntimeFacts facts;
  facts.workers = 4;
  facts.listener_port = 10001;
  facts.admin_port = 9901;
  facts.peer_table_version = 3;
  auto doc = parse(renderConfigJson(c, facts));
  const auto& cfg = doc["config"];
  EXPECT_STREQ(cfg["instance_name"].GetString(), "inst-1");
  EXPECT_EQ(cfg["listener"]["port"].GetUint(), 10001u);
  EXPECT_FALSE(cfg["listener"]["reuse_port"].GetBool());
  EXPECT_TRUE(cfg["listener"]["tls"].IsNull());
  EXPECT_STREQ(cfg["timeouts"]["drain"].GetString(), "45s");
  EXPECT_STREQ(cfg["timeouts"]["request_head"].GetString(), "10s");  // a default
  EXPECT_EQ(cfg["limits"]["max_request_headers"].GetUint(), 100u);
  EXPECT_STREQ(cfg["forwarding"]["peers"]["inst-2"].GetString(), "https://b.example:8443");
  EXPECT_TRUE(cfg["forwarding"]["tls"]["verify"].GetBool());
  EXPECT_TRUE(cfg["forwarding"]["tls"]["ca_file"].IsNull());
  EXPECT_STREQ(cfg["forwarding"]["owner_protocol"].GetString(), "auto");
  EXPECT_EQ(cfg["forwarding"]["owner_http2"]["max_streams_per_connection"].GetUint(), 1000u);
  EXPECT_STREQ(cfg["forwarding"]["owner_http2"]["ping_interval"].GetString(), "10s");
  EXPECT_STREQ(cfg["access_log"]["format"].GetString(), "text");
  EXPECT_TRUE(cfg["forwarded_headers"]["x_forwarded"].GetBool());
  EXPECT_TRUE(cfg["batched_writes"].GetBool());
  EXPECT_EQ(doc["effective"]["workers"].GetUint(), 4u);
  EXPECT_FALSE(doc["effective"]["batched_writes"].GetBool());  // not usable: facts say so
  EXPECT_EQ(doc["peer_table_version"].GetUint64(), 3u);
  facts.batched_writes = true;
  EXPECT_TRUE(parse(renderConfigJson(c, facts))["effective"]["batched_writes"].GetBool());
  EXPECT_FALSE(parse(renderConfigJson(configOf("instance_name: a\nbatched_writes: false\n"),
                                      facts))["config"]["batched_writes"]
                   .GetBool());
}

TEST(ConfigJsonTest, SecretFilesArePathsOnly) {
  FerryConfig c;
  c.instance_name = "a";
  c.listener.tls.enabled = true;
  c.listener.tls.cert_file = "/etc/ferry/cert.pem";
  c.listener.tls.key_file = "/etc/ferry/key.pem";
  c.forwarding.tls.client_key_file = "/etc/ferry/client.key";
  auto doc = parse(renderConfigJson(c, {}));
  EXPECT_STREQ(doc["config"]["listener"]["tls"]["key_file"].GetString(), "/etc/ferry/key.pem");
  EXPECT_STREQ(doc["config"]["forwarding"]["tls"]["client_key_file"].GetString(),
               "/etc/ferry/client.key");
  EXPECT_TRUE(doc["peer_table_version"].IsNull());
}

TEST(ConfigJsonTest, TlsCipherSettingsShowFerrysOrderAndAnUnsetListAsNull) {
  FerryConfig c;
  c.instance_name = "a";
  c.listener.tls.enabled = true;
  auto doc = parse(renderConfigJson(c, {}));
  const auto& tls = doc["config"]["listener"]["tls"];
  EXPECT_STREQ(tls["cipher_suites"].GetString(),
               "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256");
  EXPECT_TRUE(tls["ciphers"].IsNull());  // OpenSSL's default list
  c.listener.tls.ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256";
  doc = parse(renderConfigJson(c, {}));
  EXPECT_STREQ(doc["config"]["listener"]["tls"]["ciphers"].GetString(),
               "ECDHE-ECDSA-AES128-GCM-SHA256");
}

}  // namespace
}  // namespace ferry::config
