#include "storage/http.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <random>
#include <thread>

#include "storage/cancel.h"
#include "storage/stats.h"

namespace stampfs {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool EqualsIgnoreCase(const std::string& a, const std::string& b) {
  return a.size() == b.size() && Lower(a) == Lower(b);
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

double DefaultRandom() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
}

// Retry-After as delta-seconds; the HTTP-date form is ignored (-1).
std::chrono::milliseconds RetryAfter(const HttpResponse& response) {
  std::string value = response.Header("retry-after");
  if (value.empty() || value.size() > 9) return std::chrono::milliseconds(-1);
  for (char c : value) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::chrono::milliseconds(-1);
  }
  return std::chrono::seconds(std::stol(value));
}

bool IsRetryableFailure(const Status& status) {
  return status.Is(Code::kTransport) || status.Is(Code::kTimeout);
}

bool ShouldResend(const Result<HttpResponse>& outcome, Resend resend) {
  if (resend == Resend::kOnlyUnsent) {
    return outcome.ok() ? outcome->status == 429 || outcome->status == 503
                        : outcome.status().Is(Code::kTransport);
  }
  return outcome.ok() ? IsRetryableHttpStatus(outcome->status)
                      : IsRetryableFailure(outcome.status());
}

// scheme://host[:port]/ of a URL: what a breaker's probe asks for.
std::string EndpointRoot(const std::string& url) {
  size_t scheme = url.find("://");
  size_t host = scheme == std::string::npos ? 0 : scheme + 3;
  size_t end = url.find_first_of("/?#", host);
  return url.substr(0, end) + "/";
}

// Index into kRequestKinds.
constexpr const char* kRequestKinds[] = {
    "blob.get",        "blob.head",    "blob.list",         "blob.put",
    "blob.put_block",  "blob.commit",  "blob.block_list",   "blob.copy",
    "blob.copy_abort", "blob.delete",  "blob.set_metadata", "blob.container",
    "table.get",       "table.query",  "table.insert",      "table.update",
    "table.merge",     "table.delete", "table.batch",       "table.table",
    "other",
};
constexpr size_t kKindCount = sizeof(kRequestKinds) / sizeof(kRequestKinds[0]);

size_t KindIndex(const char* kind) {
  for (size_t i = 0; i < kKindCount; ++i) {
    if (std::strcmp(kRequestKinds[i], kind) == 0) return i;
  }
  return kKindCount - 1;
}

struct RequestCounters {
  Counter total{"requests.total"};
  Counter retries{"requests.retries"};
  Counter failed{"requests.failed"};
  Counter throttled{"requests.throttled"};
  Counter failed_fast{"requests.failed_fast"};
  Counter probes{"requests.probes"};
  Counter bytes_up{"bytes.up"};
  Counter bytes_down{"bytes.down"};
  std::vector<std::unique_ptr<Counter>> by_kind;
  RequestCounters() {
    for (const char* kind : kRequestKinds) {
      by_kind.push_back(std::make_unique<Counter>(std::string("requests.") + kind));
    }
  }
};
// Namespace scope, so every key is in a snapshot from the start (zeros).
RequestCounters g_requests;

bool HasQueryParam(const std::string& query, const char* name_eq_value) {
  size_t at = query.find(name_eq_value);
  while (at != std::string::npos) {
    if (at == 0 || query[at - 1] == '&' || query[at - 1] == '?') {
      size_t end = at + std::strlen(name_eq_value);
      if (end == query.size() || query[end] == '&') return true;
    }
    at = query.find(name_eq_value, at + 1);
  }
  return false;
}

const char* TableRequestKind(const std::string& method, const std::string& path) {
  if (path == "Tables" || path.rfind("Tables(", 0) == 0) return "table.table";
  if (path == "$batch") return "table.batch";
  const bool point = path.find("(PartitionKey=") != std::string::npos;
  if (method == "GET") return point ? "table.get" : "table.query";
  if (method == "POST") return "table.insert";
  if (method == "PUT") return "table.update";
  if (method == "MERGE") return "table.merge";
  if (method == "DELETE") return "table.delete";
  return "other";
}

const char* BlobRequestKind(const std::string& method, const std::string& query, bool copy_source) {
  if (HasQueryParam(query, "restype=container")) {
    return HasQueryParam(query, "comp=list") ? "blob.list" : "blob.container";
  }
  const bool blocklist = HasQueryParam(query, "comp=blocklist");
  if (method == "GET") return blocklist ? "blob.block_list" : "blob.get";
  if (method == "HEAD") return "blob.head";
  if (method == "DELETE") return "blob.delete";
  if (method != "PUT") return "other";
  if (HasQueryParam(query, "comp=block")) return "blob.put_block";
  if (blocklist) return "blob.commit";
  if (HasQueryParam(query, "comp=copy")) return "blob.copy_abort";
  if (HasQueryParam(query, "comp=metadata")) return "blob.set_metadata";
  return copy_source ? "blob.copy" : "blob.put";
}

// The path after scheme://host[:port]/ and, for path-style (emulator) URLs,
// nothing else: the table resource is its last segment.
std::string LastPathSegment(const std::string& url_without_query) {
  size_t scheme = url_without_query.find("://");
  size_t path = url_without_query.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (path == std::string::npos) return {};
  size_t last = url_without_query.rfind('/');
  return url_without_query.substr(std::max(last, path) + 1);
}

}  // namespace

HttpBody HttpBody::FromString(std::string s) {
  HttpBody body;
  body.size = s.size();
  if (s.empty()) return body;
  auto data = std::make_shared<const std::string>(std::move(s));
  body.reader = [data](uint64_t offset, char* buf, size_t len) -> size_t {
    if (offset >= data->size()) return 0;
    size_t n = std::min<uint64_t>(len, data->size() - offset);
    std::memcpy(buf, data->data() + offset, n);
    return n;
  };
  return body;
}

void HttpRequest::SetHeader(const std::string& name, const std::string& value) {
  for (auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) {
      v = value;
      return;
    }
  }
  headers.emplace_back(name, value);
}

std::string HttpRequest::Header(const std::string& name) const {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) return v;
  }
  return {};
}

std::string HttpResponse::Header(const std::string& lowercase_name) const {
  auto it = headers.find(Lower(lowercase_name));
  return it == headers.end() ? std::string() : it->second;
}

const char* RequestKind(const HttpRequest& request) {
  size_t q = request.url.find('?');
  std::string base = request.url.substr(0, q);
  std::string query = q == std::string::npos ? std::string() : request.url.substr(q + 1);
  if (!request.Header("DataServiceVersion").empty()) {
    return TableRequestKind(request.method, LastPathSegment(base));
  }
  return BlobRequestKind(request.method, query, !request.Header("x-ms-copy-source").empty());
}

bool IsRetryableHttpStatus(int status) {
  switch (status) {
    case 408:
    case 429:
    case 500:
    case 502:
    case 503:
    case 504:
      return true;
    default:
      return false;
  }
}

std::chrono::milliseconds BackoffDelay(const RetryPolicy& policy, int attempt, double unit_random) {
  using std::chrono::milliseconds;
  const milliseconds cap = std::max(policy.max_backoff, milliseconds(0));
  milliseconds ceiling = std::min(std::max(policy.initial_backoff, milliseconds(0)), cap);
  // Doubling stops at the cap, so large attempt numbers cannot overflow.
  for (int i = 1; i < attempt && ceiling < cap; ++i) ceiling = std::min(ceiling * 2, cap);
  double r = std::clamp(unit_random, 0.0, 1.0);
  auto delay = milliseconds(static_cast<int64_t>(r * static_cast<double>(ceiling.count())));
  return std::min(delay, ceiling);
}

RetryingHttpClient::RetryingHttpClient(std::shared_ptr<HttpTransport> transport, RetryPolicy policy,
                                       SleepFn sleep, RandomFn random,
                                       std::shared_ptr<CircuitBreaker> breaker)
    : transport_(std::move(transport)),
      policy_(policy),
      sleep_(std::move(sleep)),
      random_(std::move(random)),
      breaker_(std::move(breaker)) {
  if (!sleep_) sleep_ = [](std::chrono::milliseconds d) { SleepUnlessCancelled(d); };
  if (!random_) random_ = DefaultRandom;
  policy_.max_attempts = std::max(policy_.max_attempts, 1);
}

Status RetryingHttpClient::PassBreaker(const HttpRequest& request, const char* kind) {
  const std::string what = request.method + " " + kind;
  switch (breaker_->Enter()) {
    case CircuitBreaker::Gate::kPass:
      return Status::Ok();
    case CircuitBreaker::Gate::kFailFast:
      g_requests.failed_fast.Add();
      return breaker_->FailFast(what);
    case CircuitBreaker::Gate::kProbe:
      break;
  }
  HttpRequest probe;
  probe.method = "GET";
  probe.url = EndpointRoot(request.url);
  g_requests.probes.Add();
  std::chrono::milliseconds wait = breaker_->policy().probe_timeout;
  if (ShortProbe::Current()) wait = std::min(wait, ShortProbe::kShortProbe);
  Result<HttpResponse> answer = transport_->Send(probe, wait);
  breaker_->Probed(answer.ok());
  if (answer.ok()) return Status::Ok();
  if (answer.status().Is(Code::kCancelled)) return answer.status();
  g_requests.failed_fast.Add();
  return breaker_->FailFast(what);
}

// A cancelled request with little to send and no answer for as long as a
// probe waits tells as much as a timeout (storage/circuit_breaker.h).
void RetryingHttpClient::NoteCancelled(const HttpRequest& sent,
                                       std::chrono::steady_clock::duration waited) {
  constexpr size_t kSmallBody = 64 * 1024;
  if (sent.body.size > kSmallBody || waited < breaker_->policy().probe_timeout) return;
  breaker_->Unreachable(Status(
      Code::kTimeout,
      sent.method + " " + RequestKind(sent) + ": no answer for " +
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()) +
          " ms before the caller gave up"));
}

Result<HttpResponse> RetryingHttpClient::Execute(HttpRequest request, const RequestSigner& sign,
                                                 Resend resend) {
  using std::chrono::milliseconds;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + policy_.total_deadline;
  auto remaining = [&] {
    return std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
  };

  // Counted before signing, so a SAS query never affects the kind.
  const char* kind = RequestKind(request);
  if (CurrentlyCancelled()) return Cancelled(request.method + " " + kind + ": not sent");
  if (breaker_) STAMPFS_RETURN_IF_ERROR(PassBreaker(request, kind));
  Counter& kind_counter = *g_requests.by_kind[KindIndex(kind)];
  bool delivered = false;  // body bytes reached the sink (any attempt)
  if (request.sink) {
    request.sink = [inner = std::move(request.sink), &delivered](uint64_t at, const char* data,
                                                                 size_t len) {
      delivered = true;
      g_requests.bytes_down.Add(len);
      return inner(at, data, len);
    };
  }

  Result<HttpResponse> last =
      Status(Code::kTimeout, request.method + " request: total deadline passed before sending");
  bool sent = false;
  for (int attempt = 1; attempt <= policy_.max_attempts; ++attempt) {
    milliseconds left = remaining();
    if (left <= milliseconds(0)) break;
    if (CurrentlyCancelled()) return Cancelled(request.method + " " + kind);
    // The breaker opened while this request waited to retry: the service is
    // away, another request found out already.
    if (attempt > 1 && breaker_ && breaker_->open()) break;
    // A fresh copy per attempt: signing adds headers and, for SAS, query text.
    HttpRequest copy = request;
    if (sign) {
      Status signed_ok = sign(copy);
      if (!signed_ok.ok()) return signed_ok;
    }
    g_requests.total.Add();
    kind_counter.Add();
    g_requests.bytes_up.Add(copy.body.size);
    if (attempt > 1) g_requests.retries.Add();
    sent = true;
    const auto sent_at = breaker_ ? breaker_->now() : CircuitBreaker::Clock::time_point{};
    last = transport_->Send(copy, std::min(policy_.attempt_timeout, left));

    milliseconds retry_after(-1);
    if (last.ok()) {
      if (breaker_) breaker_->Answered();
      g_requests.bytes_down.Add(last->body.size());
      if (last->status == 429 || last->status == 503) g_requests.throttled.Add();
      if (!ShouldResend(last, resend)) return last;
      retry_after = RetryAfter(*last);
    } else {
      if (last.status().Is(Code::kCancelled)) {
        if (breaker_ && !delivered) NoteCancelled(copy, breaker_->now() - sent_at);
        return last;
      }
      g_requests.failed.Add();
      // A stream that got bytes is resumed by its caller, not restarted; the
      // service answered, so the breaker stays closed.
      if (delivered && request.stall_timeout.count() > 0) {
        if (breaker_) breaker_->Answered();
        return last;
      }
      if (!ShouldResend(last, resend)) break;
    }
    if (attempt == policy_.max_attempts) break;

    milliseconds delay = retry_after >= milliseconds(0) ? std::min(retry_after, policy_.max_backoff)
                                                        : BackoffDelay(policy_, attempt, random_());
    // Sleeping past the deadline would only end in a timeout: stop now.
    if (delay >= remaining()) break;
    if (delay > milliseconds(0)) sleep_(delay);
  }
  if (breaker_ && sent && !last.ok() && IsRetryableFailure(last.status())) {
    breaker_->Unreachable(last.status());
  }
  return last;
}

std::string UrlEncode(const std::string& s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

std::string UrlDecode(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int hi = HexValue(s[i + 1]);
      int lo = HexValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::string WithQuery(std::string url, const UrlQuery& query) {
  char separator = '?';
  for (const auto& [name, value] : query) {
    url += separator + UrlEncode(name) + "=" + UrlEncode(value);
    separator = '&';
  }
  return url;
}

HttpRequest ServiceRequest(const std::string& method, std::string url, const char* version) {
  HttpRequest request;
  request.method = method;
  request.url = std::move(url);
  request.SetHeader("x-ms-version", version);
  return request;
}

}  // namespace stampfs
