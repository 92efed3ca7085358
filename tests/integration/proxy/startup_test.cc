// Start-up and signal behaviour an operator sees: a port already in use, and SIGHUP with no TLS.

#include <unistd.h>

#include <csignal>
#include <fstream>

#include "tests/integration/proxy/support/proxy_test_base.h"

namespace ferry::itest {
namespace {

using StartupTest = ProxyTest;

TEST_F(StartupTest, ASecondFerryOnAPortInUseFailsWithAClearError) {
  startFerry();
  FerryConfigParams params;
  params.upstream_port = upstream_.port();
  params.listener_port = ferry_->port();
  std::string path = writeTempFile(renderConfig(params));
  CommandResult second = runFerry({"--config", path});
  EXPECT_EQ(second.exit_code, 1) << second.out;
  EXPECT_NE(second.out.find("listener.port " + std::to_string(ferry_->port()) + ": address in use"),
            std::string::npos)
      << second.out;
  // The first one still serves.
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/still")));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  EXPECT_EQ(request->message.path, "/still");
}

TEST_F(StartupTest, PortSharingIsTheOperatorsChoice) {
  FerryConfigParams first;
  first.reuse_port = true;
  startFerry(first);
  FerryConfigParams params;
  params.upstream_port = upstream_.port();
  params.listener_port = ferry_->port();
  params.reuse_port = true;
  std::string error;
  auto second = FerryProcess::start(renderConfig(params), &error);
  ASSERT_NE(second, nullptr) << error;
  EXPECT_EQ(second->port(), ferry_->port());
}

TEST_F(StartupTest, SighupWithoutTlsDoesNotClaimAReload) {
  // A fleet file and a watcher that will not look again in this test: only SIGHUP re-reads it.
  std::string fleet = writeTempFile(R"({"inst-2": "http://127.0.0.1:1"})", ".json");
  FerryConfigParams params;
  params.forwarding_yaml =
      "{enabled: true, allow_http_peers: true, fleet_file: \"" + fleet + "\", watch_interval: 1h}";
  startFerry(params);
  {
    std::ofstream out(fleet, std::ios::trunc);
    out << "{not json";
  }
  ferry_->signal(SIGHUP);
  // The failed peer-table read is counted by the same SIGHUP pass that would reload TLS files.
  ASSERT_TRUE(ferry_->waitForStat("ferry_peer_table_reload_failures_total", 1));
  EXPECT_EQ(ferry_->stat("ferry_tls_reloads_total"), 0);
  EXPECT_EQ(ferry_->stderrText().find("files reloaded"), std::string::npos) << ferry_->stderrText();
  ::unlink(fleet.c_str());
}

}  // namespace
}  // namespace ferry::itest
