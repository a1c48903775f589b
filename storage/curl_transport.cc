// libcurl transport. Invariants: TLS peer and host verification stay on; the
// request goes out with exactly the signed headers (curl's Expect, Accept and
// Content-Type defaults suppressed) and an exact Content-Length, never chunked.
// A request sent with a CancelToken current (storage/cancel.h) is aborted
// from curl's progress callback once the token is cancelled: curl calls it
// at least once a second, also while no byte moves. A stream
// (HttpRequest::stall_timeout) is aborted there too once no byte moved for
// that long.
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <mutex>
#include <vector>

#include "storage/cancel.h"
#include "storage/http.h"

namespace stampfs {
namespace {

// Azurite (Node) drops idle keep-alive sockets after 5 s; reuse younger ones only.
constexpr long kMaxConnectionAgeSeconds = 3;
constexpr long kMaxConnectTimeoutMs = 10000;
constexpr size_t kMaxIdleHandles = 32;

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// The URL without query or fragment: a SAS signature must never reach a message.
std::string UrlForMessage(const std::string& url) { return url.substr(0, url.find_first_of("?#")); }

bool SendsBody(const HttpRequest& request) {
  const std::string& m = request.method;
  return request.body.size > 0 || m == "PUT" || m == "POST" || m == "MERGE" || m == "PATCH";
}

// Per-attempt state shared with the callbacks.
struct Exchange {
  CURL* curl = nullptr;
  const HttpRequest* request = nullptr;
  HttpResponse response;
  uint64_t upload_offset = 0;
  uint64_t sink_offset = 0;
  bool reader_short = false;
  bool sink_aborted = false;
  const CancelToken* cancel = nullptr;  // the sending thread's, if any
  bool cancelled = false;
  // A stream (request->stall_timeout): when body bytes last moved.
  curl_off_t received = 0;
  std::chrono::steady_clock::time_point moved = std::chrono::steady_clock::now();
  bool stalled = false;
};

size_t ReadCallback(char* buf, size_t size, size_t nitems, void* userdata) {
  auto* ex = static_cast<Exchange*>(userdata);
  const HttpBody& body = ex->request->body;
  uint64_t left = body.size - std::min(body.size, ex->upload_offset);
  size_t want = static_cast<size_t>(std::min<uint64_t>(size * nitems, left));
  if (want == 0) return 0;
  size_t n = body.reader ? body.reader(ex->upload_offset, buf, want) : 0;
  if (n == 0 || n > want) {
    ex->reader_short = true;  // the body ended before its declared size
    return CURL_READFUNC_ABORT;
  }
  ex->upload_offset += n;
  return n;
}

// curl rewinds the upload when it resends on a fresh connection.
int SeekCallback(void* userdata, curl_off_t offset, int origin) {
  auto* ex = static_cast<Exchange*>(userdata);
  if (origin != SEEK_SET || offset < 0 || static_cast<uint64_t>(offset) > ex->request->body.size) {
    return CURL_SEEKFUNC_FAIL;
  }
  ex->upload_offset = static_cast<uint64_t>(offset);
  return CURL_SEEKFUNC_OK;
}

size_t HeaderCallback(char* data, size_t size, size_t nitems, void* userdata) {
  auto* ex = static_cast<Exchange*>(userdata);
  std::string line(data, size * nitems);
  if (line.rfind("HTTP/", 0) == 0) {
    ex->response.headers.clear();  // a new status line (after 100 Continue)
    return line.size();
  }
  size_t colon = line.find(':');
  if (colon == std::string::npos) return line.size();
  std::string name = Lower(Trim(line.substr(0, colon)));
  std::string value = Trim(line.substr(colon + 1));
  auto [it, inserted] = ex->response.headers.emplace(name, value);
  if (!inserted) it->second += ", " + value;
  return line.size();
}

size_t WriteCallback(char* data, size_t size, size_t nmemb, void* userdata) {
  auto* ex = static_cast<Exchange*>(userdata);
  size_t len = size * nmemb;
  long status = 0;
  curl_easy_getinfo(ex->curl, CURLINFO_RESPONSE_CODE, &status);
  const BodySink& sink = ex->request->sink;
  if (sink && status >= 200 && status < 300) {
    if (!sink(ex->sink_offset, data, len)) {
      ex->sink_aborted = true;
      return 0;  // makes curl stop with CURLE_WRITE_ERROR
    }
    ex->sink_offset += len;
    return len;
  }
  ex->response.body.append(data, len);
  return len;
}

// Returning 1 makes curl stop with CURLE_ABORTED_BY_CALLBACK.
int ProgressCallback(void* userdata, curl_off_t, curl_off_t dlnow, curl_off_t, curl_off_t) {
  auto* ex = static_cast<Exchange*>(userdata);
  if (ex->cancel && ex->cancel->cancelled()) {
    ex->cancelled = true;
    return 1;
  }
  const auto stall = ex->request->stall_timeout;
  if (stall.count() <= 0) return 0;
  const auto now = std::chrono::steady_clock::now();
  if (dlnow != ex->received) {
    ex->received = dlnow;
    ex->moved = now;
  } else if (now - ex->moved > stall) {
    ex->stalled = true;
    return 1;
  }
  return 0;
}

curl_slist* BuildHeaders(const HttpRequest& request) {
  curl_slist* list = nullptr;
  auto add = [&list](const std::string& line) {
    curl_slist* next = curl_slist_append(list, line.c_str());
    if (next) list = next;
  };
  for (const auto& [name, value] : request.headers) {
    // "Name;" is curl's way of sending a header with an empty value.
    add(value.empty() ? name + ";" : name + ": " + value);
  }
  // A header name followed by ':' alone removes a header curl would add itself.
  add("Expect:");
  if (request.Header("content-type").empty()) add("Content-Type:");
  if (request.Header("accept").empty()) add("Accept:");
  return list;
}

void SetMethod(CURL* curl, const HttpRequest& request, Exchange* ex) {
  if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (SendsBody(request)) {
    // UPLOAD with an exact INFILESIZE sends Content-Length (0 included), not chunks.
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body.size));
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, ReadCallback);
    curl_easy_setopt(curl, CURLOPT_READDATA, ex);
    curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, SeekCallback);
    curl_easy_setopt(curl, CURLOPT_SEEKDATA, ex);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  } else if (request.method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
}

void SetOptions(CURL* curl, const HttpRequest& request, std::chrono::milliseconds timeout,
                const TransportOptions& options, Exchange* ex, char* error_buffer) {
  long timeout_ms = std::max<long>(1, static_cast<long>(timeout.count()));
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  // A stream's progress is bounded instead (ProgressCallback).
  if (request.stall_timeout.count() <= 0) curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, kMaxConnectTimeoutMs));
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!options.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options.ca_file.c_str());
  curl_easy_setopt(curl, CURLOPT_MAXAGE_CONN, kMaxConnectionAgeSeconds);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  // The signed path must be the one on the wire: no dot-segment squashing.
  curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, HeaderCallback);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, ex);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteCallback);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, ex);
  if (ex->cancel || request.stall_timeout.count() > 0) {
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, ProgressCallback);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, ex);
  }
  SetMethod(curl, request, ex);
}

Status FailureStatus(CURLcode rc, const Exchange& ex, const char* error_buffer,
                     std::chrono::milliseconds timeout) {
  const HttpRequest& request = *ex.request;
  const std::string target = request.method + " " + UrlForMessage(request.url);
  if (ex.cancelled) return Cancelled(target);
  if (ex.sink_aborted) return Status(Code::kInternal, target + ": response body sink aborted");
  if (ex.reader_short) {
    return Status(Code::kInternal, target + ": request body ended before its declared size");
  }
  if (ex.stalled) {
    return Status(Code::kTimeout, target + ": no byte for " +
                                      std::to_string(request.stall_timeout.count()) + " ms");
  }
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    return Status(Code::kTimeout, target + ": no complete response within " +
                                      std::to_string(timeout.count()) + " ms");
  }
  std::string detail = error_buffer[0] ? error_buffer : curl_easy_strerror(rc);
  // Drop curl's text if it quotes the request URL with its query.
  size_t query = request.url.find('?');
  if (query != std::string::npos && detail.find(request.url.substr(query)) != std::string::npos) {
    detail = curl_easy_strerror(rc);
  }
  // Includes GOT_NOTHING / SEND_ERROR / RECV_ERROR from a reused dead connection.
  return Status(Code::kTransport, target + ": " + detail);
}

class CurlTransport : public HttpTransport {
 public:
  explicit CurlTransport(TransportOptions options) : options_(std::move(options)) {
    GlobalInitOnce();
  }
  ~CurlTransport() override {
    for (CURL* curl : idle_) curl_easy_cleanup(curl);
  }

  Result<HttpResponse> Send(const HttpRequest& request,
                            std::chrono::milliseconds timeout) override {
    if (CurrentlyCancelled()) {
      return Cancelled(request.method + " " + UrlForMessage(request.url) + ": not sent");
    }
    CURL* curl = Acquire();
    if (!curl) return Status(Code::kInternal, "curl_easy_init failed");
    Exchange ex;
    ex.curl = curl;
    ex.request = &request;
    ex.cancel = CurrentCancelToken();
    char error_buffer[CURL_ERROR_SIZE] = {0};
    curl_slist* headers = BuildHeaders(request);
    SetOptions(curl, request, timeout, options_, &ex, error_buffer);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    // Detach per-call pointers before the handle goes back to the pool.
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
    curl_slist_free_all(headers);
    Release(curl);
    if (rc != CURLE_OK) return FailureStatus(rc, ex, error_buffer, timeout);
    ex.response.status = static_cast<int>(status);
    return std::move(ex.response);
  }

 private:
  // A pooled handle keeps its connection cache across curl_easy_reset.
  CURL* Acquire() {
    CURL* curl = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        curl = idle_.back();
        idle_.pop_back();
      }
    }
    if (!curl) return curl_easy_init();
    curl_easy_reset(curl);
    return curl;
  }

  void Release(CURL* curl) {
    std::lock_guard<std::mutex> lock(mu_);
    if (idle_.size() < kMaxIdleHandles) {
      idle_.push_back(curl);
    } else {
      curl_easy_cleanup(curl);
    }
  }

  const TransportOptions options_;
  std::mutex mu_;
  std::vector<CURL*> idle_;
};

}  // namespace

std::unique_ptr<HttpTransport> MakeCurlTransport(TransportOptions options) {
  return std::make_unique<CurlTransport>(std::move(options));
}

}  // namespace stampfs
