#include "filters/live_feeds/sse_event_framer.h"

#include <rapidjson/document.h>

namespace ferry::filters {

Status SseEventFramer::push(std::string_view bytes, std::string& out) {
  if (!failed_.isOk()) return failed_;
  pending_.append(bytes);
  // Lines of the open block (WHATWG HTML §9.2.6: CRLF, LF or CR ends a line; a blank line
  // ends the block). A CR ends its line at once (a block ending in CR is not kept waiting for
  // the next byte); an LF right after it is the rest of that line end, whichever block it
  // then falls into (the bytes go out unchanged either way).
  while (scan_ < pending_.size()) {
    if (after_cr_) {
      after_cr_ = false;
      if (pending_[scan_] == '\n') {
        if (scan_ == 0) {  // the block it ends went out: so does the LF, at once
          out.push_back('\n');
          ++delivered_bytes_;
          pending_.erase(0, 1);
        } else {
          ++scan_;
        }
        continue;
      }
    }
    const size_t eol = pending_.find_first_of("\r\n", scan_);
    if (eol == std::string::npos) break;
    size_t next = eol + 1;
    if (pending_[eol] == '\r') {
      if (next == pending_.size()) {
        after_cr_ = true;
      } else if (pending_[next] == '\n') {
        ++next;
      }
    }
    if (eol == scan_) {
      Status status = onBlock(next, out);
      if (!status.isOk()) {
        failed_ = status;
        return status;
      }
      continue;
    }
    onLine(std::string_view(pending_).substr(scan_, eol - scan_));
    scan_ = next;
  }
  return Status::ok();
}

void SseEventFramer::onLine(std::string_view line) {
  if (line.front() == ':') return;  // a comment line
  block_has_field_ = true;
  const size_t colon = line.find(':');
  const std::string_view name = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (name == "event") {
    block_event_.assign(value);
  } else if (name == "data") {
    if (block_has_data_) block_data_.push_back('\n');
    block_data_.append(value);
    block_has_data_ = true;
  }
}

Status SseEventFramer::onBlock(size_t end, std::string& out) {
  const bool control = block_event_ == "control";
  const bool comment = !block_has_field_;
  if (!control) {
    // A data event waits for the control frame that gives its end offset; a comment waits
    // only behind what is already held (order is kept).
    if (comment && held_end_ == 0) {
      out.append(pending_, 0, end);
      delivered_bytes_ += end;
      pending_.erase(0, end);
      end = 0;
    }
    held_end_ = end;
    scan_ = end;
    resetBlock();
    return Status::ok();
  }
  rapidjson::Document doc;
  doc.Parse(block_data_.data(), block_data_.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return protocolError("SSE control frame data is not a JSON object");
  }
  const auto next = doc.FindMember("streamNextOffset");
  if (next == doc.MemberEnd() || !next->value.IsString()) {
    return protocolError("SSE control frame without a string streamNextOffset");
  }
  FeedPosition position;
  position.next_offset.assign(next->value.GetString(), next->value.GetStringLength());
  const auto cursor = doc.FindMember("streamCursor");
  if (cursor != doc.MemberEnd() && cursor->value.IsString()) {
    position.cursor.assign(cursor->value.GetString(), cursor->value.GetStringLength());
  }
  const auto closed = doc.FindMember("streamClosed");
  closed_ = closed != doc.MemberEnd() && closed->value.IsBool() && closed->value.GetBool();
  delivered_ = std::move(position);
  delivered_frame_.assign(pending_, held_end_, end - held_end_);  // the open block: this frame

  out.append(pending_, 0, end);
  delivered_bytes_ += end;
  pending_.erase(0, end);
  held_end_ = 0;
  scan_ = 0;
  resetBlock();
  return Status::ok();
}

void SseEventFramer::resetBlock() {
  block_has_field_ = false;
  block_event_.clear();
  block_data_.clear();
  block_has_data_ = false;
}

uint64_t SseEventFramer::dropHeld() {
  const uint64_t dropped = pending_.size();
  pending_.clear();
  held_end_ = 0;
  scan_ = 0;
  after_cr_ = false;
  resetBlock();
  return dropped;
}

}  // namespace ferry::filters
