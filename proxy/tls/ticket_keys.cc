#include "proxy/tls/ticket_keys.h"

#include <openssl/core_names.h>
#include <openssl/rand.h>

#include <cstring>

namespace ferry::tls {
namespace {

int keysIndex() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// Sets the cipher and MAC state for `key` (the callback contract of
// SSL_CTX_set_tlsext_ticket_key_evp_cb).
bool useKey(const unsigned char* aes, const unsigned char* hmac, unsigned char* iv,
            EVP_CIPHER_CTX* cipher, EVP_MAC_CTX* mac, int encrypt) {
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, const_cast<unsigned char*>(hmac), 32),
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, const_cast<char*>("SHA256"), 0),
      OSSL_PARAM_construct_end()};
  if (EVP_MAC_CTX_set_params(mac, params) != 1) return false;
  return EVP_CipherInit_ex(cipher, EVP_aes_256_cbc(), nullptr, aes, iv, encrypt) == 1;
}

}  // namespace

void TicketKeys::install(SSL_CTX* ctx, TicketKeys* keys) {
  SSL_CTX_set_ex_data(ctx, keysIndex(), keys);
  SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, &TicketKeys::onTicket);
}

uint64_t TicketKeys::rotations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rotations_;
}

bool TicketKeys::rotateIfDue(std::chrono::steady_clock::time_point now) {
  if (has_current_ && now - current_.created < rotation_) {
    if (has_previous_ && now - previous_.created >= 2 * rotation_) has_previous_ = false;
    return true;
  }
  Key next;
  if (RAND_bytes(next.name, sizeof(next.name)) != 1 ||
      RAND_bytes(next.aes, sizeof(next.aes)) != 1 ||
      RAND_bytes(next.hmac, sizeof(next.hmac)) != 1) {
    return has_current_;
  }
  next.created = now;
  if (has_current_) {
    previous_ = current_;
    has_previous_ = true;
    ++rotations_;
  }
  current_ = next;
  has_current_ = true;
  return true;
}

// encrypt: 1 with the current key set up, -1 on failure (no ticket is issued).
// decrypt: 0 unknown key name (full handshake), 1 decrypted with the current key, 2 decrypted
// with the previous key (OpenSSL then issues a fresh ticket under the current one). TLS 1.3
// always gets 2: clients use a ticket once (RFC 8446 appendix C.4) and OpenSSL sends no ticket
// on a resumed TLS 1.3 handshake unless asked to renew, so without it every other reconnect
// would be a full handshake.
int TicketKeys::onTicket(SSL* ssl, unsigned char name[16], unsigned char* iv,
                         EVP_CIPHER_CTX* cipher, EVP_MAC_CTX* mac, int encrypt) {
  auto* self = static_cast<TicketKeys*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), keysIndex()));
  if (self == nullptr) return encrypt ? -1 : 0;
  std::lock_guard<std::mutex> lock(self->mutex_);
  if (!self->rotateIfDue(self->now_())) return encrypt ? -1 : 0;
  if (encrypt) {
    if (RAND_bytes(iv, EVP_CIPHER_iv_length(EVP_aes_256_cbc())) != 1) return -1;
    std::memcpy(name, self->current_.name, sizeof(self->current_.name));
    return useKey(self->current_.aes, self->current_.hmac, iv, cipher, mac, 1) ? 1 : -1;
  }
  if (std::memcmp(name, self->current_.name, 16) == 0) {
    if (!useKey(self->current_.aes, self->current_.hmac, iv, cipher, mac, 0)) return -1;
    return SSL_version(ssl) == TLS1_3_VERSION ? 2 : 1;
  }
  if (self->has_previous_ && std::memcmp(name, self->previous_.name, 16) == 0) {
    return useKey(self->previous_.aes, self->previous_.hmac, iv, cipher, mac, 0) ? 2 : -1;
  }
  return 0;
}

}  // namespace ferry::tls
