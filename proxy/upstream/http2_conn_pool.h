#pragma once
// A worker's HTTP/2 pool to one owner: streams multiplexed on as few connections as the owner
// allows. A stream goes on a ready connection with room (the oldest first, so the others drain
// and idle out); a second connection opens only when every open one is at
// min(owner's SETTINGS_MAX_CONCURRENT_STREAMS, h2_max_streams_per_connection), and streams
// wait in a bounded queue (max_pending) while one connects. A connection above its write high
// watermark takes no new stream (Http2Client::hasCapacity): they go to another connection, as
// when it is full. A connection that fails takes
// down only its own streams. On the owner's GOAWAY the streams at or below its last-stream-id
// finish on that connection (a long feed keeps going) and new streams go to a new one.
//
// Protocol by ALPN (https): `Auto` offers [h2, http/1.1]. An owner that picks http/1.1 is
// remembered for kHttp1Relearn: the pool sends its streams to an HTTP/1.1 pool it owns for
// the same target (Http1ConnPool, connections counted as protocol="http1"), including the
// streams that were waiting for the connection that found out; then it tries h2 again, so an
// owner upgraded in place is noticed. `H2` offers [h2] only; an owner that does not pick it
// fails the waiting streams like a refused connect (the local 409). Cleartext targets get h2c
// with prior knowledge (RFC 9113 §3.3). Owned by the worker's WorkerUpstreams.

#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "proxy/event/dispatcher.h"
#include "proxy/http/codec.h"
#include "proxy/http/http2/client_codec.h"
#include "proxy/upstream/conn_pool.h"
#include "proxy/upstream/conn_pool_base.h"
#include "proxy/upstream/http1_conn_pool.h"
#include "proxy/upstream/http2_client.h"
#include "proxy/upstream/http2_pool_stream.h"
#include "proxy/upstream/pool_streams.h"
#include "proxy/upstream/upstream_stats.h"
#include "proxy/upstream/upstream_target.h"

namespace ferry::upstream {

class Http2ConnPool : public ConnPoolBase {
 public:
  // How long an owner that chose http/1.1 by ALPN is spoken to in HTTP/1.1 before h2 is
  // offered again.
  static constexpr std::chrono::minutes kHttp1Relearn{5};

  // `allow_http1`: an https owner may pick http/1.1 by ALPN (owner_protocol auto).
  Http2ConnPool(event::Dispatcher& dispatcher, UpstreamTarget target, const PoolSettings& settings,
                UpstreamStats& stats, bool allow_http1);
  ~Http2ConnPool() override;

  // ConnectionPool
  UpstreamStream* newStream(http::ResponseDecoder& decoder, UpstreamStreamCallbacks& callbacks,
                            const RequestSource& source) override;
  const UpstreamTarget& target() const override { return target_; }

  // For tests.
  size_t connections() const { return clients_.size(); }
  size_t writeBlockedConnections() const;
  bool speaksHttp1() const;

 private:
  friend class Http2Client;
  friend class Http2PoolStream;
  // Gives `stream` a connection with room now, or queues it, or fails it (overflow). Returns
  // true while it waits.
  bool request(Http2PoolStream& stream);
  // Called by Http2PoolStream (and ConnPoolBase::destroyStream).
  void onStreamAssigned();
  void onStreamDone();
  // Called by Http2Client.
  void onClientConnected(Http2Client& client);
  void onClientConnectFailed(Http2Client& client, UpstreamFailure::Kind kind,
                             const std::string& detail);
  void onClientGoAway(Http2Client& client);
  void onClientClosed(Http2Client& client);
  // Waiters get the room ready connections have; a connection opens for the rest.
  void assignPending();
  void connectNew();
  void failPending(UpstreamFailure::Kind kind, const std::string& detail);
  // The owner chose http/1.1: remember it and hand the waiters to the HTTP/1.1 pool.
  void learnHttp1();
  Http1ConnPool& http1();
  // Unlinks a closed (or failed) connection and deletes it once no pool stream holds one of
  // its codec's streams (reap(), from its last onStreamDone).
  void destroy(Http2Client& client);
  void reap(Http2Client& client);
  size_t connecting() const;

  UpstreamTarget target_;
  PoolSettings settings_;
  UpstreamStats& stats_;
  const bool allow_http1_;
  const http::http2::Http2ClientSettings codec_settings_;
  std::list<std::unique_ptr<Http2Client>> clients_;  // oldest first
  std::list<std::unique_ptr<Http2Client>> closing_;  // closed, streams not yet let go
  std::unique_ptr<Http1ConnPool> http1_;             // made when the owner first picks http/1.1
  std::chrono::steady_clock::time_point http1_until_{};
};

}  // namespace ferry::upstream
