#include "proxy/stats/accept_backoffs.h"

#include <string>

namespace ferry::stats {

Counter& acceptBackoffsCounter(Store& store, std::string_view listener) {
  return store.counter("ferry_accept_backoffs_total",
                       "accept() failures (EMFILE/ENFILE: out of descriptors) that paused a "
                       "listener for a short backoff",
                       {{"listener", std::string(listener)}});
}

}  // namespace ferry::stats
