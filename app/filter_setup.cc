#include "app/filter_setup.h"

#include "app/streams_live_feeds.h"
#include "filters/fault/fault_filter.h"
#include "filters/fault/fault_log.h"
#include "filters/live_feeds/live_feeds_filter.h"
#include "filters/live_feeds/live_feeds_log.h"
#include "filters/live_feeds/long_poll_filter.h"
#include "filters/owner_forwarding/forward_log.h"

namespace ferry::app {

FilterSetup::FilterSetup(Server& server, const config::FerryConfig& config)
    : server_(server), config_(config), provider_(server.workerSlots()) {}

filters::LongPollConfig FilterSetup::longPollConfig() {
  filters::LongPollConfig long_polls;
  long_polls.is_long_poll = [rules = streamsLongPollRules()](const http::RequestHeaders& r) {
    return rules.matches(r.method, r.path);
  };
  long_polls.share = config_.live_feeds.share;
  long_polls.answer_limit = config_.live_feeds.subscriber_buffer;
  long_polls.share_key_headers = config_.live_feeds.share_key_headers;
  if (long_polls.share) {
    long_polls.hub =
        server_.workerSlots().allocate<filters::LongPollHub>([](event::WorkerContext& worker) {
          return std::make_unique<filters::LongPollHub>(worker.dispatcher());
        });
  }
  long_polls.stats = std::make_shared<filters::LongPollStats>(server_.statsStore());
  return long_polls;
}

Status FilterSetup::prepare() {
  // The filters' access-log fields are in every record, also with the filter off
  // ("fault":null, "forward":"none","owner":null): one record shape whatever the config. In
  // chain order, as docs/access-log.md lists them.
  server_.addAccessLogFields(filters::faultLogFields());
  server_.addAccessLogFields(filters::liveFeedsLogFields());
  server_.addAccessLogFields(filters::forwardLogFields());
  if (config_.fault.enabled) addFaultFilter();
  // Live feeds before owner forwarding: its reads run the rest of the chain again as internal
  // requests (owner forwarding included), and it serves the client's response from them.
  if (config_.live_feeds.resume || config_.live_feeds.share) {
    live_feeds_stats_ = std::make_unique<filters::LiveFeedsStats>(server_.statsStore());
    filters::LiveFeedsConfig live_feeds;
    live_feeds.reader.resume = config_.live_feeds.resume;
    live_feeds.reader.resume_deadline = config_.live_feeds.resume_deadline;
    live_feeds.reader.stats = live_feeds_stats_.get();
    // One check of Streams' live-read rules for every request; the kind only for live reads.
    live_feeds.is_live_read = [live = streamsLiveFeedRules()](const http::RequestHeaders& r) {
      return isResumableStreamsFeed(live, r);
    };
    live_feeds.is_sse_feed = [sse = streamsSseRules()](const http::RequestHeaders& r) {
      return sse.matches(r.method, r.path);
    };
    live_feeds.share = config_.live_feeds.share;
    live_feeds.subscriber_buffer = config_.live_feeds.subscriber_buffer;
    live_feeds.share_key_headers = config_.live_feeds.share_key_headers;
    if (live_feeds.share) {
      live_feeds.hub = server_.workerSlots().allocate<filters::FeedHub>(
          [stats = live_feeds_stats_.get()](event::WorkerContext& worker) {
            return std::make_unique<filters::FeedHub>(worker.dispatcher(), *stats);
          });
    }
    // Long-polls (sent again before their head; collapsed with `share`), with resume.
    if (config_.live_feeds.resume) live_feeds.long_polls = longPollConfig();
    server_.addFilter(std::make_shared<filters::LiveFeedsFilterFactory>(std::move(live_feeds)));
  }
  if (!config_.forwarding.enabled) return Status::ok();
  peers::PeerTableSource source;
  source.fleet_file = config_.forwarding.fleet_file;
  source.peers = config_.forwarding.peers;
  source.policy.allow_http = config_.forwarding.allow_http_peers;
  source.policy.domains = config_.forwarding.peer_domains;
  source.watch_interval = config_.forwarding.watch_interval;
  loader_ = std::make_unique<peers::PeerTableLoader>(server_.mainDispatcher(), source, provider_,
                                                     server_.statsStore());
  Status loaded = loader_->start();
  if (!loaded.isOk()) return invalidArgument("forwarding: peer table: " + loaded.message());
  stats_ =
      std::make_unique<filters::OwnerForwardingStats>(server_.statsStore(), server_.workerSlots());
  filters::OwnerForwardingConfig forwarding;
  forwarding.instance_name = config_.instance_name;
  forwarding.routes = config_.forwarding.routes;
  forwarding.peers = &provider_;
  forwarding.stats = stats_.get();
  const config::OwnerRouting& routing = config_.forwarding.owner_routing;
  if (routing.enabled) {
    routing_ = std::make_unique<filters::OwnerRouting>(
        filters::OwnerRoutingSettings{routing.max_entries, routing.ttl}, server_.statsStore(),
        server_.workerSlots());
    forwarding.routing = routing_.get();
  }
  server_.addFilter(std::make_shared<filters::OwnerForwardingFilterFactory>(forwarding));
  server_.admin().addHandler("/peers", [this] {
    return admin::AdminResponse{200, "application/json", loader_->renderJson() + "\n"};
  });
  server_.addReloadHook([this] { loader_->reload(); });
  return Status::ok();
}

void FilterSetup::addFaultFilter() {
  fault_stats_ = std::make_unique<filters::FaultStats>(server_.statsStore());
  const config::Fault& fault = config_.fault;
  filters::FaultConfig config;
  config.header = fault.header;
  config.abort_percent = fault.abort.percent;
  config.abort_status = static_cast<int>(fault.abort.status);
  config.delay_percent = fault.delay.percent;
  config.delay = fault.delay.duration;
  config.stats = fault_stats_.get();
  config.generator = filters::allocateFaultGenerator(server_.workerSlots());
  // First: a faulted request never reaches owner forwarding, the local instance or an owner.
  server_.addFilter(std::make_shared<filters::FaultFilterFactory>(std::move(config)));
}

void FilterSetup::attach() {
  if (!loader_) return;
  for (event::WorkerContext* worker : server_.workerContexts()) provider_.addWorker(*worker);
  provider_.publish(provider_.latest());
}

}  // namespace ferry::app
