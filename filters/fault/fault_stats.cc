#include "filters/fault/fault_stats.h"

namespace ferry::filters {

FaultStats::FaultStats(stats::Store& store)
    : aborts(store.counter("ferry_fault_aborts_total",
                           "Requests fault injection answered with fault.abort.status")),
      delays(store.counter("ferry_fault_delays_total",
                           "Requests fault injection held for fault.delay.duration")) {}

}  // namespace ferry::filters
