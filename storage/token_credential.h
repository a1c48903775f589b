// Microsoft Entra ID (OAuth 2.0) bearer tokens for the storage services.
//
// A TokenSource fetches one fresh token (one HTTP request to a token endpoint,
// or one run of the az CLI) within a deadline; a TokenCredential caches it and
// fetches the next one before it expires. Tokens and client secrets are never
// logged and never put in a Status message.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "storage/status.h"

namespace stampfs {

using SystemTime = std::chrono::system_clock::time_point;
using SystemClockFn = std::function<SystemTime()>;

struct AccessToken {
  std::string token;  // Never log.
  SystemTime expires_on;
};

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // One fresh token, or why not, within `deadline` (every request or process
  // it starts is bounded by it).
  virtual Result<AccessToken> Fetch(std::chrono::milliseconds deadline) = 0;
  // "managed identity (IMDS http://169.254.169.254/...)": no secret.
  virtual std::string Describe() const = 0;
};

struct TokenRefreshPolicy {
  // A token is replaced this long before it expires, or at half its lifetime
  // when that comes later (a token shorter than twice the margin).
  std::chrono::seconds margin{300};
  std::chrono::milliseconds fetch_deadline{30000};
  // After a failed refresh while the old token still serves, the next try
  // waits this long (bounded by the token's remaining life).
  std::chrono::milliseconds retry_after_failure{5000};
};

// Thread-safe cache over one source. One thread refreshes while the others
// go on with the current token as long as it has not expired; they wait only
// when there is no valid token.
class TokenCredential {
 public:
  TokenCredential(std::unique_ptr<TokenSource> source, TokenRefreshPolicy policy = {},
                  SystemClockFn now = {});

  // The current token, fetched or refreshed as needed. kAuth when no valid
  // token could be had (the message names the method and the reason).
  Result<std::string> Token();
  std::string Describe() const { return source_->Describe(); }
  // Tokens fetched so far (tests).
  int fetches() const;

 private:
  bool Usable(SystemTime now) const;  // REQUIRES: mu_
  bool Fresh(SystemTime now) const;   // REQUIRES: mu_

  std::unique_ptr<TokenSource> source_;
  const TokenRefreshPolicy policy_;
  SystemClockFn now_;
  mutable std::mutex mu_;
  std::condition_variable refreshed_;
  AccessToken current_;      // GUARDED_BY(mu_); empty token: none yet
  SystemTime issued_;        // GUARDED_BY(mu_): when current_ arrived
  bool refreshing_ = false;  // GUARDED_BY(mu_)
  SystemTime next_try_{};    // GUARDED_BY(mu_): after a failure
  Status last_failure_;      // GUARDED_BY(mu_)
  int fetches_ = 0;          // GUARDED_BY(mu_)
};

// When `token` (issued at `issued`) should be replaced under `policy`.
SystemTime RefreshTime(const AccessToken& token, SystemTime issued,
                       const TokenRefreshPolicy& policy);

// The JSON answers of the token endpoints: access_token with expires_on
// (epoch seconds, number or string: IMDS, App Service) or expires_in (seconds
// from `now`: Entra ID), and the az CLI's accessToken with expires_on (epoch)
// or expiresOn ("2024-01-02 03:04:05.000000", local time). kCorruption on
// anything else; the message never holds the token.
Result<AccessToken> ParseTokenResponse(const std::string& json, SystemTime now);

}  // namespace stampfs
