#include "integration/harness/http2_client.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <vector>

namespace ferry::testing {
namespace {

using Clock = ClientTransport::Clock;

Http2Client& self(void* user) { return *static_cast<Http2Client*>(user); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// RFC 9113 section 8.2.2: fields that are specific to an HTTP/1.1 connection are not sent over
// HTTP/2 (TE only as "trailers"); Host becomes :authority (section 8.3.1).
bool droppedFromHttp2(const std::string& name, std::string_view value) {
  return name == "connection" || name == "keep-alive" || name == "proxy-connection" ||
         name == "transfer-encoding" || name == "upgrade" || name == "host" ||
         (name == "te" && lower(value) != "trailers");
}

nghttp2_nv nv(const std::string& name, const std::string& value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), NGHTTP2_NV_FLAG_NONE};
}

}  // namespace

Http2Client::Http2Client() = default;

Http2Client::~Http2Client() { close(); }

Status Http2Client::connect(uint16_t port, Ms timeout) {
  close();
  const auto deadline = Clock::now() + timeout;
  Status s =
      transport_.connect(port, tls_ ? &*tls_ : nullptr, std::string_view("\x02h2", 3), deadline);
  if (!s.isOk()) return s;
  if (tls_ && transport_.alpnSelected() != "h2") {
    const std::string got = transport_.alpnSelected();
    transport_.close();
    return protocolError("the server did not select h2 by ALPN (selected: " +
                         (got.empty() ? std::string("none") : got) + ")");
  }
  port_ = port;
  eof_ = false;
  received_any_ = false;
  session_error_.clear();
  goaway_.reset();
  streams_.clear();
  pings_acked_ = 0;

  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, &Http2Client::onBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(cbs, &Http2Client::onHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &Http2Client::onFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &Http2Client::onDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &Http2Client::onStreamClose);
  const int rv = nghttp2_session_client_new(&session_, cbs, this);
  nghttp2_session_callbacks_del(cbs);
  if (rv != 0)
    return internalError(std::string("nghttp2_session_client_new: ") + nghttp2_strerror(rv));
  // The client preface (section 3.4) is written by the session with this SETTINGS frame.
  // Server push is off (section 8.4): a PUSH_PROMISE is then a connection error.
  const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                             {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100}};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 2);
  if (!flush(deadline)) return unavailable("sending the connection preface: " + session_error_);
  return Status::ok();
}

void Http2Client::close() {
  if (session_ != nullptr) nghttp2_session_del(session_);
  session_ = nullptr;
  transport_.close();
}

StatusOr<int32_t> Http2Client::submitRequest(std::string_view method, std::string_view path,
                                             const Headers& headers, std::string_view body,
                                             bool end_stream) {
  if (session_ == nullptr) return unavailable("not connected");
  // Own copies: the name/value pairs must outlive the nghttp2_nv views of them.
  std::vector<std::pair<std::string, std::string>> fields;
  std::string authority = "127.0.0.1:" + std::to_string(port_);
  bool has_length = false;
  for (const auto& [k, v] : headers) {
    const std::string name = lower(k);
    if (name == "host") authority = v;
    if (name == "content-length") has_length = true;
    if (!droppedFromHttp2(name, v)) fields.emplace_back(name, v);
  }
  if (end_stream && !has_length && (!body.empty() || method == "POST" || method == "PUT")) {
    fields.emplace_back("content-length", std::to_string(body.size()));
  }
  const std::string m(method), scheme = tls_ ? "https" : "http", p(path);
  const std::string kMethod = ":method", kScheme = ":scheme", kAuthority = ":authority",
                    kPath = ":path";
  std::vector<nghttp2_nv> nva = {nv(kMethod, m), nv(kScheme, scheme), nv(kAuthority, authority),
                                 nv(kPath, p)};
  for (const auto& [k, v] : fields) nva.push_back(nv(k, v));

  const bool has_body = !body.empty() || !end_stream;
  nghttp2_data_provider provider{};
  provider.read_callback = &Http2Client::readRequestBody;
  const int32_t id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(),
                                            has_body ? &provider : nullptr, nullptr);
  if (id < 0) return internalError(std::string("nghttp2_submit_request: ") + nghttp2_strerror(id));
  Stream& st = streams_[id];
  st.pending_body.assign(body);
  st.body_end = end_stream;
  if (!flush(Clock::now() + Ms(5000))) return unavailable("sending the request: " + session_error_);
  return id;
}

Status Http2Client::sendData(int32_t id, std::string_view bytes, bool end_stream, Ms timeout) {
  auto it = streams_.find(id);
  if (session_ == nullptr || it == streams_.end()) return unavailable("no such stream");
  Stream& st = it->second;
  if (st.body_end) return invalidArgument("the request body of this stream already ended");
  st.pending_body.append(bytes);
  st.body_end = end_stream;
  if (st.deferred) {
    st.deferred = false;
    nghttp2_session_resume_data(session_, id);
  }
  // Done when nghttp2 took all of it (or the stream closed: nothing more will be sent).
  return pump(
      [&] {
        const Stream& s = streams_[id];
        return s.closed || (s.pending_body.empty() && !nghttp2_session_want_write(session_));
      },
      timeout);
}

Status Http2Client::resetStream(int32_t id, uint32_t error_code) {
  if (session_ == nullptr) return unavailable("not connected");
  const int rv = nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, error_code);
  if (rv != 0)
    return internalError(std::string("nghttp2_submit_rst_stream: ") + nghttp2_strerror(rv));
  if (!flush(Clock::now() + Ms(5000))) return unavailable("sending RST_STREAM: " + session_error_);
  return Status::ok();
}

Status Http2Client::sendRaw(std::string_view bytes) {
  const auto deadline = Clock::now() + Ms(5000);
  if (!flush(deadline)) return unavailable("connection gone: " + session_error_);
  return transport_.writeAll(bytes, deadline);
}

Status Http2Client::ping(Ms timeout) {
  if (session_ == nullptr) return unavailable("not connected");
  const int want = pings_acked_ + 1;
  nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, nullptr);
  return pump([&] { return pings_acked_ >= want; }, timeout);
}

// ---- nghttp2 callbacks ----

int Http2Client::onBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  Stream& st = self(user).streams_[frame->hd.stream_id];
  // After a 1xx (section 8.1), the final response head starts afresh.
  if (!st.head_done) {
    st.response.status = 0;
    st.response.headers.clear();
  }
  return 0;
}

int Http2Client::onHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                          size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                          void* user) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  Stream& st = self(user).streams_[frame->hd.stream_id];
  std::string n(reinterpret_cast<const char*>(name), namelen);
  std::string v(reinterpret_cast<const char*>(value), valuelen);
  if (st.head_done) {
    st.trailers.emplace_back(std::move(n), std::move(v));
  } else if (n == ":status") {
    st.response.status = std::atoi(v.c_str());
  } else if (n.empty() || n[0] != ':') {
    st.response.headers.emplace_back(std::move(n), std::move(v));
  }
  return 0;
}

int Http2Client::onFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  Http2Client& c = self(user);
  switch (frame->hd.type) {
    case NGHTTP2_HEADERS: {
      Stream& st = c.streams_[frame->hd.stream_id];
      if (st.response.status >= 200) st.head_done = true;
      if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) st.response.complete = st.head_done;
      break;
    }
    case NGHTTP2_DATA:
      if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) {
        c.streams_[frame->hd.stream_id].response.complete = true;
      }
      break;
    case NGHTTP2_RST_STREAM:
      c.streams_[frame->hd.stream_id].reset_by_peer = frame->rst_stream.error_code;
      break;
    case NGHTTP2_GOAWAY:
      c.goaway_ = {frame->goaway.last_stream_id, frame->goaway.error_code};
      break;
    case NGHTTP2_PING:
      if (frame->hd.flags & NGHTTP2_FLAG_ACK) ++c.pings_acked_;
      break;
    default:
      break;
  }
  return 0;
}

int Http2Client::onDataChunk(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len,
                             void* user) {
  self(user).streams_[id].response.body.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int Http2Client::onStreamClose(nghttp2_session*, int32_t id, uint32_t error_code, void* user) {
  Stream& st = self(user).streams_[id];
  st.closed = true;
  st.close_error = error_code;
  return 0;
}

ssize_t Http2Client::readRequestBody(nghttp2_session*, int32_t id, uint8_t* buf, size_t length,
                                     uint32_t* flags, nghttp2_data_source*, void* user) {
  Stream& st = self(user).streams_[id];
  const size_t n = std::min(length, st.pending_body.size());
  std::memcpy(buf, st.pending_body.data(), n);
  st.pending_body.erase(0, n);
  if (st.pending_body.empty()) {
    if (st.body_end) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
    } else if (n == 0) {
      st.deferred = true;  // sendData() resumes it
      return NGHTTP2_ERR_DEFERRED;
    }
  }
  return static_cast<ssize_t>(n);
}

// ---- Driving the session ----

bool Http2Client::flush(Clock::time_point deadline) {
  if (session_ == nullptr) return false;
  std::string out;
  while (true) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      if (session_error_.empty()) session_error_ = std::string("nghttp2: ") + nghttp2_strerror(n);
      return false;
    }
    if (n == 0) break;
    out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  if (out.empty() || eof_) return !eof_ || out.empty();
  Status s = transport_.writeAll(out, deadline);
  if (!s.isOk()) {
    if (session_error_.empty()) session_error_ = s.message();
    eof_ = true;
    return false;
  }
  return true;
}

Status Http2Client::pump(const std::function<bool()>& done, Ms timeout) {
  if (session_ == nullptr) return unavailable("not connected");
  const auto deadline = Clock::now() + timeout;
  std::string in;
  while (true) {
    flush(deadline);
    if (done()) return Status::ok();
    if (eof_ || !session_error_.empty()) {
      return unavailable(!session_error_.empty() ? session_error_
                         : transport_.wasReset() ? "connection reset by the server"
                                                 : "connection closed by the server");
    }
    in.clear();
    const auto r = transport_.readSome(in, deadline);
    if (r == ClientTransport::Read::kTimeout) return unavailable("timed out");
    if (r == ClientTransport::Read::kEnd) {
      eof_ = true;
      continue;  // done() may hold now (e.g. the connection closing is what the caller awaits)
    }
    if (!received_any_ && in.rfind("HTTP/1.", 0) == 0) {
      // Not a SETTINGS frame (section 3.4): the server does not speak HTTP/2 on this port.
      session_error_ = "the server answered in HTTP/1.x: " + in.substr(0, in.find('\r'));
      continue;
    }
    received_any_ = true;
    const ssize_t rv =
        nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(in.data()), in.size());
    if (rv < 0) {
      // A connection error (section 5.4.1): nghttp2 queued a GOAWAY; send it, then report.
      flush(deadline);
      session_error_ =
          std::string("HTTP/2 connection error: ") + nghttp2_strerror(static_cast<int>(rv));
    }
  }
}

std::string Http2Client::streamFailure(int32_t id) const {
  const Stream& st = stream(id);
  if (st.reset_by_peer) {
    return "stream " + std::to_string(id) + " reset by the server (RST_STREAM " +
           nghttp2_http2_strerror(*st.reset_by_peer) + ")";
  }
  if (st.closed && st.close_error != 0) {
    return "stream " + std::to_string(id) + " closed with " +
           nghttp2_http2_strerror(st.close_error) + " (a protocol violation the client found)";
  }
  if (st.closed) return "stream " + std::to_string(id) + " closed before the response ended";
  return "";
}

StatusOr<HttpResponse> Http2Client::readResponse(int32_t id, Ms timeout) {
  Status s = pump([&] { return stream(id).response.complete || stream(id).closed; }, timeout);
  const Stream& st = stream(id);
  if (st.response.complete && st.close_error == 0) return st.response;
  const std::string why = streamFailure(id);
  return unavailable(why.empty() ? s.message() + " waiting for the response" : why);
}

StatusOr<HttpResponse> Http2Client::readResponseHead(int32_t id, Ms timeout) {
  Status s = pump([&] { return stream(id).head_done || stream(id).closed; }, timeout);
  const Stream& st = stream(id);
  if (st.head_done) return st.response;
  const std::string why = streamFailure(id);
  return unavailable(why.empty() ? s.message() + " waiting for the response head" : why);
}

StatusOr<std::string> Http2Client::readBodyUntil(int32_t id, std::string_view needle, Ms timeout) {
  size_t found = std::string::npos;
  Status s = pump(
      [&] {
        const Stream& st = stream(id);
        found = st.response.body.find(needle, st.body_returned);
        return found != std::string::npos || st.response.complete || st.closed;
      },
      timeout);
  if (found == std::string::npos) {
    const std::string why = streamFailure(id);
    if (!why.empty()) return unavailable(why);
    if (stream(id).response.complete)
      return unavailable("response ended before the expected bytes");
    return s.isOk() ? unavailable("response ended before the expected bytes") : s;
  }
  Stream& st = streams_[id];
  const size_t end = found + needle.size();
  std::string out = st.response.body.substr(st.body_returned, end - st.body_returned);
  st.body_returned = end;
  return out;
}

std::optional<uint32_t> Http2Client::waitForStreamReset(int32_t id, Ms timeout) {
  pump([&] { return stream(id).closed || stream(id).reset_by_peer.has_value(); }, timeout);
  return stream(id).reset_by_peer;
}

const Http2Client::Stream& Http2Client::stream(int32_t id) const {
  static const Stream kNone;
  auto it = streams_.find(id);
  return it == streams_.end() ? kNone : it->second;
}

bool Http2Client::isClosedByPeer(Ms timeout) {
  pump([&] { return eof_; }, timeout);
  return eof_;
}

bool Http2Client::waitForGoaway(Ms timeout) {
  pump([&] { return goaway_.has_value(); }, timeout);
  return goaway_.has_value();
}

uint32_t Http2Client::remoteSetting(nghttp2_settings_id id) const {
  return session_ == nullptr ? 0 : nghttp2_session_get_remote_settings(session_, id);
}

StatusOr<HttpResponse> http2Request(uint16_t port, std::string_view method, std::string_view path,
                                    const Headers& headers, std::string_view body,
                                    std::chrono::milliseconds timeout, const ClientTls* tls) {
  Http2Client client;
  if (tls != nullptr) client.setTls(*tls);
  Status s = client.connect(port, timeout);
  if (!s.isOk()) return s;
  auto id = client.submitRequest(method, path, headers, body);
  if (!id.isOk()) return id.status();
  return client.readResponse(*id, timeout);
}

}  // namespace ferry::testing
