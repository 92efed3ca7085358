#pragma once
// The client side of a tls::Session (session.h): an upstream connection to an https owner.
// It sends SNI, checks the owner's certificate against the URL's host, and offers the session
// the owner last gave for the same target (resumption on pooled reconnects).
//
// Life: create() after connect() succeeded; then as Session. A failed handshake forgets the
// cached session, so one the owner no longer accepts is not offered again.

#include <memory>
#include <string>
#include <vector>

#include "proxy/tls/client_context.h"
#include "proxy/tls/session.h"

namespace ferry::tls {

class ClientSession : public Session {
 public:
  // `server_name` is the URL's host: sent as SNI when it is a name, and checked against the
  // certificate (DNS name, or IP address for literals) when the context verifies. `cache_key`
  // names the target for session resumption. `alpn`: the protocols offered (RFC 7301), in
  // preference order; empty: no ALPN extension. nullptr when OpenSSL can't make a session.
  static std::unique_ptr<ClientSession> create(ClientContext& context, int fd,
                                               const std::string& server_name,
                                               std::string cache_key,
                                               const std::vector<std::string>& alpn = {});

  IoState handshake() override;

 private:
  ClientSession(ClientContext& context, SSL* ssl, std::string cache_key)
      : Session(ssl), context_(context.shared_from_this()), cache_key_(std::move(cache_key)) {}

  // Held, not borrowed: a reload may swap the context while this session lives.
  const std::shared_ptr<ClientContext> context_;
  const std::string cache_key_;
};

}  // namespace ferry::tls
