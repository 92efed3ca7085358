#pragma once
// Writing HTTP/1.1 message heads (RFC 9112 §3, §4, §5), shared by the response and request
// encoders. Heads are built in a std::string and appended to the output in one piece.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/buffer/buffer.h"
#include "proxy/http/header_map.h"

namespace ferry::http::http1 {

// A size to reserve for a head carrying `headers` (their bytes plus room for the start line and
// the few fields an encoder adds), so the head string is allocated once, not regrown.
size_t headSizeHint(const HeaderMap& headers);

// Adds the head built in `head` to `output` and empties `head` for the next message. Encoders
// keep their head string for the life of the connection, so a head costs no allocation once
// the string has grown to a typical size; a string that grew past a few KiB (a rare huge head)
// gives its storage back.
void flushHead(std::string& head, Buffer& output);

// Appends "name: value\r\n".
void appendField(std::string& head, std::string_view name, std::string_view value);

// Appends every end-to-end field of `headers`: hop-by-hop fields (including those named in
// Connection), fields named in `skip` and fields that are not valid on the wire (a name that is
// not a token, a value holding CR/LF/NUL — writing those would let a filter split the message)
// are left out. A map marked wireSafe() (parsed by an HTTP/1 codec, unedited since) is
// written without those per-field checks; only `skip` applies.
void appendEndToEndFields(std::string& head, const HeaderMap& headers,
                          std::initializer_list<std::string_view> skip = {});

// The Content-Length in `headers` when it is present and a plain decimal number.
std::optional<uint64_t> contentLength(const HeaderMap& headers);

}  // namespace ferry::http::http1
