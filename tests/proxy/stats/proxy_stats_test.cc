// Tests proxy/stats/proxy_stats.cc's acceptBackoffsCounter(): the data listener (ProxyStats)
// and the admin listener (admin::AdminStats) count their accept() backoffs in the one family
// ferry_accept_backoffs_total, told apart by the `listener` label.

#include "proxy/stats/proxy_stats.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "proxy/admin/admin_stats.h"

namespace ferry::stats {
namespace {

int countLinesStartingWith(const std::string& text, const std::string& prefix) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

TEST(ProxyStatsTest, BothListenersCountAcceptBackoffsInOneFamily) {
  Store store;
  ProxyStats data(store);
  admin::AdminStats admin(store);
  data.accept_backoffs.inc();
  admin.accept_backoffs.inc(2);

  EXPECT_EQ(&data.accept_backoffs, &acceptBackoffsCounter(store, "data"));
  EXPECT_EQ(&admin.accept_backoffs, &acceptBackoffsCounter(store, "admin"));
  const std::string text = store.renderPrometheus();
  EXPECT_EQ(countLinesStartingWith(text, "# TYPE ferry_accept_backoffs_total counter"), 1) << text;
  EXPECT_EQ(countLinesStartingWith(text, "# HELP ferry_accept_backoffs_total "), 1) << text;
  EXPECT_EQ(countLinesStartingWith(text, "ferry_accept_backoffs_total{listener=\"data\"} 1"), 1)
      << text;
  EXPECT_EQ(countLinesStartingWith(text, "ferry_accept_backoffs_total{listener=\"admin\"} 2"), 1)
      << text;
}

}  // namespace
}  // namespace ferry::stats
