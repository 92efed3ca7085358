// proxy/tls/system_trust_store.h: without a ca_file, a client context trusts the system's CAs,
// read from the hashed default directory as chains are verified rather than from the bundle
// file when the context is built; SSL_CERT_FILE, or a directory without hashed entries, reads
// the bundle at once as OpenSSL's defaults do. Each test sets SSL_CERT_DIR / SSL_CERT_FILE to
// folders of its own (restored after it) and verifies against a real TLS server on loopback.

#include "proxy/tls/system_trust_store.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "integration/certs/test_certs.h"
#include "integration/harness/loopback.h"
#include "integration/harness/process.h"
#include "proxy/tls/client_context.h"
#include "tests/support/tls/scripted_tls_owner.h"

namespace ferry::tls {
namespace {

// Sets an environment variable for the test's lifetime, putting back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string subjectHashName(const std::string& cert_pem) {
  BIO* bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (cert == nullptr) return "";
  char name[32];
  std::snprintf(name, sizeof(name), "%08lx.0", X509_subject_name_hash(cert));
  X509_free(cert);
  return name;
}

size_t storedObjects(const ClientContext& context) {
  return sk_X509_OBJECT_num(X509_STORE_get0_objects(SSL_CTX_get_cert_store(context.raw())));
}

// One TLS handshake from `context` to 127.0.0.1:port; true when the server's chain verified.
bool handshakeVerifies(const ClientContext& context, uint16_t port) {
  const int fd = testing::connectToLoopback(port);
  if (fd < 0) return false;
  SSL* ssl = SSL_new(context.raw());
  SSL_set_fd(ssl, fd);
  const bool ok = SSL_connect(ssl) == 1 && SSL_get_verify_result(ssl) == X509_V_OK;
  SSL_free(ssl);
  ::close(fd);
  return ok;
}

class SystemTrustStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The client leaves right after its handshake: the owner's thread may then write its
    // session tickets to a closed socket, which must fail with EPIPE, not kill the test.
    std::signal(SIGPIPE, SIG_IGN);
    auto dir = testing::makeTempDir("ferry-trust-store");
    ASSERT_TRUE(dir.isOk()) << dir.status().message();
    dir_ = *dir;
    std::filesystem::create_directories(dir_ + "/hashed");
    std::filesystem::create_directories(dir_ + "/empty");
    ca_ = testing::makeCa("trust store test CA");
    const auto leaf = testing::makeLeaf(ca_, {.ips = {"127.0.0.1"}});
    ASSERT_TRUE(testing::writeFile(dir_ + "/ca.pem", ca_.cert_pem).isOk());
    const std::string hashed = subjectHashName(ca_.cert_pem);
    ASSERT_FALSE(hashed.empty());
    ASSERT_TRUE(testing::writeFile(dir_ + "/hashed/" + hashed, ca_.cert_pem).isOk());
    ASSERT_TRUE(testing::writeCertFiles(dir_, "server", leaf).isOk());
    owner_.emplace(dir_ + "/server.pem", dir_ + "/server.key", testing::TlsOwnerScript{});
  }
  void TearDown() override {
    owner_.reset();
    if (!dir_.empty()) testing::removeTempDir(dir_);
  }

  std::shared_ptr<ClientContext> systemTrustContext() {
    auto context = ClientContext::create(ClientSettings{});  // verify on, no ca_file
    EXPECT_TRUE(context.isOk()) << context.status().message();
    return context.isOk() ? *context : nullptr;
  }

  std::string dir_;
  testing::TestCert ca_;
  std::optional<testing::ScriptedTlsOwner> owner_;
};

TEST_F(SystemTrustStoreTest, AHashedDirectoryIsReadWhenAChainIsVerifiedNotWhenBuilt) {
  ScopedEnv file(X509_get_default_cert_file_env(), std::nullopt);
  ScopedEnv cert_dir(X509_get_default_cert_dir_env(), dir_ + "/empty:" + dir_ + "/hashed");
  EXPECT_EQ(chooseSystemTrust(), SystemTrust::kHashedDirectory);
  auto context = systemTrustContext();
  ASSERT_NE(context, nullptr);
  EXPECT_EQ(storedObjects(*context), 0u);
  EXPECT_TRUE(handshakeVerifies(*context, owner_->port()));
  EXPECT_EQ(storedObjects(*context), 1u);  // the CA, read for that chain and kept
}

TEST_F(SystemTrustStoreTest, AServerTheDirectoryDoesNotVouchForFailsVerification) {
  const auto other = testing::makeCa("another CA");
  ASSERT_TRUE(testing::writeFile(dir_ + "/empty/" + subjectHashName(other.cert_pem), other.cert_pem)
                  .isOk());
  ScopedEnv file(X509_get_default_cert_file_env(), std::nullopt);
  ScopedEnv cert_dir(X509_get_default_cert_dir_env(), dir_ + "/empty");
  EXPECT_EQ(chooseSystemTrust(), SystemTrust::kHashedDirectory);
  auto context = systemTrustContext();
  ASSERT_NE(context, nullptr);
  EXPECT_FALSE(handshakeVerifies(*context, owner_->port()));
}

TEST_F(SystemTrustStoreTest, SslCertFileIsReadAtOnceAsOpenSslDoes) {
  ScopedEnv file(X509_get_default_cert_file_env(), dir_ + "/ca.pem");
  ScopedEnv cert_dir(X509_get_default_cert_dir_env(), dir_ + "/hashed");
  EXPECT_EQ(chooseSystemTrust(), SystemTrust::kDefaultPaths);
  auto context = systemTrustContext();
  ASSERT_NE(context, nullptr);
  EXPECT_EQ(storedObjects(*context), 1u);  // the bundle's one CA, before any handshake
  EXPECT_TRUE(handshakeVerifies(*context, owner_->port()));
}

TEST_F(SystemTrustStoreTest, ADirectoryWithoutHashedEntriesFallsBackToTheBundle) {
  // A directory of plain PEM files (no c_rehash links) cannot be searched by subject: the
  // default paths are used, whose bundle is SSL_CERT_FILE's when set (here: unset, so the
  // build's default bundle, whatever this machine has).
  ASSERT_TRUE(testing::writeFile(dir_ + "/empty/ca.pem", ca_.cert_pem).isOk());
  ScopedEnv file(X509_get_default_cert_file_env(), std::nullopt);
  ScopedEnv cert_dir(X509_get_default_cert_dir_env(), dir_ + "/empty");
  EXPECT_EQ(chooseSystemTrust(), SystemTrust::kDefaultPaths);
  EXPECT_NE(systemTrustContext(), nullptr);
}

}  // namespace
}  // namespace ferry::tls
