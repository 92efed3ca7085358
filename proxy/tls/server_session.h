#pragma once
// The server side of a tls::Session (session.h): a connection accepted on the TLS listener.
// After the handshake it knows the negotiated ALPN protocol and, with client certificates, the
// verified peer identity (for filters and the access log).
//
// Life: create() right after accept(); then as Session.

#include <memory>
#include <string>

#include "proxy/tls/server_context.h"
#include "proxy/tls/session.h"

namespace ferry::tls {

class ServerSession : public Session {
 public:
  // nullptr when OpenSSL can't make a session.
  static std::unique_ptr<ServerSession> create(ServerContext& context, int fd);

  IoState handshake() override;
  const std::string& peerIdentity() const override { return peer_identity_; }

 private:
  ServerSession(ServerContext& context, SSL* ssl)
      : Session(ssl), context_(context.shared_from_this()) {}
  // "CN=...,O=..." (RFC 2253), then the subjectAltName entries: "DNS:a,URI:b".
  void readPeerIdentity();

  // Held, not borrowed: a reload may swap the context while this session lives.
  const std::shared_ptr<ServerContext> context_;
  std::string peer_identity_;
};

}  // namespace ferry::tls
