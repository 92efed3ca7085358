#include "proxy/upstream/conn_pool_base.h"

#include <algorithm>

namespace ferry::upstream {

ConnPoolBase::~ConnPoolBase() { deleteStreams(); }

void ConnPoolBase::link(std::unique_ptr<PoolStreamBase> stream) {
  if (streams_ != nullptr) streams_->pool_prev_ = stream.get();
  stream->pool_next_ = std::move(streams_);
  streams_ = std::move(stream);
}

std::unique_ptr<PoolStreamBase> ConnPoolBase::unlink(PoolStreamBase& stream) {
  std::unique_ptr<PoolStreamBase>& owner =
      stream.pool_prev_ != nullptr ? stream.pool_prev_->pool_next_ : streams_;
  std::unique_ptr<PoolStreamBase> owned = std::move(owner);
  owner = std::move(owned->pool_next_);
  if (owner != nullptr) owner->pool_prev_ = stream.pool_prev_;
  owned->pool_prev_ = nullptr;
  return owned;
}

void ConnPoolBase::enqueue(PoolStreamBase& stream) {
  pending_.push_back({next_seq_++, &stream});
  stream.queued_ = true;
}

PoolStreamBase& ConnPoolBase::dequeue() {
  PoolStreamBase& stream = *pending_.front().stream;
  pending_.pop_front();
  stream.queued_ = false;
  return stream;
}

void ConnPoolBase::cancel(PoolStreamBase& stream) {
  auto it = std::find_if(pending_.begin(), pending_.end(),
                         [&stream](const Pending& p) { return p.stream == &stream; });
  if (it != pending_.end()) pending_.erase(it);
  stream.queued_ = false;
}

void ConnPoolBase::destroyStream(PoolStreamBase& stream) {
  if (stream.queued_) cancel(stream);
  // Deferred: the stream may be on the stack (its user let go from inside a callback).
  dispatcher_.deferredDelete(unlink(stream));
}

void ConnPoolBase::deleteStreams() {
  pending_.clear();
  // One at a time (not the chain's recursive destructors): a pool may hold many.
  while (streams_ != nullptr) streams_ = std::move(streams_->pool_next_);
}

}  // namespace ferry::upstream
