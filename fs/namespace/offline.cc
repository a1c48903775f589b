#include "fs/namespace/offline.h"

#include "storage/stats.h"

namespace stampfs {

namespace {
Counter g_offline_served{"metadata.offline_served"};
}  // namespace

bool NoAnswer(const Status& s) { return s.Is(Code::kTimeout) || s.Is(Code::kTransport); }

RevalidationDeadline::RevalidationDeadline(std::chrono::milliseconds within)
    : within_(within), token_(CurrentCancelToken()), scope_(&token_) {
  token_.CancelAt(CancelToken::Clock::now() + within);
}

Status RevalidationDeadline::Outcome(Status s) const {
  if (!s.Is(Code::kCancelled) || token_.parent_cancelled()) return s;
  return Status(Code::kTimeout, "no answer within " + std::to_string(within_.count()) +
                                    " ms (a revalidation): " + s.message());
}

bool ServeStale(bool cached, const Status& s) {
  if (!cached || !NoAnswer(s)) return false;
  g_offline_served.Add();
  return true;
}

}  // namespace stampfs
