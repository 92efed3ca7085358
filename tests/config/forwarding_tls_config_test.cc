// `forwarding.tls`: client TLS to https owners. Files are loaded at load time (start and
// `ferry --validate`), so each bad file is an error under its own key.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "integration/certs/test_certs.h"
#include "tests/config/config_test_util.h"

namespace ferry::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class ForwardingTlsConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("ferry-tls-config-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    const auto ca = ferry::testing::makeCa("config test CA");
    ferry::testing::LeafOptions client_opts;
    client_opts.client = true;
    const auto client = ferry::testing::makeLeaf(ca, client_opts);
    const auto other = ferry::testing::makeLeaf(ca, client_opts);
    write("ca.pem", ca.cert_pem);
    write("client.pem", client.cert_pem);
    write("client.key", client.key_pem);
    write("other.key", other.key_pem);
    write("garbage.pem", "not a certificate\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    ASSERT_TRUE(ferry::testing::writeFile(path(name), text).isOk());
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string yaml(const std::string& tls) const {
    return "instance_name: a\nforwarding:\n  tls:\n" + tls;
  }
  std::filesystem::path dir_;
};

TEST_F(ForwardingTlsConfigTest, DefaultsVerifyAgainstTheSystemStore) {
  const FerryConfig c = configOf("instance_name: a\n");
  EXPECT_TRUE(c.forwarding.tls.verify);
  EXPECT_EQ(c.forwarding.tls.ca_file, "");
  EXPECT_EQ(c.forwarding.tls.client_cert_file, "");
}

TEST_F(ForwardingTlsConfigTest, EveryKeyIsRead) {
  const FerryConfig c =
      configOf(yaml("    ca_file: " + path("ca.pem") +
                    "\n    verify: true\n    client_cert_file: " + path("client.pem") +
                    "\n    client_key_file: " + path("client.key") + "\n"));
  EXPECT_EQ(c.forwarding.tls.ca_file, path("ca.pem"));
  EXPECT_TRUE(c.forwarding.tls.verify);
  EXPECT_EQ(c.forwarding.tls.client_cert_file, path("client.pem"));
  EXPECT_EQ(c.forwarding.tls.client_key_file, path("client.key"));
}

TEST_F(ForwardingTlsConfigTest, VerifyMayBeTurnedOff) {
  EXPECT_FALSE(configOf(yaml("    verify: false\n")).forwarding.tls.verify);
}

TEST_F(ForwardingTlsConfigTest, MissingCaFileIsAnErrorAtItsKey) {
  EXPECT_THAT(errorsOf(yaml("    ca_file: " + path("nope.pem") + "\n")),
              ElementsAre(AllOf(StartsWith("forwarding.tls.ca_file: cannot read"),
                                HasSubstr("No such file"))));
}

TEST_F(ForwardingTlsConfigTest, CaFileWithoutCertificatesIsAnError) {
  EXPECT_ONE_ERROR(yaml("    ca_file: " + path("garbage.pem") + "\n"),
                   "forwarding.tls.ca_file: no PEM certificate");
}

TEST_F(ForwardingTlsConfigTest, ClientCertificateAndKeyGoTogether) {
  EXPECT_ONE_ERROR(yaml("    client_cert_file: " + path("client.pem") + "\n"),
                   "forwarding.tls.client_key_file: client_cert_file and client_key_file");
  EXPECT_ONE_ERROR(yaml("    client_key_file: " + path("client.key") + "\n"),
                   "forwarding.tls.client_cert_file: client_cert_file and client_key_file");
}

TEST_F(ForwardingTlsConfigTest, BadClientFilesAreErrorsAtTheirKeys) {
  EXPECT_ONE_ERROR(yaml("    client_cert_file: " + path("garbage.pem") +
                        "\n    client_key_file: " + path("client.key") + "\n"),
                   "forwarding.tls.client_cert_file: not a PEM certificate chain");
  EXPECT_ONE_ERROR(yaml("    client_cert_file: " + path("client.pem") +
                        "\n    client_key_file: " + path("missing.key") + "\n"),
                   "forwarding.tls.client_key_file: cannot read");
  EXPECT_ONE_ERROR(yaml("    client_cert_file: " + path("client.pem") +
                        "\n    client_key_file: " + path("other.key") + "\n"),
                   "forwarding.tls.client_key_file: does not match client_cert_file");
}

TEST_F(ForwardingTlsConfigTest, WrongTypesAndUnknownKeysAreErrors) {
  EXPECT_ONE_ERROR(yaml("    verify: maybe\n"), "forwarding.tls.verify:");
  EXPECT_ONE_ERROR(yaml("    ca_path: /etc/ssl\n"), "forwarding.tls.ca_path: unknown key");
  EXPECT_ONE_ERROR(yaml("    ca_file: \"\"\n"), "forwarding.tls.ca_file: must not be empty");
  EXPECT_ONE_ERROR("instance_name: a\nforwarding:\n  tls: yes\n", "forwarding.tls:");
}

}  // namespace
}  // namespace ferry::config
