#include "tests/integration/forwarding/support/cell_client.h"

namespace ferry::fwdtest {

CellClient::CellClient()
    : h2_(std::make_unique<testing::Http2Client>()),
      raw_(std::make_unique<testing::Http1ToHttp2>(*h2_)) {}

CellClient::~CellClient() = default;

void CellClient::setProtocol(bool http2, std::optional<testing::ClientTls> tls) {
  http2_ = http2;
  tls_ = std::move(tls);
}

Status CellClient::connect(uint16_t port, Ms timeout) {
  unread_.clear();
  last_read_ = 0;
  streams_seen_ = 0;
  if (!http2_) {
    h1_.setTls(tls_);
    return h1_.connect(port, timeout);
  }
  raw_->reset();
  h2_->setTls(tls_);
  return h2_->connect(port, timeout);
}

void CellClient::close() {
  h1_.close();
  h2_->close();
}

Status CellClient::send(std::string_view bytes) {
  if (!http2_) return h1_.send(bytes);
  Status s = raw_->feed(bytes);
  for (; streams_seen_ < raw_->streams().size(); ++streams_seen_) {
    unread_.push_back(raw_->streams()[streams_seen_]);
  }
  return s;
}

Status CellClient::sendRequest(std::string_view method, std::string_view path,
                               const testing::Headers& headers, std::string_view body) {
  if (!http2_) return h1_.sendRequest(method, path, headers, body);
  auto id = h2_->submitRequest(method, path, headers, body);
  if (!id.isOk()) return id.status();
  unread_.push_back(*id);
  return Status::ok();
}

int32_t CellClient::currentStream() const { return unread_.empty() ? last_read_ : unread_.front(); }

StatusOr<testing::HttpResponse> CellClient::readResponse(Ms timeout) {
  if (!http2_) return h1_.readResponse(timeout);
  last_read_ = currentStream();
  auto r = h2_->readResponse(last_read_, timeout);
  // Read to its end, or ended without a whole response (reset): the next read is the next
  // stream's.
  if ((r.isOk() || h2_->stream(last_read_).closed) && !unread_.empty()) unread_.pop_front();
  return r;
}

StatusOr<testing::HttpResponse> CellClient::readResponseHead(Ms timeout) {
  if (!http2_) return h1_.readResponseHead(timeout);
  last_read_ = currentStream();
  return h2_->readResponseHead(last_read_, timeout);
}

StatusOr<std::string> CellClient::readBodyUntil(std::string_view needle, Ms timeout) {
  if (!http2_) return h1_.readBodyUntil(needle, timeout);
  last_read_ = currentStream();
  auto r = h2_->readBodyUntil(last_read_, needle, timeout);
  const auto& st = h2_->stream(last_read_);
  if (((st.response.complete && st.body_returned == st.response.body.size()) || st.closed) &&
      !unread_.empty()) {
    unread_.pop_front();
  }
  return r;
}

const testing::HttpResponse& CellClient::partial() const {
  return http2_ ? h2_->stream(last_read_).response : h1_.partial();
}

bool CellClient::isClosedByPeer(Ms timeout) {
  if (!http2_) return h1_.isClosedByPeer(timeout);
  const int32_t id = currentStream();
  h2_->pump([&] { return h2_->stream(id).closed; }, timeout);
  return h2_->stream(id).closed || !h2_->connected() || h2_->isClosedByPeer(Ms(0));
}

void CellClient::leave() {
  if (!http2_) {
    h1_.close();
    return;
  }
  const int32_t id = unread_.empty() ? last_read_ : unread_.back();
  h2_->resetStream(id);
}

}  // namespace ferry::fwdtest
