// Tests proxy/server/server_stats.cc and proxy/stats/accept_backoffs.cc: the server's own
// families (the workers' accept path, the TLS reloads) are registered by ServerStats under the
// names scrapers read, and by it alone, not by the streams' ProxyStats (docs/metrics.md, "Where a
// metric lives"); the data listener (ServerStats) and the admin listener (admin::AdminStats)
// count their accept() backoffs in the one family ferry_accept_backoffs_total, told apart by the
// `listener` label.

#include "proxy/server/server_stats.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "proxy/admin/admin_stats.h"
#include "proxy/stats/accept_backoffs.h"
#include "proxy/stats/proxy_stats.h"
#include "tests/support/stats/stats_lookup.h"

namespace ferry::server {
namespace {

int countLinesStartingWith(const std::string& text, const std::string& prefix) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

// The families ServerStats owns, as /stats names them.
constexpr const char* kServerFamilies[] = {
    "ferry_downstream_connections_overflow_total",
    "ferry_downstream_connections_per_address_overflow_total",
    "ferry_accept_backoffs_total",
    "ferry_tls_reloads_total",
    "ferry_tls_reload_failures_total",
};

TEST(ServerStatsTest, EachCounterIsExportedUnderItsFamilyName) {
  stats::Store store;
  ServerStats server(store);
  server.downstream_connections_overflow.inc(1);
  server.downstream_connections_per_address_overflow.inc(2);
  server.accept_backoffs.inc(3);
  server.tls_reloads.inc(4);
  server.tls_reload_failures.inc(5);

  using ferry::testing::statOf;
  EXPECT_EQ(statOf(store, "ferry_downstream_connections_overflow_total"), 1);
  EXPECT_EQ(statOf(store, "ferry_downstream_connections_per_address_overflow_total"), 2);
  EXPECT_EQ(statOf(store, "ferry_accept_backoffs_total", {{"listener", "data"}}), 3);
  EXPECT_EQ(statOf(store, "ferry_tls_reloads_total"), 4);
  EXPECT_EQ(statOf(store, "ferry_tls_reload_failures_total"), 5);
}

TEST(ServerStatsTest, TheStreamsStatsRegisterNoneOfTheServersFamilies) {
  stats::Store store;
  stats::ProxyStats streams(store);
  const std::string text = store.renderPrometheus();
  for (const char* family : kServerFamilies) {
    EXPECT_EQ(countLinesStartingWith(text, std::string("# TYPE ") + family + " "), 0)
        << family << " is registered by ProxyStats:\n"
        << text;
  }
}

TEST(ServerStatsTest, BothListenersCountAcceptBackoffsInOneFamily) {
  stats::Store store;
  ServerStats data(store);
  admin::AdminStats admin(store);
  data.accept_backoffs.inc();
  admin.accept_backoffs.inc(2);

  EXPECT_EQ(&data.accept_backoffs, &stats::acceptBackoffsCounter(store, "data"));
  EXPECT_EQ(&admin.accept_backoffs, &stats::acceptBackoffsCounter(store, "admin"));
  const std::string text = store.renderPrometheus();
  EXPECT_EQ(countLinesStartingWith(text, "# TYPE ferry_accept_backoffs_total counter"), 1) << text;
  EXPECT_EQ(countLinesStartingWith(text, "# HELP ferry_accept_backoffs_total "), 1) << text;
  EXPECT_EQ(countLinesStartingWith(text, "ferry_accept_backoffs_total{listener=\"data\"} 1"), 1)
      << text;
  EXPECT_EQ(countLinesStartingWith(text, "ferry_accept_backoffs_total{listener=\"admin\"} 2"), 1)
      << text;
}

}  // namespace
}  // namespace ferry::server
