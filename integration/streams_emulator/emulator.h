#pragma once
// The Streams instance emulator: one event loop, one listener, in-memory streams.
//
// Life of a request: ServerConnection parses it and calls
//   onRequestHead()     route it; apply the knobs that act before the body (reset,
//                       early_409, early_409_after_bytes)             [emulator.cc]
//   onRequestComplete() delay_ms, then ownership (409 / 503 shard_moving), then the route:
//                       raw surface [raw_routes.cc], product surface [product_routes.cc],
//                       long-polls and SSE feeds [live_feeds.cc], /v1/debug [debug_routes.cc]
// Error envelopes and the ownership answers are built in replies.cc.
//
// Owns the listener, every connection, the store and the knobs. Single-threaded: every method
// runs on the event loop's thread.

#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/ssl.h>

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "integration/streams_emulator/journal.h"
#include "integration/streams_emulator/knobs.h"
#include "integration/streams_emulator/options.h"
#include "integration/streams_emulator/route.h"
#include "integration/streams_emulator/server_connection.h"
#include "integration/streams_emulator/stream_store.h"

namespace ferry::streams {

// Per-connection state of the request in flight.
struct Exchange : ConnectionContext {
  Route route;
  // Set while the connection waits on a stream (long-poll or SSE feed).
  bool waiting = false;
  bool sse = false;
  bool product = false;
  uint64_t position = 0;
};

class Emulator : public ConnectionCallbacks {
 public:
  Emulator(event_base* base, EmulatorOptions options);
  ~Emulator() override;

  // With --journal: opens it and replays it into the (empty) store, which from then on
  // journals every change; returns the number of records replayed (0 without --journal).
  // Called once, before listen().
  StatusOr<size_t> openJournal();
  // Binds the listener; returns the bound port or an error.
  StatusOr<uint16_t> listen();
  // With --tls-cert/--tls-key: binds the HTTPS listener (same instance, same store); returns
  // its port, or 0 when TLS is not configured.
  StatusOr<uint16_t> listenTls();
  // SIGTERM: keep serving, /health answers 503, exit the loop after --drain-seconds.
  void startDrain();
  // SIGUSR1: clear every knob (the way out of "refuse" without a connection).
  void clearKnobs() { knobs_ = Knobs{}; }

  // ConnectionCallbacks
  bool onRequestHead(ServerConnection& conn, HttpRequest& request) override;
  bool onBodyTrigger(ServerConnection& conn, HttpRequest& request) override;
  void onRequestComplete(ServerConnection& conn, HttpRequest& request) override;
  void onBodyTooLarge(ServerConnection& conn, HttpRequest& request) override;
  void onResponseStarted(ServerConnection& conn, const HttpRequest& request, int status) override;
  void onConnectionClosed(ServerConnection& conn) override;

 private:
  struct OwnerCheck {
    bool owner = false;
    bool moving = false;  // this instance owned it before a hand-over still in progress
    std::string shard;
    std::string owner_name;
  };

  static void onAccept(evconnlistener* l, evutil_socket_t fd, sockaddr* addr, int len, void* ctx);
  static void onAcceptTls(evconnlistener* l, evutil_socket_t fd, sockaddr* addr, int len,
                          void* ctx);
  StatusOr<evconnlistener*> bindListener(uint16_t port, evconnlistener_cb cb);
  void accept(int fd, SSL* ssl);
  static void onReap(evutil_socket_t, short, void* ctx);
  static void onDrainDone(evutil_socket_t, short, void* ctx);

  Exchange& exchange(ServerConnection& conn);
  void dispatch(ServerConnection& conn, HttpRequest& request);
  OwnerCheck checkOwner(std::string_view name) const;
  void applyMembers(std::vector<std::string> members, uint64_t handover_ms);

  // replies.cc
  void replyError(ServerConnection& conn, int status, std::string_view code,
                  std::string_view message, bool product, std::span<const HeaderRef> extra = {});
  void replyNotOwner(ServerConnection& conn, const OwnerCheck& check, bool product_form);
  void replyMoving(ServerConnection& conn, const OwnerCheck& check, bool product_form);
  void replyNotFound(ServerConnection& conn, std::string_view name, bool product);
  // Answers an append the store refused (bad body, producer gap, stale epoch); false when
  // `r` was applied or a duplicate (the caller answers those).
  bool replyAppendRefused(ServerConnection& conn, const AppendResult& r,
                          const ProducerRef& producer, bool product);

  // raw_routes.cc
  void handleRaw(ServerConnection& conn, HttpRequest& request, const Route& route);
  void rawCreate(ServerConnection& conn, HttpRequest& request, const Route& route);
  void rawAppend(ServerConnection& conn, HttpRequest& request, const Route& route);
  void rawRead(ServerConnection& conn, HttpRequest& request, const Route& route);
  void rawHead(ServerConnection& conn, const Route& route);
  void rawDelete(ServerConnection& conn, const Route& route);
  // Parses the producer headers; false when an answer (400) was sent.
  bool readProducer(ServerConnection& conn, const HttpRequest& request, bool product,
                    ProducerRef& out, bool& present);

  // product_routes.cc
  void handleProduct(ServerConnection& conn, HttpRequest& request, const Route& route);
  void productCreate(ServerConnection& conn, HttpRequest& request, const Route& route);
  void productAppend(ServerConnection& conn, HttpRequest& request, const Route& route,
                     JsonBody mode);

  // live_feeds.cc
  void startLongPoll(ServerConnection& conn, const HttpRequest& request, const Route& route,
                     Stream& stream, uint64_t position, bool product);
  void startSse(ServerConnection& conn, const HttpRequest& request, const Route& route,
                Stream& stream, uint64_t position, bool product);
  void answerLongPoll(ServerConnection& conn, const Stream& stream, uint64_t position,
                      bool product);
  void answerLongPollTimeout(ServerConnection& conn, uint64_t tail, bool closed);
  void sendSseUpdate(ServerConnection& conn, const Stream& stream, uint64_t from);
  void armSseKeepAlive(ServerConnection& conn);
  void subscribe(ServerConnection& conn, const std::string& name);
  void unsubscribe(ServerConnection& conn);
  void notifyAppended(const std::string& name, const Stream& stream);
  void notifyDeleted(const std::string& name, uint64_t tail);
  void endFeedsNoLongerOwned();

  // debug_routes.cc
  void handleDebug(ServerConnection& conn, HttpRequest& request);
  std::string appliedJson(std::string_view stream) const;
  std::string requestsJson() const;

  event_base* base_;
  EmulatorOptions options_;
  evconnlistener* listener_ = nullptr;
  evconnlistener* tls_listener_ = nullptr;
  SSL_CTX* tls_ctx_ = nullptr;
  event* reap_event_ = nullptr;
  event* drain_timer_ = nullptr;
  bool draining_ = false;

  std::unordered_map<ServerConnection*, std::unique_ptr<ServerConnection>> connections_;
  std::vector<std::unique_ptr<ServerConnection>> graveyard_;

  StreamStore store_;
  std::unique_ptr<Journal> journal_;  // --journal; store_ points at it
  Knobs knobs_;
  std::vector<std::string> members_;
  std::vector<std::string> previous_members_;
  std::chrono::steady_clock::time_point handover_until_{};

  // stream name -> connections waiting on it (long-polls and SSE feeds)
  std::unordered_map<std::string, std::vector<ServerConnection*>> subscribers_;

  // /v1/debug/requests: per route, per status; and the same for Streams-Forwarded requests.
  static constexpr size_t kRoutes = static_cast<size_t>(RouteTag::Count);
  std::array<std::map<int, uint64_t>, kRoutes> counts_;
  std::array<std::map<int, uint64_t>, kRoutes> forwarded_counts_;
  uint64_t connections_accepted_ = 0;
  uint64_t connections_refused_ = 0;
  uint64_t tls_connections_accepted_ = 0;
  // SSE feeds opened, and the bytes of their event frames (data and control; not the chunked
  // framing or keep-alives), for /v1/debug/requests: what fan-out costs the owner.
  uint64_t sse_feeds_started_ = 0;
  uint64_t sse_event_bytes_ = 0;
};

}  // namespace ferry::streams
