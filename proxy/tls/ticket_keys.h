#pragma once
// Session ticket keys for the TLS listener (RFC 5077; TLS 1.3: RFC 8446 section 4.6.1), kept
// by ferry rather than by each SSL_CTX so that (a) they rotate on an interval and (b) a reload
// that swaps the listener's context does not make every client's ticket useless.
//
// Rotation: a key encrypts new tickets for one `rotation` interval, then becomes the previous
// key, which only decrypts (and asks OpenSSL to issue a fresh ticket under the current key) for
// one more interval, then is dropped. A ticket thus resumes for at most two intervals, and a
// key that leaked stops decrypting traffic recorded after that. Keys live in memory only:
// a restart starts with new keys (clients fall back to a full handshake).
//
// Thread-safety: one TicketKeys is shared by every worker's handshakes through the SSL_CTX
// callback; a short mutex guards the two keys, taken once per ticket issued or presented.

#include <openssl/evp.h>
#include <openssl/ssl.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>

namespace ferry::tls {

class TicketKeys {
 public:
  using Clock = std::chrono::steady_clock;
  // `now` is the clock rotation follows (tests pass their own).
  explicit TicketKeys(std::chrono::seconds rotation,
                      std::function<Clock::time_point()> now = &Clock::now)
      : rotation_(rotation), now_(std::move(now)) {}

  // Installs the ticket callback on `ctx`; the keys must outlive it (the context holds a
  // shared_ptr through ServerContext).
  static void install(SSL_CTX* ctx, TicketKeys* keys);

  // Rotations so far (for tests and logs).
  uint64_t rotations() const;

 private:
  struct Key {
    unsigned char name[16];
    unsigned char aes[32];   // AES-256-CBC
    unsigned char hmac[32];  // HMAC-SHA256
    std::chrono::steady_clock::time_point created;
  };
  static int onTicket(SSL* ssl, unsigned char name[16], unsigned char* iv, EVP_CIPHER_CTX* cipher,
                      EVP_MAC_CTX* mac, int encrypt);
  // Makes a new current key when none exists or the current one is older than rotation_.
  // Caller holds mutex_. False when random bytes are unavailable.
  bool rotateIfDue(std::chrono::steady_clock::time_point now);

  const std::chrono::seconds rotation_;
  const std::function<Clock::time_point()> now_;
  mutable std::mutex mutex_;
  bool has_current_ = false;
  bool has_previous_ = false;
  Key current_{};
  Key previous_{};
  uint64_t rotations_ = 0;
};

}  // namespace ferry::tls
