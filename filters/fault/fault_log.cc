#include "filters/fault/fault_log.h"

namespace ferry::filters {

namespace {
constexpr std::string_view kFault = "fault";
}  // namespace

std::string_view faultKindName(FaultKind kind) {
  switch (kind) {
    case FaultKind::Abort:
      return "abort";
    case FaultKind::Delay:
      return "delay";
    case FaultKind::DelayAbort:
      return "delay_abort";
  }
  return "abort";
}

access_log::InfoFields faultLogFields() {
  // tests/docs/access_log_doc_test.py reads this declaration.
  return {access_log::InfoField::nullable("fault")};
}

void recordFault(access_log::StreamInfo& info, FaultKind kind) {
  info.set(kFault, faultKindName(kind));
}

}  // namespace ferry::filters
