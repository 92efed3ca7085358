#include "h2_test_client.h"

#include <cstring>

namespace ferry::http::http2::testing {

namespace {

H2Client& clientOf(void* user) { return *static_cast<H2Client*>(user); }

int onHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
             const uint8_t* value, size_t valuelen, uint8_t, void* user) {
  auto& heads = clientOf(user).streams_[frame->hd.stream_id].heads;
  if (heads.empty()) heads.emplace_back();
  heads.back().emplace_back(std::string(reinterpret_cast<const char*>(name), namelen),
                            std::string(reinterpret_cast<const char*>(value), valuelen));
  return 0;
}

int onBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  clientOf(user).streams_[frame->hd.stream_id].heads.emplace_back();
  return 0;
}

int onDataChunk(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                void* user) {
  clientOf(user).streams_[stream_id].body.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int onFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  H2Client& client = clientOf(user);
  switch (frame->hd.type) {
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
      if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
        client.streams_[frame->hd.stream_id].ended = true;
      break;
    case NGHTTP2_RST_STREAM: {
      ClientStream& s = client.streams_[frame->hd.stream_id];
      s.reset = true;
      s.reset_code = frame->rst_stream.error_code;
      break;
    }
    case NGHTTP2_GOAWAY:
      client.goaways_.push_back({frame->goaway.last_stream_id, frame->goaway.error_code});
      break;
    case NGHTTP2_PING:
      if (frame->hd.flags & NGHTTP2_FLAG_ACK) ++client.ping_acks_;
      break;
    default:
      break;
  }
  return 0;
}

ssize_t readBody(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length, uint32_t* flags,
                 nghttp2_data_source*, void* user) {
  std::string& body = clientOf(user).bodies_[stream_id];
  size_t n = std::min(length, body.size());
  memcpy(buf, body.data(), n);
  body.erase(0, n);
  if (body.empty()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

nghttp2_nv nv(const std::string& name, const std::string& value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

std::string hpackInteger(uint8_t first_bits, int prefix_bits, uint32_t value) {
  std::string out;
  const uint32_t max = (1u << prefix_bits) - 1;
  if (value < max) {
    out.push_back(static_cast<char>(first_bits | value));
    return out;
  }
  out.push_back(static_cast<char>(first_bits | max));
  value -= max;
  while (value >= 128) {
    out.push_back(static_cast<char>((value % 128) + 128));
    value /= 128;
  }
  out.push_back(static_cast<char>(value));
  return out;
}

std::string hpackString(const std::string& s) { return hpackInteger(0, 7, s.size()) + s; }

}  // namespace

H2Client::H2Client(std::vector<nghttp2_settings_entry> settings) {
  nghttp2_session_callbacks* callbacks;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader);
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, onBeginHeaders);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameRecv);
  nghttp2_option* option;
  nghttp2_option_new(&option);
  // The client's own checks would refuse to send some of what the tests send on purpose.
  nghttp2_option_set_no_http_messaging(option, 1);
  nghttp2_session_client_new2(&session_, callbacks, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
}

H2Client::~H2Client() { nghttp2_session_del(session_); }

int32_t H2Client::request(const Fields& fields, const std::string* body) {
  std::vector<nghttp2_nv> list;
  for (const auto& [name, value] : fields) list.push_back(nv(name, value));
  nghttp2_data_provider provider;
  provider.read_callback = readBody;
  int32_t id = nghttp2_submit_request(session_, nullptr, list.data(), list.size(),
                                      body ? &provider : nullptr, nullptr);
  if (body) bodies_[id] = *body;
  streams_[id];
  return id;
}

int32_t H2Client::get(const std::string& path, const Fields& extra) {
  Fields fields = {
      {":method", "GET"}, {":scheme", "https"}, {":authority", "example.com"}, {":path", path}};
  fields.insert(fields.end(), extra.begin(), extra.end());
  return request(fields);
}

void H2Client::reset(int32_t stream_id, uint32_t code) {
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, code);
}

std::string H2Client::takeOutput() {
  std::string out;
  while (true) {
    const uint8_t* data;
    ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n <= 0) break;
    out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  return out;
}

bool H2Client::receive(Buffer& bytes) {
  std::string s = bytes.toString();
  bytes.clear();
  ssize_t n =
      nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(s.data()), s.size());
  return n == static_cast<ssize_t>(s.size());
}

Conversation::Conversation(Http2Settings settings,
                           std::vector<nghttp2_settings_entry> client_settings)
    : client(std::move(client_settings)) {
  codec = createServerCodec(output, callbacks, settings);
}

bool Conversation::sendRaw(const std::string& bytes) {
  Buffer in;
  in.add(bytes);
  if (!codec->dispatch(in)) dispatch_ok = false;
  return dispatch_ok;
}

bool Conversation::send() { return sendRaw(client.takeOutput()); }

void Conversation::deliver() { client.receive(output); }

bool Conversation::exchange() {
  for (int round = 0; round < 1000; ++round) {
    std::string out = client.takeOutput();
    if (out.empty() && output.empty()) break;
    if (!out.empty()) sendRaw(out);
    if (!output.empty()) deliver();
  }
  return dispatch_ok;
}

std::string frame(uint8_t type, uint8_t flags, int32_t stream_id, const std::string& payload) {
  std::string out;
  const uint32_t length = static_cast<uint32_t>(payload.size());
  out.push_back(static_cast<char>((length >> 16) & 0xff));
  out.push_back(static_cast<char>((length >> 8) & 0xff));
  out.push_back(static_cast<char>(length & 0xff));
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags));
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((stream_id >> shift) & 0xff));
  }
  return out + payload;
}

std::string literal(const std::string& name, const std::string& value) {
  return std::string(1, '\0') + hpackString(name) + hpackString(value);
}

std::string indexedLiteral(const std::string& name, const std::string& value) {
  return std::string(1, '\x40') + hpackString(name) + hpackString(value);
}

std::string indexed(uint32_t index) { return hpackInteger(0x80, 7, index); }

std::string getBlock(const std::string& path) {
  return literal(":method", "GET") + literal(":scheme", "https") +
         literal(":authority", "example.com") + literal(":path", path);
}

std::string preface() {
  return std::string(NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN) +
         frame(NGHTTP2_SETTINGS, 0, 0, "");
}

std::vector<RawFrame> parseFrames(const std::string& bytes) {
  std::vector<RawFrame> frames;
  size_t pos = 0;
  while (pos + 9 <= bytes.size()) {
    auto byte = [&](size_t i) { return static_cast<uint8_t>(bytes[pos + i]); };
    const size_t length = (byte(0) << 16) | (byte(1) << 8) | byte(2);
    RawFrame f;
    f.type = byte(3);
    f.flags = byte(4);
    f.stream_id =
        static_cast<int32_t>(((byte(5) & 0x7f) << 24) | (byte(6) << 16) | (byte(7) << 8) | byte(8));
    if (pos + 9 + length > bytes.size()) break;
    f.payload = bytes.substr(pos + 9, length);
    frames.push_back(std::move(f));
    pos += 9 + length;
  }
  return frames;
}

}  // namespace ferry::http::http2::testing
