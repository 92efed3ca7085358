#pragma once
// A client connection's fair share of what every client shares (a worker's upstream
// connections and pool queues): at most `limit` of the connection's requests run at once.
// Requests above it wait, in arrival order, with their head read and their body held (an
// HTTP/2 stream's flow-control window bounds what it may send meanwhile), and start as the
// connection's earlier requests end. One HTTP/2 connection with hundreds of streams whose
// bodies never come can then hold only `limit` upstream connections, never a whole pool
// (nghttpx's backend-connections-per-frontend, with waiting instead of refusing).
//
// Owned by the connection manager; used only for connections that carry several requests at
// once (HTTP/2). It holds plain pointers to the connection's streams: the manager tells it
// when a stream ends (onStreamEnd) before the stream is deleted.

#include <cstdint>
#include <deque>
#include <vector>

#include "proxy/event/dispatcher.h"
#include "proxy/stats/proxy_stats.h"

namespace ferry::http {

class ActiveStream;

class ConnectionShare {
 public:
  ConnectionShare(uint32_t limit, event::Dispatcher& dispatcher, stats::ProxyStats& stats);
  ~ConnectionShare();

  // A stream's request head is complete. True: it runs now. False: it waits; its
  // onConnectionShareGranted() is called when an earlier request ends (never from inside
  // this call or onStreamEnd()).
  bool tryStart(ActiveStream& stream);
  // The stream ended (its response is complete, it was cut, or its client reset it).
  void onStreamEnd(ActiveStream& stream);

 private:
  void startWaiting();

  const uint32_t limit_;
  stats::ProxyStats& stats_;
  std::vector<ActiveStream*> running_;
  std::deque<ActiveStream*> waiting_;
  event::TimerPtr start_timer_;  // starts waiting streams once the ending one's calls unwind
};

}  // namespace ferry::http
