#include "config/config_json.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string_view>
#include <vector>

#include "config/duration.h"

namespace ferry::config {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void key(Writer& w, const char* name) { w.Key(name); }
void str(Writer& w, const char* name, std::string_view value) {
  w.Key(name);
  w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}
void num(Writer& w, const char* name, uint64_t value) {
  w.Key(name);
  w.Uint64(value);
}
void flag(Writer& w, const char* name, bool value) {
  w.Key(name);
  w.Bool(value);
}
// Durations as the YAML writes them ("10s"), so a value can be copied back into a config.
void duration(Writer& w, const char* name, Millis value) { str(w, name, formatDuration(value)); }
void list(Writer& w, const char* name, const std::vector<std::string>& values) {
  w.Key(name);
  w.StartArray();
  for (const auto& v : values) w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
  w.EndArray();
}
// A setting that may be unset (empty): its value, or null.
void optional(Writer& w, const char* name, const std::string& value) {
  if (value.empty()) {
    w.Key(name);
    w.Null();
    return;
  }
  str(w, name, value);
}
// A path to a file, or null when unset. The file's contents are never read here.
void path(Writer& w, const char* name, const std::string& value) { optional(w, name, value); }

const char* clientCertName(ListenerTls::ClientCert mode) {
  switch (mode) {
    case ListenerTls::ClientCert::None:
      return "none";
    case ListenerTls::ClientCert::Optional:
      return "optional";
    case ListenerTls::ClientCert::Require:
      return "require";
  }
  return "none";
}

void listener(Writer& w, const Listener& l) {
  key(w, "listener");
  w.StartObject();
  str(w, "address", l.host);
  num(w, "port", l.port);
  flag(w, "reuse_port", l.reuse_port);
  key(w, "http2");
  w.StartObject();
  flag(w, "enabled", l.http2.enabled);
  num(w, "max_concurrent_streams", l.http2.max_concurrent_streams);
  num(w, "initial_stream_window_bytes", l.http2.initial_stream_window_bytes);
  w.EndObject();
  key(w, "tls");
  if (!l.tls.enabled) {
    w.Null();
  } else {
    const ListenerTls& t = l.tls;
    w.StartObject();
    path(w, "cert_file", t.cert_file);
    path(w, "key_file", t.key_file);
    str(w, "min_version", t.min_version);
    list(w, "alpn", t.alpn);
    duration(w, "handshake_timeout", t.handshake_timeout);
    flag(w, "session_tickets", t.session_tickets);
    duration(w, "ticket_key_rotation", t.ticket_key_rotation);
    path(w, "client_ca_file", t.client_ca_file);
    str(w, "client_cert", clientCertName(t.client_cert));
    str(w, "cipher_suites", t.cipher_suites);
    optional(w, "ciphers", t.ciphers);  // null: OpenSSL's default list
    w.EndObject();
  }
  w.EndObject();
}

void endpoint(Writer& w, const char* name, const std::string& host, uint16_t port) {
  key(w, name);
  w.StartObject();
  str(w, "address", host);
  num(w, "port", port);
}

void forwarding(Writer& w, const Forwarding& f) {
  key(w, "forwarding");
  w.StartObject();
  flag(w, "enabled", f.enabled);
  path(w, "fleet_file", f.fleet_file);
  key(w, "peers");
  w.StartObject();
  for (const auto& [name, origin] : f.peers) str(w, name.c_str(), origin);
  w.EndObject();
  flag(w, "allow_http_peers", f.allow_http_peers);
  list(w, "peer_domains", f.peer_domains);
  list(w, "routes", f.routes);
  duration(w, "watch_interval", f.watch_interval);
  key(w, "tls");
  w.StartObject();
  path(w, "ca_file", f.tls.ca_file);
  flag(w, "verify", f.tls.verify);
  path(w, "client_cert_file", f.tls.client_cert_file);
  path(w, "client_key_file", f.tls.client_key_file);
  w.EndObject();
  str(w, "owner_protocol",
      f.owner_protocol == OwnerProtocol::H2      ? "h2"
      : f.owner_protocol == OwnerProtocol::Http1 ? "http1"
                                                 : "auto");
  key(w, "owner_http2");
  w.StartObject();
  num(w, "max_streams_per_connection", f.owner_http2.max_streams_per_connection);
  duration(w, "ping_interval", f.owner_http2.ping_interval);
  duration(w, "ping_timeout", f.owner_http2.ping_timeout);
  w.EndObject();
  key(w, "owner_routing");
  w.StartObject();
  flag(w, "enabled", f.owner_routing.enabled);
  num(w, "max_entries", f.owner_routing.max_entries);
  duration(w, "ttl", f.owner_routing.ttl);
  w.EndObject();
  w.EndObject();
}

}  // namespace

std::string renderConfigJson(const FerryConfig& c, const RuntimeFacts& facts) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  key(w, "config");
  w.StartObject();
  str(w, "instance_name", c.instance_name);
  listener(w, c.listener);
  endpoint(w, "local_instance", c.local_instance.host, c.local_instance.port);
  w.EndObject();
  endpoint(w, "admin", c.admin.host, c.admin.port);
  num(w, "max_connections", c.admin.max_connections);
  w.EndObject();
  num(w, "workers", c.workers);
  flag(w, "batched_writes", c.batched_writes);

  key(w, "limits");
  w.StartObject();
  num(w, "max_request_header_bytes", c.limits.max_request_header_bytes);
  num(w, "max_request_headers", c.limits.max_request_headers);
  num(w, "max_connections", c.limits.max_connections);
  num(w, "replay_buffer_bytes", c.limits.replay_buffer_bytes);
  num(w, "buffer_high_watermark_bytes", c.limits.buffer_high_watermark_bytes);
  num(w, "max_pending_upstream_requests", c.limits.max_pending_upstream_requests);
  num(w, "max_active_requests_per_connection", c.limits.max_active_requests_per_connection);
  num(w, "max_connections_per_client_address", c.limits.max_connections_per_client_address);
  w.EndObject();

  key(w, "timeouts");
  w.StartObject();
  duration(w, "request_head", c.timeouts.request_head);
  duration(w, "keepalive_idle", c.timeouts.keepalive_idle);
  duration(w, "upstream_connect", c.timeouts.upstream_connect);
  duration(w, "upstream_idle", c.timeouts.upstream_idle);
  duration(w, "stream_idle", c.timeouts.stream_idle);
  duration(w, "request_body_idle", c.timeouts.request_body_idle);
  duration(w, "response", c.timeouts.response);
  duration(w, "response_head", c.timeouts.response_head);
  duration(w, "drain", c.timeouts.drain);
  w.EndObject();

  key(w, "upstream");
  w.StartObject();
  num(w, "max_connections", c.upstream.max_connections);
  w.EndObject();

  forwarding(w, c.forwarding);

  key(w, "live_feeds");
  w.StartObject();
  flag(w, "resume", c.live_feeds.resume);
  duration(w, "resume_deadline", c.live_feeds.resume_deadline);
  flag(w, "share", c.live_feeds.share);
  num(w, "subscriber_buffer", c.live_feeds.subscriber_buffer);
  list(w, "share_key_headers", c.live_feeds.share_key_headers);
  w.EndObject();

  key(w, "access_log");
  if (c.access_log.empty()) {
    w.Null();
  } else {
    w.StartObject();
    str(w, "path", c.access_log);
    str(w, "format", c.access_log_format);
    w.EndObject();
  }
  key(w, "forwarded_headers");
  w.StartObject();
  flag(w, "x_forwarded", c.forwarded_headers.x_forwarded);
  num(w, "trusted_hops", c.forwarded_headers.trusted_hops);
  w.EndObject();
  key(w, "fault");
  w.StartObject();
  flag(w, "enabled", c.fault.enabled);
  str(w, "header", c.fault.header);
  key(w, "abort");
  w.StartObject();
  num(w, "percent", c.fault.abort.percent);
  num(w, "status", c.fault.abort.status);
  w.EndObject();
  key(w, "delay");
  w.StartObject();
  num(w, "percent", c.fault.delay.percent);
  duration(w, "duration", c.fault.delay.duration);
  w.EndObject();
  w.EndObject();
  w.EndObject();  // config

  key(w, "effective");
  w.StartObject();
  num(w, "workers", facts.workers);
  flag(w, "batched_writes", facts.batched_writes);
  num(w, "listener_port", facts.listener_port);
  num(w, "admin_port", facts.admin_port);
  w.EndObject();
  key(w, "peer_table_version");
  if (facts.peer_table_version) {
    w.Uint64(*facts.peer_table_version);
  } else {
    w.Null();
  }
  w.EndObject();
  return buffer.GetString();
}

}  // namespace ferry::config
