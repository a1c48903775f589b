#include "storage/token_credential.h"

#include <ctime>
#include <nlohmann/json.hpp>

namespace stampfs {
namespace {

using std::chrono::seconds;

Status Malformed(const std::string& why) {
  return Status(Code::kCorruption, "token endpoint answer: " + why);
}

// A number or a decimal string ("1700000000"), as the endpoints vary.
bool ReadSeconds(const nlohmann::json& v, int64_t* out) {
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return true;
  }
  if (v.is_number_float()) {
    *out = static_cast<int64_t>(v.get<double>());
    return true;
  }
  if (!v.is_string()) return false;
  const std::string s = v.get<std::string>();
  if (s.empty() || s.size() > 18) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  *out = std::stoll(s);
  return true;
}

// "2024-01-02 03:04:05.000000" in local time (az CLI's expiresOn).
bool ReadLocalTime(const std::string& s, SystemTime* out) {
  std::tm tm{};
  int year, month, day, hour, minute, second;
  if (std::sscanf(s.c_str(), "%d-%d-%d %d:%d:%d", &year, &month, &day, &hour, &minute, &second) !=
      6) {
    return false;
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  tm.tm_isdst = -1;
  std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) return false;
  *out = std::chrono::system_clock::from_time_t(t);
  return true;
}

}  // namespace

Result<AccessToken> ParseTokenResponse(const std::string& json, SystemTime now) {
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return Malformed("not a JSON object");
  AccessToken token;
  for (const char* name : {"access_token", "accessToken"}) {
    auto it = doc.find(name);
    if (it != doc.end() && it->is_string()) token.token = it->get<std::string>();
  }
  if (token.token.empty()) return Malformed("no access_token");
  for (char c : token.token) {
    // It goes into a header line as is.
    if (c <= ' ' || c > '~') return Malformed("access_token holds characters a header cannot");
  }
  int64_t value = 0;
  if (auto it = doc.find("expires_on"); it != doc.end() && ReadSeconds(*it, &value)) {
    token.expires_on = SystemTime(seconds(value));
  } else if (auto in = doc.find("expires_in"); in != doc.end() && ReadSeconds(*in, &value)) {
    token.expires_on = now + seconds(value);
  } else if (auto local = doc.find("expiresOn");
             local != doc.end() && local->is_string() &&
             ReadLocalTime(local->get<std::string>(), &token.expires_on)) {
  } else {
    return Malformed("no expires_on, expires_in or expiresOn");
  }
  return token;
}

SystemTime RefreshTime(const AccessToken& token, SystemTime issued,
                       const TokenRefreshPolicy& policy) {
  const SystemTime by_margin = token.expires_on - policy.margin;
  const SystemTime half_life = issued + (token.expires_on - issued) / 2;
  return std::max(by_margin, half_life);
}

TokenCredential::TokenCredential(std::unique_ptr<TokenSource> source, TokenRefreshPolicy policy,
                                 SystemClockFn now)
    : source_(std::move(source)), policy_(policy), now_(std::move(now)) {
  if (!now_) now_ = [] { return std::chrono::system_clock::now(); };
}

bool TokenCredential::Usable(SystemTime now) const {
  // A few seconds of slack: the request still has to reach the service.
  return !current_.token.empty() && now + seconds(5) < current_.expires_on;
}

bool TokenCredential::Fresh(SystemTime now) const {
  return Usable(now) && now < RefreshTime(current_, issued_, policy_);
}

int TokenCredential::fetches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fetches_;
}

Result<std::string> TokenCredential::Token() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    SystemTime now = now_();
    if (Fresh(now)) return current_.token;
    if (refreshing_) {
      if (Usable(now)) return current_.token;
      refreshed_.wait(lock, [this] { return !refreshing_; });
      now = now_();
      if (Usable(now)) return current_.token;
      if (!last_failure_.ok()) return last_failure_;
      continue;
    }
    // Refresh due. After a failure, the old token serves until the next try.
    if (now < next_try_) {
      if (Usable(now)) return current_.token;
      // No token, and the last try failed just now.
      if (!last_failure_.ok()) return last_failure_;
    }
    refreshing_ = true;
    lock.unlock();
    Result<AccessToken> fetched = source_->Fetch(policy_.fetch_deadline);
    SystemTime after = now_();
    lock.lock();
    refreshing_ = false;
    ++fetches_;
    if (!fetched.ok() && fetched.status().Is(Code::kCancelled)) {
      // This caller gave up (storage/cancel.h); the endpoint did not fail.
      refreshed_.notify_all();
      if (Usable(after)) return current_.token;
      return fetched.status();
    }
    if (fetched.ok() && after + seconds(5) < fetched->expires_on) {
      current_ = std::move(*fetched);
      issued_ = after;
      last_failure_ = Status::Ok();
      refreshed_.notify_all();
      return current_.token;
    }
    last_failure_ =
        fetched.ok()
            ? Status(Code::kAuth, "Entra ID sign-in with " + source_->Describe() +
                                      ": the token endpoint returned a token already expired")
            : Status(Code::kAuth, "Entra ID sign-in with " + source_->Describe() +
                                      " failed: " + fetched.status().ToString());
    next_try_ = after + policy_.retry_after_failure;
    refreshed_.notify_all();
    if (Usable(after)) return current_.token;
    return last_failure_;
  }
}

}  // namespace stampfs
