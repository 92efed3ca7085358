#pragma once
// What fault injection tells the access log (docs/access-log.md): the "fault" field it writes
// into the stream's info map (access_log/stream_info.h). Written by the fault filter when it
// injects; declared once at start by the composition root (app/filter_setup.cc), also when
// fault injection is off, so every record has "fault" (null: no fault).

#include <string_view>

#include "proxy/access_log/access_log.h"
#include "proxy/access_log/stream_info.h"

namespace ferry::filters {

// What the fault filter did to the request ("fault").
enum class FaultKind {
  Abort,       // answered at once with fault.abort.status
  Delay,       // held for fault.delay.duration, then sent on
  DelayAbort,  // held for fault.delay.duration, then answered with fault.abort.status
};
std::string_view faultKindName(FaultKind kind);

// "fault" (null: none).
access_log::InfoFields faultLogFields();

void recordFault(access_log::StreamInfo& info, FaultKind kind);

}  // namespace ferry::filters
