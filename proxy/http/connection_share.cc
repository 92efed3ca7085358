#include "proxy/http/connection_share.h"

#include <algorithm>

#include "proxy/http/active_stream.h"

namespace ferry::http {

ConnectionShare::ConnectionShare(uint32_t limit, event::Dispatcher& dispatcher,
                                 stats::ProxyStats& stats)
    : limit_(std::max<uint32_t>(limit, 1)), stats_(stats) {
  start_timer_ = dispatcher.createTimer([this] { startWaiting(); });
}

ConnectionShare::~ConnectionShare() {
  stats_.requests_waiting_for_connection_share.sub(static_cast<int64_t>(waiting_.size()));
}

bool ConnectionShare::tryStart(ActiveStream& stream) {
  if (running_.size() < limit_ && waiting_.empty()) {
    running_.push_back(&stream);
    return true;
  }
  waiting_.push_back(&stream);
  stats_.requests_waited_for_connection_share.inc();
  stats_.requests_waiting_for_connection_share.add(1);
  return false;
}

void ConnectionShare::onStreamEnd(ActiveStream& stream) {
  auto running = std::find(running_.begin(), running_.end(), &stream);
  if (running != running_.end()) {
    *running = running_.back();
    running_.pop_back();
    if (!waiting_.empty()) start_timer_->fireSoon();
    return;
  }
  auto waiting = std::find(waiting_.begin(), waiting_.end(), &stream);
  if (waiting != waiting_.end()) {
    waiting_.erase(waiting);
    stats_.requests_waiting_for_connection_share.sub(1);
  }
}

void ConnectionShare::startWaiting() {
  // A started stream may end at once (a local reply) and call onStreamEnd from inside the
  // grant: the loop re-reads both lists every turn.
  while (running_.size() < limit_ && !waiting_.empty()) {
    ActiveStream* stream = waiting_.front();
    waiting_.pop_front();
    stats_.requests_waiting_for_connection_share.sub(1);
    running_.push_back(stream);
    stream->onConnectionShareGranted();
  }
}

}  // namespace ferry::http
