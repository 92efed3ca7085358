// See h2_feeds.h.
#include "bench/sse/h2_feeds.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace ferry::bench {

namespace {

nghttp2_nv header(const std::string& name, const std::string& value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

constexpr int32_t kConnectionWindow = 16 << 20;

}  // namespace

bool H2Feeds::start(event_base* base, const sockaddr* addr, int addr_len,
                    const std::string& authority, const std::string& path, size_t feeds,
                    int32_t stream_window, Callbacks cb) {
  cb_ = std::move(cb);
  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_send_callback(cbs, onSend);
  nghttp2_session_callbacks_set_on_header_callback(cbs, onHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, onFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, onDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, onStreamClose);
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  // Windows are reopened by hand (onDataChunk), so one stream can be left closed.
  nghttp2_option_set_no_auto_window_update(opt, 1);
  const int rv = nghttp2_session_client_new2(&session_, cbs, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  if (rv != 0) return false;

  bev_ = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
  bufferevent_setcb(bev_, onRead, nullptr, onEvent, this);
  bufferevent_enable(bev_, EV_READ | EV_WRITE);
  if (bufferevent_socket_connect(bev_, const_cast<sockaddr*>(addr), addr_len) != 0) return false;

  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(stream_window)},
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 2);
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow);

  const std::string m = ":method", get = "GET", s = ":scheme", http = "http", a = ":authority",
                    p = ":path", acc = "accept", es = "text/event-stream";
  const nghttp2_nv nva[] = {header(m, get), header(s, http), header(a, authority), header(p, path),
                            header(acc, es)};
  stream_of_.assign(feeds, -1);
  status_.assign(feeds, 0);
  forwarded_.assign(feeds, false);
  for (size_t i = 0; i < feeds; ++i) {
    const int32_t id = nghttp2_submit_request(session_, nullptr, nva, 5, nullptr, nullptr);
    if (id < 0) return false;
    stream_of_[i] = id;
  }
  flush();
  return true;
}

void H2Feeds::close() {
  if (session_) nghttp2_session_del(session_);
  if (bev_) bufferevent_free(bev_);
  session_ = nullptr;
  bev_ = nullptr;
}

long H2Feeds::feedOf(int32_t stream) const {
  // Client stream ids are 1, 3, 5, ... in submission order.
  if (stream <= 0 || (stream & 1) == 0) return -1;
  const size_t i = static_cast<size_t>((stream - 1) / 2);
  return i < stream_of_.size() && stream_of_[i] == stream ? static_cast<long>(i) : -1;
}

void H2Feeds::release() {
  if (held_ < 0) return;
  const int32_t stream = stream_of_[static_cast<size_t>(held_)];
  if (held_bytes_ > 0) nghttp2_session_consume_stream(session_, stream, held_bytes_);
  held_ = -1;
  held_bytes_ = 0;
  flush();
}

void H2Feeds::setReading(bool on) {
  if (on) {
    bufferevent_enable(bev_, EV_READ);
  } else {
    bufferevent_disable(bev_, EV_READ);
  }
}

void H2Feeds::flush() {
  if (nghttp2_session_send(session_) != 0 && cb_.on_connection_lost)
    cb_.on_connection_lost("nghttp2_session_send failed");
}

ssize_t H2Feeds::onSend(nghttp2_session*, const uint8_t* data, size_t n, int, void* self) {
  bufferevent_write(static_cast<H2Feeds*>(self)->bev_, data, n);
  return static_cast<ssize_t>(n);
}

int H2Feeds::onHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t nlen, const uint8_t* value, size_t vlen, uint8_t, void* self) {
  auto* me = static_cast<H2Feeds*>(self);
  const long feed = me->feedOf(frame->hd.stream_id);
  if (feed < 0 || frame->hd.type != NGHTTP2_HEADERS) return 0;
  const std::string n(reinterpret_cast<const char*>(name), nlen);
  if (n == ":status") {
    me->status_[static_cast<size_t>(feed)] =
        atoi(std::string(reinterpret_cast<const char*>(value), vlen).c_str());
  } else if (n == "streams-forwarded-to") {
    me->forwarded_[static_cast<size_t>(feed)] = true;
  }
  return 0;
}

int H2Feeds::onFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  auto* me = static_cast<H2Feeds*>(self);
  const long feed = me->feedOf(frame->hd.stream_id);
  if (feed >= 0 && frame->hd.type == NGHTTP2_HEADERS &&
      frame->headers.cat == NGHTTP2_HCAT_RESPONSE && me->cb_.on_headers)
    me->cb_.on_headers(static_cast<size_t>(feed), me->status_[static_cast<size_t>(feed)],
                       me->forwarded_[static_cast<size_t>(feed)]);
  return 0;
}

int H2Feeds::onDataChunk(nghttp2_session* session, uint8_t, int32_t stream, const uint8_t* data,
                         size_t n, void* self) {
  auto* me = static_cast<H2Feeds*>(self);
  const long feed = me->feedOf(stream);
  if (feed >= 0 && me->cb_.on_data)
    me->cb_.on_data(static_cast<size_t>(feed), reinterpret_cast<const char*>(data), n);
  if (feed >= 0 && feed == me->held_) {
    // The connection window reopens (other streams must not starve), the stream's does not.
    nghttp2_session_consume_connection(session, n);
    me->held_bytes_ += n;
  } else {
    nghttp2_session_consume(session, stream, n);
  }
  return 0;
}

int H2Feeds::onStreamClose(nghttp2_session*, int32_t stream, uint32_t error, void* self) {
  auto* me = static_cast<H2Feeds*>(self);
  const long feed = me->feedOf(stream);
  if (feed >= 0 && me->cb_.on_closed)
    me->cb_.on_closed(static_cast<size_t>(feed),
                      error == NGHTTP2_NO_ERROR ? "stream_end" : "stream_reset");
  return 0;
}

void H2Feeds::onRead(bufferevent* bev, void* self) {
  auto* me = static_cast<H2Feeds*>(self);
  if (me->cb_.on_read_begin) me->cb_.on_read_begin();
  evbuffer* in = bufferevent_get_input(bev);
  while (evbuffer_get_length(in) > 0) {
    evbuffer_iovec v;
    if (evbuffer_peek(in, -1, nullptr, &v, 1) < 1) break;
    const ssize_t used =
        nghttp2_session_mem_recv(me->session_, static_cast<const uint8_t*>(v.iov_base), v.iov_len);
    if (used < 0) {
      if (me->cb_.on_connection_lost)
        me->cb_.on_connection_lost(std::string("h2: ") + nghttp2_strerror(static_cast<int>(used)));
      return;
    }
    evbuffer_drain(in, v.iov_len);
  }
  me->flush();  // WINDOW_UPDATEs, SETTINGS ack
  if (me->cb_.on_read_done) me->cb_.on_read_done();
}

void H2Feeds::onEvent(bufferevent* bev, short what, void* self) {
  auto* me = static_cast<H2Feeds*>(self);
  if (what & BEV_EVENT_CONNECTED) {
    int one = 1;
    setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return;
  }
  bufferevent_disable(bev, EV_READ | EV_WRITE);
  if (me->cb_.on_connection_lost)
    me->cb_.on_connection_lost((what & BEV_EVENT_EOF) ? "eof" : "io_error");
}

}  // namespace ferry::bench
