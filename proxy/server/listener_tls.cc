#include "proxy/server/listener_tls.h"

#include <openssl/ssl.h>

#include <chrono>
#include <string>

#include "proxy/server/tls_reload.h"

namespace ferry::server {
namespace {

constexpr char kHandshakes[] = "ferry_downstream_tls_handshakes_total";
constexpr char kHandshakesHelp[] = "TLS handshakes on the listener, by outcome";
constexpr char kMismatch[] = "ferry_downstream_protocol_mismatch_total";
constexpr char kMismatchHelp[] =
    "Connections closed because they spoke the other protocol (TLS vs plain HTTP) than the port";

}  // namespace

tls::ServerSettings serverSettings(const config::ListenerTls& in) {
  tls::ServerSettings out;
  out.cert_file = in.cert_file;
  out.key_file = in.key_file;
  out.min_version = in.min_version == "1.3" ? TLS1_3_VERSION : TLS1_2_VERSION;
  out.alpn = in.alpn;
  out.session_tickets = in.session_tickets;
  out.cipher_suites = in.cipher_suites;
  out.ciphers = in.ciphers;
  out.client_ca_file = in.client_ca_file;
  switch (in.client_cert) {
    case config::ListenerTls::ClientCert::None:
      out.client_cert = tls::ClientCertMode::None;
      break;
    case config::ListenerTls::ClientCert::Optional:
      out.client_cert = tls::ClientCertMode::Optional;
      break;
    case config::ListenerTls::ClientCert::Require:
      out.client_cert = tls::ClientCertMode::Require;
      break;
  }
  return out;
}

ListenerTls::ListenerTls(const config::ListenerTls& config, stats::Store& store, ServerStats& stats)
    : config_(config),
      store_(store),
      stats_(stats),
      handshakes_ok_(store.counter(kHandshakes, kHandshakesHelp, {{"outcome", "ok"}})),
      handshakes_resumed_(store.counter("ferry_downstream_tls_resumed_handshakes_total",
                                        "Listener TLS handshakes that resumed a session (ticket)")),
      connections_active_(store.gauge("ferry_downstream_tls_connections_active",
                                      "Listener connections with a completed TLS handshake")),
      certificate_expiry_(
          store.gauge("ferry_downstream_tls_certificate_expiry_timestamp_seconds",
                      "notAfter of the listener's certificate, seconds since epoch")),
      tls_on_plain_port_(
          store.counter(kMismatch, kMismatchHelp, {{"received", "tls_on_plain_port"}})),
      http_on_tls_port_(
          store.counter(kMismatch, kMismatchHelp, {{"received", "http_on_tls_port"}})) {
  // The failure labels a dashboard expects to see, at 0, before the first failure.
  for (const char* reason : {"timeout", "closed", "not_tls", "version", "alpn", "no_client_cert",
                             "bad_client_cert", "peer_alert", "other"}) {
    store.counter(kHandshakes, kHandshakesHelp, {{"outcome", std::string("failed_") + reason}});
  }
}

StatusOr<tls::ServerContextSharedPtr> ListenerTls::build() const {
  std::string field;
  auto context = tls::ServerContext::create(serverSettings(config_), ticket_keys_, &field);
  if (!context.isOk()) {
    return invalidArgument("listener.tls" + (field.empty() ? "" : "." + field) + ": " +
                           context.status().message());
  }
  return *context;
}

Status ListenerTls::load() {
  if (config_.session_tickets) {
    ticket_keys_ = std::make_shared<tls::TicketKeys>(
        std::chrono::duration_cast<std::chrono::seconds>(config_.ticket_key_rotation));
  }
  auto context = build();
  if (!context.isOk()) return context.status();
  certificate_expiry_.set(static_cast<int64_t>((*context)->certificateExpiry()));
  slot_ = std::make_unique<tls::ServerContextSlot>(*context);
  return Status::ok();
}

// The ticket keys stay: clients resume across a certificate rotation.
void ListenerTls::reload() {
  if (applyTlsReload("listener.tls", build(), *slot_, stats_)) {
    certificate_expiry_.set(static_cast<int64_t>(slot_->current()->certificateExpiry()));
  }
}

void ListenerTls::onTlsHandshake(const net::Connection& conn) {
  handshakes_ok_.inc();
  if (conn.tlsResumed()) handshakes_resumed_.inc();
  connections_active_.add(1);
}

void ListenerTls::onTlsHandshakeFailed(std::string_view reason) {
  // Get-or-create takes the store's lock: fine on a failure path, and the known labels exist.
  store_.counter(kHandshakes, kHandshakesHelp, {{"outcome", "failed_" + std::string(reason)}})
      .inc();
}

void ListenerTls::onTlsConnectionClosed() { connections_active_.sub(1); }

void ListenerTls::onTlsOnPlainPort() { tls_on_plain_port_.inc(); }

void ListenerTls::onPlainHttpOnTlsPort() { http_on_tls_port_.inc(); }

}  // namespace ferry::server
