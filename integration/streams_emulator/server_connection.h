#pragma once
// One accepted HTTP/1.1 connection of the emulator: llhttp parsing, keep-alive, Content-Length
// and chunked request bodies, Content-Length and chunked responses.
//
// The connection controls exactly when the request body is read. It parses one request at a
// time and stops reading while a response is in progress:
//   1. request head parsed      -> ConnectionCallbacks::onRequestHead(). The callee may answer
//                                  at once (the body is then never read and the connection
//                                  closes after the answer) or let the body be read.
//   2. body bytes read          -> once `bodyTrigger` bytes arrived (if set at head time),
//                                  ConnectionCallbacks::onBodyTrigger() may answer early.
//   3. whole request read       -> ConnectionCallbacks::onRequestComplete(). The callee answers
//                                  now or later (timers, long-polls, SSE feeds).
// When the response is finished the next pipelined request is parsed.
//
// Ownership: the EmulatorServer owns every connection (unique_ptr) and destroys closed ones
// from its event loop, never inside a callback, so a connection pointer held by the callee
// stays valid until onConnectionClosed() has been delivered.

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <llhttp.h>
#include <openssl/ssl.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "integration/streams_emulator/http_request.h"

namespace ferry::streams {

class ServerConnection;

// State the callee keeps per connection (e.g. the route of the request in flight); owned by
// the connection so that it lives exactly as long as the connection.
class ConnectionContext {
 public:
  virtual ~ConnectionContext() = default;
};

class ConnectionCallbacks {
 public:
  virtual ~ConnectionCallbacks() = default;
  // The request head is complete. Return true if a response was started (the body is then
  // left unread and the connection closes once the response is written).
  virtual bool onRequestHead(ServerConnection& conn, HttpRequest& request) = 0;
  // At least conn.bodyTrigger() body bytes were read. Return true if a response was started.
  virtual bool onBodyTrigger(ServerConnection& conn, HttpRequest& request) = 0;
  // The whole request was read and is in `request`; a response must follow (now or later).
  virtual void onRequestComplete(ServerConnection& conn, HttpRequest& request) = 0;
  // The body exceeded the limit; the callee answers (413). The connection then closes.
  virtual void onBodyTooLarge(ServerConnection& conn, HttpRequest& request) = 0;
  // A response status line was written (counting hook).
  virtual void onResponseStarted(ServerConnection& conn, const HttpRequest& request,
                                 int status) = 0;
  // The connection is closed; drop every reference to it before returning.
  virtual void onConnectionClosed(ServerConnection& conn) = 0;
};

class ServerConnection {
 public:
  // Takes ownership of `fd` (and of `ssl` when given: the connection then serves HTTPS, the
  // TLS handshake first). `origin` is sent as prisma-streams-origin on every response and
  // must outlive the connection.
  ServerConnection(event_base* base, int fd, ConnectionCallbacks& callbacks,
                   const std::string& origin, size_t body_limit, SSL* ssl = nullptr);
  ~ServerConnection();
  ServerConnection(const ServerConnection&) = delete;
  ServerConnection& operator=(const ServerConnection&) = delete;

  // --- Responses (one per request). ---
  // A complete response with Content-Length (no body for HEAD, 204 and 304).
  void sendResponse(int status, std::span<const HeaderRef> headers, std::string_view body);
  void sendResponse(int status, std::initializer_list<HeaderRef> headers, std::string_view body) {
    sendResponse(status, std::span<const HeaderRef>(headers.begin(), headers.size()), body);
  }
  // A streamed response with Transfer-Encoding: chunked; then sendChunk() and endChunked().
  void startChunked(int status, std::span<const HeaderRef> headers);
  void startChunked(int status, std::initializer_list<HeaderRef> headers) {
    startChunked(status, std::span<const HeaderRef>(headers.begin(), headers.size()));
  }
  void sendChunk(std::string_view data);
  void endChunked();
  bool responding() const { return responding_; }

  // --- Per-request controls, set before the response starts. ---
  // Answer with Connection: close and close once the response is written.
  void closeAfterResponse() { close_after_response_ = true; }
  // Send the response head and only `n` body bytes, then close.
  void cutAfterBodyBytes(uint64_t n) { cut_after_ = n; }
  // Ask for onBodyTrigger() once `n` (>0) body bytes have been read (set in onRequestHead).
  void setBodyTrigger(uint64_t n) { body_trigger_ = n; }
  uint64_t bodyTrigger() const { return body_trigger_; }

  // Close now with SO_LINGER 0: the peer sees a TCP RST.
  void resetNow();
  // Close now (FIN), dropping anything unsent.
  void closeNow();

  // One timer per connection (a request waits on at most one thing at a time). Re-arming
  // replaces the previous callback; the timer is cancelled when the connection closes.
  void setTimer(uint64_t ms, std::function<void()> callback);
  void cancelTimer();

  void setContext(std::unique_ptr<ConnectionContext> context) { context_ = std::move(context); }
  ConnectionContext* context() const { return context_.get(); }

  bool closed() const { return closed_; }
  uint64_t id() const { return id_; }

 private:
  static void onReadCb(bufferevent* bev, void* ctx);
  static void onWriteCb(bufferevent* bev, void* ctx);
  static void onEventCb(bufferevent* bev, short what, void* ctx);
  static void onTimerCb(evutil_socket_t, short, void* ctx);
  static void onLingerCb(evutil_socket_t, short, void* ctx);
  static void onResumeCb(evutil_socket_t, short, void* ctx);

  static int onMessageBegin(llhttp_t* p);
  static int onUrl(llhttp_t* p, const char* at, size_t len);
  static int onHeaderField(llhttp_t* p, const char* at, size_t len);
  static int onHeaderValue(llhttp_t* p, const char* at, size_t len);
  static int onHeadersComplete(llhttp_t* p);
  static int onBody(llhttp_t* p, const char* at, size_t len);
  static int onMessageComplete(llhttp_t* p);

  void processInput();
  void writeHead(int status, std::span<const HeaderRef> headers, const char* framing,
                 uint64_t content_length);
  void writeBody(std::string_view data);
  void finishResponse();
  void closeInternal(bool notify);
  void startLingeringClose();

  event_base* base_;
  bufferevent* bev_;
  ConnectionCallbacks& callbacks_;
  const std::string& origin_;
  const size_t body_limit_;
  const uint64_t id_;

  llhttp_t parser_;
  llhttp_settings_t settings_;
  HttpRequest request_;
  bool in_field_ = false;  // the last header callback was a field (name) part

  // Parser events noted by the llhttp callbacks, acted on by processInput().
  bool message_done_ = false;
  bool too_large_ = false;

  bool stopped_ = false;      // answered before the request end: parse nothing more
  bool processing_ = false;   // inside processInput()
  bool responding_ = false;   // a response to the current request is in progress
  bool body_unread_ = false;  // answered before the request was read completely
  bool close_after_response_ = false;
  bool chunked_ = false;
  bool closing_ = false;  // waiting for the output to drain, then close
  bool lingering_ = false;
  bool closed_ = false;
  bool resetting_ = false;
  uint64_t cut_after_ = UINT64_MAX;
  uint64_t body_sent_ = 0;
  uint64_t body_trigger_ = 0;
  bool body_trigger_fired_ = false;

  event* timer_ = nullptr;
  std::function<void()> timer_cb_;
  event* linger_timer_ = nullptr;
  event* resume_event_ = nullptr;  // parses buffered input after an asynchronous response
  std::string head_;               // reused scratch for response heads
  std::unique_ptr<ConnectionContext> context_;
};

}  // namespace ferry::streams
