#include "proxy/http/http1/codec_factory.h"

#include "proxy/http/http1/client_codec.h"
#include "proxy/http/http1/server_codec.h"

namespace ferry::http::http1 {

std::unique_ptr<ServerCodec> createServerCodec(Buffer& output, ServerConnectionCallbacks& callbacks,
                                               const CodecSettings& settings) {
  return std::make_unique<Http1ServerCodec>(output, callbacks, settings);
}

std::unique_ptr<Http1ClientCodec> createClientCodec(Buffer& output) {
  return std::make_unique<Http1ClientCodec>(output);
}

}  // namespace ferry::http::http1
