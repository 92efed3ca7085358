#include "proxy/http/http2/flood_guard.h"

namespace ferry::http::http2 {

bool FloodGuard::flooded() const {
  return opened_ >= min_streams_ && premature_resets_ * 2 > opened_;
}

}  // namespace ferry::http::http2
