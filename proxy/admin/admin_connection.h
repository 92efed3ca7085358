#pragma once
// One connection to the admin listener: reads a request head (GET, HEAD, or POST for the
// actions; never a body), asks the server for the answer, writes it, and keeps the connection
// for the next request. It applies the data plane's limits (issue #10, finding 5): a head
// larger than max_head_bytes gets 431, a head not complete within head_timeout of accept (or
// of the previous answer) gets 408 and a trickling client cannot stretch it, an idle
// keep-alive is closed after idle_timeout, and a client that does not read its answers stops
// being served (bounded output).
//
// Owned by the AdminServer; closes itself and asks the server to delete it (deferred).

#include <string>
#include <string_view>

#include "proxy/admin/admin_limits.h"
#include "proxy/admin/admin_stats.h"
#include "proxy/event/dispatcher.h"
#include "proxy/http/http1/parser.h"
#include "proxy/net/connection.h"

namespace ferry::admin {

struct AdminResponse;

// Implemented by the AdminServer.
class AdminConnectionOwner {
 public:
  virtual ~AdminConnectionOwner() = default;
  // The answer for `method` (GET, HEAD or POST) on `path` (the target without its query).
  virtual AdminResponse respond(std::string_view method, const std::string& path) = 0;
  // For a 405 from respond(): the methods `path` takes (`Allow`, RFC 9110 §10.2.1).
  virtual std::string allowedMethods(const std::string& path) const = 0;
  // The connection closed; the owner deletes it (deferred).
  virtual void onConnectionClosed(class AdminConnection& connection) = 0;
};

class AdminConnection : public net::ConnectionCallbacks, public event::DeferredDeletable {
 public:
  AdminConnection(AdminConnectionOwner& owner, net::ConnectionPtr connection,
                  event::Dispatcher& dispatcher, const AdminLimits& limits, AdminStats& stats);
  ~AdminConnection() override;
  void close();
  // No request in progress: no byte of a next head read, no answer still being written, not
  // closing. The server closes such a connection to make room for a new one at its cap.
  bool idle() const;

  // net::ConnectionCallbacks
  void onData(Buffer& input) override;
  void onEvent(net::ConnectionEvent event) override;
  void onBelowWriteBufferLowWatermark() override;

 private:
  // Answers every complete request head in the input while the client keeps up.
  void serveInput();
  // Answers the head the parser just completed; false when the connection closes after it.
  bool serveHead();
  void refuse(int status, std::string_view reason, std::string_view body);
  void writeResponse(int status, const std::string& content_type, const std::string& body,
                     bool head_only, bool close_after, std::string_view extra_headers = {});
  void armTimers();
  void onHeadTimeout();

  AdminConnectionOwner& owner_;
  net::ConnectionPtr connection_;
  const AdminLimits& limits_;
  AdminStats& stats_;
  http::http1::Parser parser_;
  event::TimerPtr head_timer_;
  event::TimerPtr idle_timer_;
  bool served_any_ = false;  // a head was answered: between requests the idle timer runs
  bool closing_ = false;     // an answer that ends the connection was written
  bool closed_ = false;
};

}  // namespace ferry::admin
