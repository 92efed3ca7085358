#pragma once
// Writes to many sockets in one system call. Each write() or writev() a proxy makes costs a
// kernel entry and exit; on a virtual machine that entry alone can cost a microsecond or more
// (bench/README "Writes batched through io_uring"). A loop pass that answers many requests
// writes to many sockets: WriteBatch collects those writes and hands them to the kernel
// together through one io_uring submission. The sockets are non-blocking, so every write
// completes (fully, partly, or with EAGAIN) within the submission: submit() reports each
// result before it returns, and nothing stays in flight between loop passes.
//
// One per Dispatcher, used from its thread only. When the kernel refuses io_uring (an old
// kernel, io_uring disabled by sysctl, a seccomp profile such as a container runtime's
// default), available() is false and callers write as before.

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace ferry::event {

// A socket with bytes to write in the next batch (a net::Connection).
class BatchedWriter {
 public:
  // Called by WriteBatch::submit(): fills up to `max` iovecs with the bytes to write now and
  // returns how many (0: nothing to write any more). The memory must stay put until
  // onBatchedWrite() is called, which happens before submit() returns.
  virtual int prepareBatchedWrite(iovec* iov, int max) = 0;
  // The result of that write: bytes written (possibly fewer than offered), or -errno.
  virtual void onBatchedWrite(int result) = 0;
  virtual int batchedWriteFd() const = 0;

 protected:
  ~BatchedWriter() = default;
};

class WriteBatch {
 public:
  // `entries`: the most writes handed to the kernel in one submission (more are submitted in
  // rounds). Tries io_uring; see available().
  explicit WriteBatch(unsigned entries = 64);
  ~WriteBatch();
  WriteBatch(const WriteBatch&) = delete;
  WriteBatch& operator=(const WriteBatch&) = delete;

  // The most iovecs one write takes (prepareBatchedWrite's `max`). An HTTP/2 connection's
  // output of one pass holds about two pieces per stream answered (frame header and fields,
  // then the body): 32 covers a pass of 16 answers on one connection; more follow in a writev.
  static constexpr int kMaxIovecs = 32;

  bool available() const { return ring_ != nullptr; }
  // Queues `writer` for the next submit(). The caller queues each writer at most once until
  // it is told its result, and cancels it before destroying it.
  void queue(BatchedWriter& writer) { queued_.push_back(&writer); }
  void cancel(BatchedWriter& writer);
  bool empty() const { return queued_.empty(); }
  // Writes for every queued writer, in as few submissions as `entries` allows, and reports
  // each result. A writer told its result may queue itself (or others) again: those go in a
  // further round of the same submit(). A round of one write is made as a plain sendmsg() (no
  // submission). A submit() called while one runs (from a writer's result) returns 0 at once: the
  // running one takes what is queued. Returns the number of submissions made (for tests and
  // counters).
  int submit();

  // Writes handed to the kernel and submissions made since start (each submission is one
  // io_uring_enter system call; a write alone is counted in writes() only).
  uint64_t writes() const { return writes_; }
  uint64_t submissions() const { return submissions_; }

 private:
  struct Ring;
  // Tells each writer of `writers` EAGAIN (it then waits for EPOLLOUT) and empties the list.
  void tellAll(std::vector<BatchedWriter*>& writers);
  // The one prepared write of running_, as a plain sendmsg().
  void writeAlone();

  std::unique_ptr<Ring> ring_;
  unsigned entries_;
  std::vector<BatchedWriter*> queued_;   // nullptr: cancelled
  std::vector<BatchedWriter*> running_;  // the round being submitted
  std::vector<iovec> iovecs_;            // entries_ * kMaxIovecs, reused
  std::vector<msghdr> messages_;         // one per entry, reused
  bool submitting_ = false;
  uint64_t writes_ = 0;
  uint64_t submissions_ = 0;
};

}  // namespace ferry::event
