// H2Feeds: N SSE subscriptions as N streams of ONE HTTP/2 connection (h2c, prior knowledge),
// for sse-bench --h2 (bench/sse/README.md, "The h2 arm").
//
// Flow control is manual (RFC 9113 §5.2): each stream's window is reopened as its DATA is
// handed to onData, the connection's too, except for the one stream given to hold(): its bytes
// are given back to the connection window only, so its stream window closes for good and the
// server must stop sending on that stream, and only on it. release() gives its stream window
// back (everything it held).
#pragma once

#include <event2/event.h>
#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct bufferevent;

namespace ferry::bench {

class H2Feeds {
 public:
  struct Callbacks {
    std::function<void(size_t feed, int status, bool forwarded_to)> on_headers;
    std::function<void(size_t feed, const char* data, size_t n)> on_data;
    std::function<void(size_t feed, const char* how)> on_closed;  // stream closed or reset
    std::function<void()> on_read_begin;  // before a read callback's input is processed
    std::function<void()> on_read_done;   // after each read callback's input was processed
    std::function<void(const std::string& why)> on_connection_lost;
  };

  // Opens the connection and sends `feeds` GETs of `path` (one stream each). `stream_window`:
  // the SETTINGS_INITIAL_WINDOW_SIZE offered to the server; the connection window is raised to
  // 16 MiB so that only stream windows limit the server.
  bool start(event_base* base, const sockaddr* addr, int addr_len, const std::string& authority,
             const std::string& path, size_t feeds, int32_t stream_window, Callbacks cb);
  void hold(size_t feed) { held_ = static_cast<long>(feed); }
  void release();  // reopen the held stream's window; it then flows like the others
  void setReading(bool on);
  size_t heldBytes() const { return held_bytes_; }
  void close();  // frees the session and the connection (before the event_base goes)
  ~H2Feeds() { close(); }

 private:
  static ssize_t onSend(nghttp2_session*, const uint8_t* data, size_t n, int, void* self);
  static int onHeader(nghttp2_session*, const nghttp2_frame*, const uint8_t* name, size_t nlen,
                      const uint8_t* value, size_t vlen, uint8_t, void* self);
  static int onFrameRecv(nghttp2_session*, const nghttp2_frame*, void* self);
  static int onDataChunk(nghttp2_session*, uint8_t, int32_t stream, const uint8_t* data, size_t n,
                         void* self);
  static int onStreamClose(nghttp2_session*, int32_t stream, uint32_t error, void* self);
  static void onRead(bufferevent*, void* self);
  static void onEvent(bufferevent*, short what, void* self);
  void flush();
  long feedOf(int32_t stream) const;

  nghttp2_session* session_ = nullptr;
  bufferevent* bev_ = nullptr;
  Callbacks cb_;
  std::vector<int32_t> stream_of_;  // feed -> stream id
  std::vector<int> status_;
  std::vector<bool> forwarded_;
  long held_ = -1;
  size_t held_bytes_ = 0;
};

}  // namespace ferry::bench
