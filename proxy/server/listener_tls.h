#pragma once
// The TLS side of ferry's listener (`listener.tls`): the server context every worker accepts
// with (one SSL_CTX, swapped whole on SIGHUP), the session ticket keys that outlive those swaps,
// and the listener's TLS stats. It is also the workers' net::DownstreamTlsObserver, on plain
// listeners too (a TLS ClientHello on a plain port is counted).
//
// Use: built by the Server before the workers; load() at start (a bad file stops the start),
// reload() on SIGHUP; workers call current() once per accepted connection.

#include <memory>

#include "config/ferry_config.h"
#include "proxy/common/status.h"
#include "proxy/net/connection.h"
#include "proxy/server/server_stats.h"
#include "proxy/stats/stats.h"
#include "proxy/tls/server_context.h"

namespace ferry::server {

// The server context settings `listener.tls` asks for (session tickets as configured): what
// ListenerTls builds at start and on SIGHUP, and what app/config_check.cc loads to check the
// files.
tls::ServerSettings serverSettings(const config::ListenerTls& tls);

class ListenerTls : public net::DownstreamTlsObserver {
 public:
  ListenerTls(const config::ListenerTls& config, stats::Store& store, ServerStats& stats);

  bool enabled() const { return config_.enabled; }
  event::Millis handshakeTimeout() const { return config_.handshake_timeout; }
  // Reads the files and installs the context (start-up). Errors name the key path.
  Status load();
  // SIGHUP: re-reads cert, key and client CA; keeps the last good context on failure.
  void reload();
  // The context to accept a new connection with.
  tls::ServerContextSharedPtr current() const { return slot_->current(); }

  // net::DownstreamTlsObserver (any worker thread; counters only).
  void onTlsHandshake(const net::Connection& conn) override;
  void onTlsHandshakeFailed(std::string_view reason) override;
  void onTlsConnectionClosed() override;
  void onTlsOnPlainPort() override;
  void onPlainHttpOnTlsPort() override;

 private:
  StatusOr<tls::ServerContextSharedPtr> build() const;

  const config::ListenerTls config_;
  stats::Store& store_;
  ServerStats& stats_;  // the reloads
  std::shared_ptr<tls::TicketKeys> ticket_keys_;
  std::unique_ptr<tls::ServerContextSlot> slot_;
  stats::Counter& handshakes_ok_;
  stats::Counter& handshakes_resumed_;
  stats::Gauge& connections_active_;
  stats::Gauge& certificate_expiry_;
  stats::Counter& tls_on_plain_port_;
  stats::Counter& http_on_tls_port_;
};

}  // namespace ferry::server
