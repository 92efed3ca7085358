#include "config/listener_tls_section.h"

namespace ferry::config {

namespace {

// Longer handshakes are a client holding a connection slot for nothing.
constexpr Millis kMaxHandshakeTimeout{60'000};
constexpr Millis kMinTicketKeyRotation{60'000};
constexpr Millis kMaxTicketKeyRotation{7 * 24 * 3'600'000LL};

}  // namespace

void readListenerTls(YamlReader& reader, const YAML::Node& node, const std::string& path,
                     ListenerTls& out) {
  if (!reader.checkMap(
          node, path,
          {"cert_file", "key_file", "min_version", "alpn", "handshake_timeout", "session_tickets",
           "ticket_key_rotation", "client_ca_file", "client_cert", "cipher_suites", "ciphers"})) {
    // Absent, or null (`tls:` with nothing under it), or not a mapping (reported).
    if (node.IsDefined() && node.IsNull()) {
      reader.error(path, "must set cert_file and key_file (omit listener.tls for plain HTTP)");
    }
    return;
  }
  out.enabled = true;
  for (const char* key : {"cert_file", "key_file"}) {
    if (!node[key].IsDefined()) reader.error(joinPath(path, key), "required");
  }
  reader.readString(node, path, "cert_file", out.cert_file);
  reader.readString(node, path, "key_file", out.key_file);
  reader.readString(node, path, "client_ca_file", out.client_ca_file);
  // Whether OpenSSL knows the names is checked when the context is made (ServerContext).
  reader.readString(node, path, "cipher_suites", out.cipher_suites);
  reader.readString(node, path, "ciphers", out.ciphers);
  for (const char* key : {"cert_file", "key_file", "client_ca_file", "cipher_suites", "ciphers"}) {
    if (node[key].IsDefined() && node[key].IsScalar() && node[key].Scalar().empty()) {
      reader.error(joinPath(path, key), "must not be empty (omit it instead)");
    }
  }
  reader.readString(node, path, "min_version", out.min_version);
  if (out.min_version != "1.2" && out.min_version != "1.3") {
    reader.error(joinPath(path, "min_version"),
                 "must be \"1.2\" or \"1.3\" (got \"" + out.min_version + "\")");
  }
  reader.readStringList(node, path, "alpn", out.alpn);
  if (node["alpn"].IsDefined() && out.alpn.empty()) {
    reader.error(joinPath(path, "alpn"), "must name at least one protocol (h2, http/1.1)");
  }
  reader.readDuration(node, path, "handshake_timeout", Millis{1}, kMaxHandshakeTimeout,
                      out.handshake_timeout);
  reader.readBool(node, path, "session_tickets", out.session_tickets);
  reader.readDuration(node, path, "ticket_key_rotation", kMinTicketKeyRotation,
                      kMaxTicketKeyRotation, out.ticket_key_rotation);
  if (node["client_cert"].IsDefined()) {
    std::string mode;
    reader.readString(node, path, "client_cert", mode);
    if (mode == "require") {
      out.client_cert = ListenerTls::ClientCert::Require;
    } else if (mode == "optional") {
      out.client_cert = ListenerTls::ClientCert::Optional;
    } else {
      reader.error(joinPath(path, "client_cert"),
                   "must be \"require\" or \"optional\" (got \"" + mode + "\")");
    }
    if (out.client_ca_file.empty()) {
      reader.error(joinPath(path, "client_ca_file"), "required when client_cert is set");
    }
  } else if (!out.client_ca_file.empty()) {
    out.client_cert = ListenerTls::ClientCert::Require;
  }
}

}  // namespace ferry::config
