#include "proxy/http/http2/codec_factory.h"

#include "proxy/http/http2/server_codec.h"

namespace ferry::http::http2 {

std::unique_ptr<ServerCodec> createServerCodec(Buffer& output, ServerConnectionCallbacks& callbacks,
                                               const Http2Settings& settings,
                                               event::Dispatcher* dispatcher) {
  return std::make_unique<Http2ServerCodec>(output, callbacks, settings, dispatcher);
}

}  // namespace ferry::http::http2
