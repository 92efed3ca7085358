#include "filters/owner_forwarding/forward_log.h"

namespace ferry::filters {

namespace {
constexpr std::string_view kForward = "forward";
constexpr std::string_view kForwardReason = "forward_reason";
constexpr std::string_view kOwner = "owner";
constexpr std::string_view kRoute = "route";
}  // namespace

std::string_view forwardOutcomeName(ForwardOutcome outcome) {
  switch (outcome) {
    case ForwardOutcome::None:
      return "none";
    case ForwardOutcome::Forwarded:
      return "forwarded";
    case ForwardOutcome::Skipped:
      return "skipped";
    case ForwardOutcome::Refused:
      return "refused";
    case ForwardOutcome::Failed:
      return "failed";
    case ForwardOutcome::Cut:
      return "cut";
    case ForwardOutcome::Cancelled:
      return "cancelled";
  }
  return "none";
}

access_log::InfoFields forwardLogFields() {
  // In the order docs/access-log.md lists them (tests/docs/access_log_doc_test.py reads these
  // declarations).
  return {
      access_log::InfoField::withDefault("forward", "none"),
      access_log::InfoField::optional("forward_reason"),
      access_log::InfoField::nullable("owner"),
      access_log::InfoField::optional("route"),
  };
}

void recordForward(access_log::StreamInfo& info, ForwardOutcome outcome, std::string_view owner,
                   std::string_view reason) {
  info.set(kForward, forwardOutcomeName(outcome));
  // The reason is part of a skip only; an empty one would render null, as before.
  if (outcome == ForwardOutcome::Skipped) {
    info.set(kForwardReason, reason);
  } else {
    info.erase(kForwardReason);
  }
  info.set(kOwner, owner);  // empty renders null
}

void recordRoute(access_log::StreamInfo& info, std::string_view outcome) {
  if (outcome.empty()) {
    info.erase(kRoute);
  } else {
    info.set(kRoute, outcome);
  }
}

}  // namespace ferry::filters
