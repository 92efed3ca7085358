#include "proxy/event/write_batch.h"

#include <liburing.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace ferry::event {

struct WriteBatch::Ring {
  io_uring ring;
};

WriteBatch::WriteBatch(unsigned entries) : entries_(std::max(1u, entries)) {
  auto ring = std::make_unique<Ring>();
  // Nothing is left in flight, so the kernel need not interrupt the thread to run completion
  // work (COOP_TASKRUN); older kernels refuse the flag: then the plain ring. Not SINGLE_ISSUER:
  // a worker's dispatcher is made on the main thread and submits from the worker's.
  int rc = io_uring_queue_init(entries_, &ring->ring, IORING_SETUP_COOP_TASKRUN);
  if (rc == -EINVAL) rc = io_uring_queue_init(entries_, &ring->ring, 0);
  if (rc < 0) return;  // not available here: available() is false
  ring_ = std::move(ring);
  iovecs_.resize(static_cast<size_t>(entries_) * kMaxIovecs);
  messages_.resize(entries_);
}

WriteBatch::~WriteBatch() {
  if (ring_ != nullptr) io_uring_queue_exit(&ring_->ring);
}

void WriteBatch::cancel(BatchedWriter& writer) {
  std::replace(queued_.begin(), queued_.end(), &writer, static_cast<BatchedWriter*>(nullptr));
  std::replace(running_.begin(), running_.end(), &writer, static_cast<BatchedWriter*>(nullptr));
}

void WriteBatch::tellAll(std::vector<BatchedWriter*>& writers) {
  // By index: a writer told its result may cancel another one of the list.
  for (size_t i = 0; i < writers.size(); ++i) {
    BatchedWriter* writer = writers[i];
    writers[i] = nullptr;
    if (writer != nullptr) writer->onBatchedWrite(-EAGAIN);
  }
  writers.clear();
}

void WriteBatch::writeAlone() {
  for (size_t i = 0; i < running_.size(); ++i) {
    BatchedWriter* writer = running_[i];
    if (writer == nullptr) continue;
    running_[i] = nullptr;
    ssize_t written;
    do {
      written = ::sendmsg(writer->batchedWriteFd(), &messages_[i], MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (written < 0 && errno == EINTR);
    ++writes_;
    writer->onBatchedWrite(written >= 0 ? static_cast<int>(written) : -errno);
  }
  running_.clear();
}

int WriteBatch::submit() {
  // A writer's result can lead to a submit() from further down (a connection that reads again
  // once another drained, and whose read callback ends with the dispatcher sending its
  // writes): what that one would send is queued already, and this loop takes it.
  if (submitting_) return 0;
  submitting_ = true;
  int submissions = 0;
  while (!queued_.empty()) {
    if (ring_ == nullptr) {
      std::vector<BatchedWriter*> left;
      left.swap(queued_);
      tellAll(left);
      continue;
    }
    const size_t take = std::min(queued_.size(), static_cast<size_t>(entries_));
    running_.assign(queued_.begin(), queued_.begin() + static_cast<std::ptrdiff_t>(take));
    queued_.erase(queued_.begin(), queued_.begin() + static_cast<std::ptrdiff_t>(take));
    unsigned prepared = 0;
    for (size_t i = 0; i < running_.size(); ++i) {
      BatchedWriter* writer = running_[i];
      if (writer == nullptr) continue;
      iovec* iov = &iovecs_[i * kMaxIovecs];
      const int count = writer->prepareBatchedWrite(iov, kMaxIovecs);
      if (count <= 0) {
        running_[i] = nullptr;
        continue;
      }
      msghdr& message = messages_[i];
      message = msghdr{};
      message.msg_iov = iov;
      message.msg_iovlen = static_cast<size_t>(count);
      ++prepared;
    }
    if (prepared == 0) continue;
    if (prepared == 1) {
      // One write alone (one connection, one request at a time) costs less as a plain
      // system call than as a submission.
      writeAlone();
      continue;
    }
    // Entries only now, once it is sure they are submitted: one left in the ring would go out
    // with the next submission, pointing at memory reused meanwhile.
    for (size_t i = 0; i < running_.size(); ++i) {
      BatchedWriter* writer = running_[i];
      if (writer == nullptr) continue;
      io_uring_sqe* sqe = io_uring_get_sqe(&ring_->ring);
      // MSG_DONTWAIT: a full socket answers EAGAIN at once instead of the kernel waiting for
      // room, so every write is done when the submission returns.
      io_uring_prep_sendmsg(sqe, writer->batchedWriteFd(), &messages_[i],
                            MSG_DONTWAIT | MSG_NOSIGNAL);
      io_uring_sqe_set_data64(sqe, i);
    }
    int rc;
    do {
      rc = io_uring_submit_and_wait(&ring_->ring, prepared);
    } while (rc == -EINTR);
    if (rc >= 0) {
      ++submissions;
      ++submissions_;
      writes_ += static_cast<uint64_t>(rc);
    }
    // Every write was issued without waiting (MSG_DONTWAIT), and submit_and_wait returned once
    // all submitted completions were posted. Each is told in order of completion.
    for (int seen = 0; seen < rc; ++seen) {
      io_uring_cqe* cqe = nullptr;
      if (io_uring_peek_cqe(&ring_->ring, &cqe) != 0 || cqe == nullptr) break;
      const size_t index = static_cast<size_t>(io_uring_cqe_get_data64(cqe));
      const int result = cqe->res;
      io_uring_cqe_seen(&ring_->ring, cqe);
      if (index >= running_.size()) continue;
      BatchedWriter* writer = running_[index];
      running_[index] = nullptr;
      if (writer != nullptr) writer->onBatchedWrite(result);
    }
    if (rc != static_cast<int>(prepared)) {
      // The ring broke (it should not): entries left in it would be taken later, pointing at
      // memory reused meanwhile, so it goes, and every writer from now on writes itself.
      io_uring_queue_exit(&ring_->ring);
      ring_.reset();
    }
    // Whatever was not submitted (the ring failed) is told EAGAIN: it waits for EPOLLOUT and
    // writes the usual way.
    tellAll(running_);
  }
  submitting_ = false;
  return submissions;
}

}  // namespace ferry::event
