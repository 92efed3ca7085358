#pragma once
// Live SSE feeds that survive a hand-over, shared by the clients of one worker
// (docs/live-feeds.md, "Resume" and "Sharing").
//
// For a client's live SSE read (a GET the configured rules name), the filter stops the request
// and becomes the source of the client's response (StreamFilterCallbacks::sendResponseHeaders /
// sendResponseData), fed by a FeedReader: the read issued as internal requests
// (http/internal_request.h) through the listener's normal path, cut into whole events, resumed
// from the last delivered position after a break (feed_reader.h):
// - a first answer that is not a 200 event stream goes to the client unchanged, and that is all;
//   a first attempt that fails before any answer gets the router's failure answer;
// - with live_feeds.share, the client is a FeedSubscriber of its worker's FeedHub: a read at the
//   position a shared feed of the same key (share_key.h) stands at joins it at once; any other
//   reads on its own and joins when the two meet at a boundary; the first read of a key that
//   turns out to be a feed becomes the key's shared feed. On a shared feed the client's units
//   wait in a queue of its own while its write buffer is above its high watermark; past
//   live_feeds.subscriber_buffer it is detached and reads on its own from the last unit it
//   wrote.
// Never for other methods (reads only).
//
// One filter per client stream, on its worker; owned by the stream's filter chain. The config
// is shared by every worker (immutable); the stats are relaxed atomics; the hub is the worker's.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "filters/live_feeds/feed_hub.h"
#include "filters/live_feeds/feed_reader.h"
#include "filters/live_feeds/live_feeds_stats.h"
#include "filters/live_feeds/long_poll_filter.h"
#include "filters/live_feeds/shared_feed.h"
#include "proxy/event/worker_context.h"
#include "proxy/http/filter.h"

namespace ferry::filters {

struct LiveFeedsConfig {
  FeedReaderConfig reader;  // resume, resume_deadline, stats
  // Which requests this filter serves: live SSE reads by the upstream's URL conventions, and not
  // ones another ferry forwarded (that ferry resumes them), as the composition root says
  // (Streams': app/streams_live_feeds.h). Only GETs are ever asked.
  std::function<bool(const http::RequestHeaders&)> is_sse_feed;
  // Optional, asked first: any live read (SSE or long-poll) it may serve; false for most
  // requests, so they pay for one check, not one per kind.
  std::function<bool(const http::RequestHeaders&)> is_live_read;
  // Long-polls (long_poll_filter.h), served by a LongPollFilter this filter makes for the
  // request and hands every call to; none: long-polls go their normal way. One filter for both
  // kinds: every request creates the chain's filters, so a second one would cost every
  // request an allocation and a hop.
  std::optional<LongPollConfig> long_polls;
  bool share = false;
  uint64_t subscriber_buffer = 256 * 1024;
  std::vector<std::string> share_key_headers;  // lower-case
  event::WorkerSlot<FeedHub> hub;              // allocated with the config when `share`
};

class LiveFeedsFilter : public http::StreamFilter, public FeedReaderSink, public FeedSubscriber {
 public:
  // `worker`: the stream's worker (its FeedHub, with `share`).
  LiveFeedsFilter(const LiveFeedsConfig& config, event::WorkerContext& worker)
      : config_(config), worker_(worker) {}

  // http::StreamFilter
  http::FilterStatus onRequestHeaders(http::RequestHeaders& headers, bool end_stream) override;
  void onResponseWatermark(bool above) override;
  bool onEndLiveFeed() override;
  void onDestroy() override;

  // FeedReaderSink (the client's own read)
  void onFeedHead(http::ResponseHeadersPtr head, bool is_feed, bool end_stream) override;
  void onPassThroughData(Buffer& data, bool end_stream) override;
  void onPassThroughCut() override;
  void onFeedFailed(const upstream::UpstreamFailure& failure) override;
  void onFeedUnits(std::string_view units) override;
  void onFeedResuming() override;
  void onFeedEnd() override;

  // FeedSubscriber (the shared feed it is on, or the hub offering one)
  void onSharedUnits(std::string_view units, const FeedPosition& position) override;
  void onSharedResuming() override;
  void onSharedEnd() override;
  bool joinIfAt(SharedFeed& feed) override;

 private:
  enum class Mode {
    Waiting,      // its own read's first attempt has not answered yet
    PassThrough,  // the first answer was not a feed: it goes to the client as it is
    Own,          // the client's feed comes from its own read
    Shared,       // the client's feed comes from a shared feed
    Done,         // the client's response ended (or the client left)
  };
  // A new read at the position of the key's shared feed joins it now.
  bool joinAtStart(const http::RequestHeaders& headers);
  void startOwnRead(std::optional<FeedPosition> from);
  void join(SharedFeed& feed);
  // Its own read, which answered with a feed, becomes the key's shared feed (the hub has none).
  void share();
  // Leaves the shared feed for a read of its own from the last unit written.
  void detach();
  void leaveFeedAndHub();
  // A long-poll: a LongPollFilter serves it.
  http::FilterStatus serveLongPoll(http::RequestHeaders& headers, bool end_stream);
  // Lets go of its own read (deleted after the current callbacks unwind).
  void dropReader();
  void write(std::string_view units);
  void flushQueue();
  void endFeed();
  void recordShared();

  const LiveFeedsConfig& config_;
  event::WorkerContext& worker_;
  FeedHub* hub_ = nullptr;  // the worker's, for a feed it serves with `share`
  Mode mode_ = Mode::Waiting;
  std::string key_;                     // the share key (with a hub)
  std::unique_ptr<FeedReader> reader_;  // its own read (Waiting, PassThrough, Own)
  // The feed's first head (with a hub): what joiners of a shared feed made from its read get.
  std::shared_ptr<const http::ResponseHeaders> head_;
  SharedFeed* feed_ = nullptr;           // Shared
  bool solo_in_hub_ = false;             // Own, waiting in the hub to meet the shared feed
  bool paused_ = false;                  // the client's write buffer is above its high watermark
  std::optional<FeedPosition> written_;  // where the units written to the client end
  // Shared, paused: units waiting for the client, and where they end.
  std::string queue_;
  std::optional<FeedPosition> queue_end_;
  uint32_t resumes_ = 0;
  bool shared_ = false;
  std::unique_ptr<LongPollFilter> long_poll_;  // the request is a long-poll it serves  // the
                                               // client's feed was a shared one at some point
};

class LiveFeedsFilterFactory : public http::FilterFactory {
 public:
  explicit LiveFeedsFilterFactory(LiveFeedsConfig config) : config_(std::move(config)) {}
  http::StreamFilterPtr createFilter(event::WorkerContext& worker) const override {
    return std::make_unique<LiveFeedsFilter>(config_, worker);
  }

 private:
  const LiveFeedsConfig config_;
};

}  // namespace ferry::filters
