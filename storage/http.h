// HTTP as the Azure clients need it: a request with an exact-length body that
// can be re-read from any offset (so a retry can resend it without buffering the
// whole file), a response body that can be streamed to a sink, and a deadline.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "storage/circuit_breaker.h"
#include "storage/status.h"

namespace stampfs {

// Case-insensitive header map: names are stored lowercased.
using HttpHeaders = std::map<std::string, std::string>;

// Reads up to `len` bytes of the body starting at `offset` into `buf`;
// returns the number of bytes written (0 only at the end). Must be callable
// again from offset 0 when a request is retried.
using BodyReader = std::function<size_t(uint64_t offset, char* buf, size_t len)>;

// Receives response body bytes of a 2xx response. `offset` is the position in
// this attempt's body; a retried attempt starts again at 0. Return false to abort.
using BodySink = std::function<bool(uint64_t offset, const char* data, size_t len)>;

struct HttpBody {
  uint64_t size = 0;
  BodyReader reader;  // empty when size == 0

  static HttpBody Empty() { return {}; }
  // The string is copied into the body; fine for XML/JSON payloads.
  static HttpBody FromString(std::string s);
};

struct HttpRequest {
  std::string method;  // GET, HEAD, PUT, POST, DELETE, MERGE
  std::string url;     // fully encoded: scheme://host[:port]/path?query
  // Header names as sent. The signer reads them; Content-Length is set by the
  // transport from body.size and must not be given here.
  std::vector<std::pair<std::string, std::string>> headers;
  HttpBody body;
  BodySink sink;  // optional: stream a 2xx body here instead of into HttpResponse::body
  // A long download when > 0: no deadline on the whole attempt, which fails
  // (kTimeout) once no body byte moved for this long (checked about once a
  // second); the connect timeout still applies. Not resent once body bytes
  // reached the sink: the caller resumes from what it got.
  std::chrono::milliseconds stall_timeout{0};

  void SetHeader(const std::string& name, const std::string& value);
  // Lowercased-name lookup; empty when absent.
  std::string Header(const std::string& name) const;
};

struct HttpResponse {
  int status = 0;
  HttpHeaders headers;  // lowercased names
  std::string body;     // error bodies always land here; 2xx bodies only without a sink

  std::string Header(const std::string& lowercase_name) const;
};

// One attempt: send the request, return the response or a transport failure
// (kTransport, kTimeout). HTTP error statuses are not failures at this level.
// An attempt made while this thread's CancelToken (storage/cancel.h) is
// cancelled, or that becomes so, is aborted with kCancelled.
class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual Result<HttpResponse> Send(const HttpRequest& request,
                                    std::chrono::milliseconds timeout) = 0;
};

struct TransportOptions {
  // A PEM bundle of the CAs to trust for https instead of the system's (a
  // private CA); verification of peer and host name stays on either way.
  std::string ca_file;
};

// libcurl transport with a thread-safe pool of easy handles (connection reuse).
std::unique_ptr<HttpTransport> MakeCurlTransport(TransportOptions options = {});

struct RetryPolicy {
  int max_attempts = 5;  // first try included
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
  std::chrono::milliseconds attempt_timeout{30000};  // deadline of one attempt
  std::chrono::milliseconds total_deadline{120000};  // deadline of all attempts together
};

// True for statuses that are worth repeating: 408, 429, 500, 502, 503, 504.
bool IsRetryableHttpStatus(int status);

// Backoff before attempt `attempt` (1 = the first retry): exponential, capped,
// with full jitter drawn from `unit_random` in [0, 1).
std::chrono::milliseconds BackoffDelay(const RetryPolicy& policy, int attempt, double unit_random);

// The kind of an Azure REST request, from its method, URL and headers, as
// counted in `requests.<kind>`: "blob.get", "blob.put_block", "blob.commit",
// "table.query", "table.batch", ... Table requests are those carrying
// DataServiceVersion.
const char* RequestKind(const HttpRequest& request);

// Called before each attempt to (re)sign the request: adds x-ms-date and
// Authorization. A failure (no Entra ID token to be had) ends the request
// unsent with that status.
using RequestSigner = std::function<Status(HttpRequest&)>;

// Which outcomes of an attempt are worth sending the request again for.
enum class Resend {
  kRetryable,   // retryable statuses, transport failures and timeouts
  kOnlyUnsent,  // only when the service certainly did not run it: 429, 503, kTransport
};

// Retries over a transport. Sleep and randomness are injectable for tests.
// Every attempt is counted (storage/stats.h): requests.total, requests.<kind>,
// requests.retries, requests.failed (transport failures and timeouts),
// requests.throttled (429 and 503), bytes.up (request bodies) and bytes.down
// (response bodies); with a breaker also requests.failed_fast (not sent: the
// breaker is open) and requests.probes.
//
// Cancellation (storage/cancel.h): nothing is sent, retried or slept for once
// this thread's token is cancelled; the request fails with kCancelled.
class RetryingHttpClient {
 public:
  using SleepFn = std::function<void(std::chrono::milliseconds)>;
  using RandomFn = std::function<double()>;

  // `breaker` (may be null: none) may be shared by several clients of one
  // endpoint. The default sleep ends early when the request is cancelled.
  RetryingHttpClient(std::shared_ptr<HttpTransport> transport, RetryPolicy policy,
                     SleepFn sleep = {}, RandomFn random = {},
                     std::shared_ptr<CircuitBreaker> breaker = nullptr);

  // Sends `request` (signing each attempt), sending it again for the outcomes
  // `resend` names. Returns the final response, whatever its status, or the
  // last transport failure once attempts or the total deadline ran out.
  Result<HttpResponse> Execute(HttpRequest request, const RequestSigner& sign,
                               Resend resend = Resend::kRetryable);

  const RetryPolicy& policy() const { return policy_; }

 private:
  // OK to send; else why not (failed fast, or cancelled during the probe).
  Status PassBreaker(const HttpRequest& request, const char* kind);
  void NoteCancelled(const HttpRequest& sent, std::chrono::steady_clock::duration waited);

  std::shared_ptr<HttpTransport> transport_;
  RetryPolicy policy_;
  SleepFn sleep_;
  RandomFn random_;
  std::shared_ptr<CircuitBreaker> breaker_;
};

// Percent-encoding per RFC 3986: every byte but A-Z a-z 0-9 - . _ ~ (and '/'
// when keep_slash) becomes %XX.
std::string UrlEncode(const std::string& s, bool keep_slash = false);
std::string UrlDecode(const std::string& s);

// `url` with `query` appended, every name and value percent-encoded
// (Azurite drops raw '=' pairs when signing: AZURE-PROTOCOL.md 1.1).
using UrlQuery = std::vector<std::pair<std::string, std::string>>;
std::string WithQuery(std::string url, const UrlQuery& query);
// A storage REST request: `method` to `url` with x-ms-version `version`.
HttpRequest ServiceRequest(const std::string& method, std::string url, const char* version);

}  // namespace stampfs
