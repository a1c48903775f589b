#include "storage/http.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <thread>
#include <vector>

namespace stampfs {
namespace {

using std::chrono::milliseconds;

HttpResponse Response(int status, HttpHeaders headers = {}) {
  HttpResponse r;
  r.status = status;
  r.headers = std::move(headers);
  return r;
}

// Replays scripted outcomes; records what each attempt sent and its timeout.
class ScriptedTransport : public HttpTransport {
 public:
  explicit ScriptedTransport(std::vector<Result<HttpResponse>> script, milliseconds latency = {})
      : script_(script.begin(), script.end()), latency_(latency) {}

  Result<HttpResponse> Send(const HttpRequest& request, milliseconds timeout) override {
    sent.push_back(request);
    timeouts.push_back(timeout);
    if (latency_ > milliseconds(0)) std::this_thread::sleep_for(latency_);
    if (script_.empty()) return Response(200);
    Result<HttpResponse> next = script_.front();
    if (script_.size() > 1) script_.pop_front();  // the last outcome repeats
    return next;
  }

  std::vector<HttpRequest> sent;
  std::vector<milliseconds> timeouts;

 private:
  std::deque<Result<HttpResponse>> script_;
  milliseconds latency_;
};

struct Harness {
  explicit Harness(std::vector<Result<HttpResponse>> script, RetryPolicy policy = {},
                   milliseconds latency = {})
      : transport(std::make_shared<ScriptedTransport>(std::move(script), latency)),
        client(
            transport, policy, [this](milliseconds d) { sleeps.push_back(d); },
            [] { return 0.5; }) {}

  Result<HttpResponse> Run() {
    HttpRequest r;
    r.method = "GET";
    r.url = "http://h/c/b?comp=list";
    return client.Execute(r, [this](HttpRequest& req) {
      ++signs;
      req.SetHeader("Authorization", "sig" + std::to_string(signs));
      req.url += "&sas=1";
      return Status::Ok();
    });
  }

  std::shared_ptr<ScriptedTransport> transport;
  std::vector<milliseconds> sleeps;
  RetryingHttpClient client;
  int signs = 0;
};

TEST(HttpBody, FromStringReadsFromAnyOffset) {
  HttpBody body = HttpBody::FromString("hello world");
  ASSERT_EQ(body.size, 11u);
  char buf[8];
  EXPECT_EQ(body.reader(0, buf, 5), 5u);
  EXPECT_EQ(std::string(buf, 5), "hello");
  EXPECT_EQ(body.reader(6, buf, 8), 5u);
  EXPECT_EQ(std::string(buf, 5), "world");
  EXPECT_EQ(body.reader(11, buf, 8), 0u);
  EXPECT_EQ(body.reader(0, buf, 3), 3u);  // re-readable for a retry
  EXPECT_EQ(std::string(buf, 3), "hel");
  EXPECT_EQ(HttpBody::FromString("").size, 0u);
  EXPECT_FALSE(HttpBody::FromString("").reader);
}

TEST(HttpRequest, SetHeaderReplacesCaseInsensitively) {
  HttpRequest r;
  r.SetHeader("Content-Type", "text/plain");
  r.SetHeader("x-ms-version", "2021-08-06");
  r.SetHeader("content-type", "application/json");
  ASSERT_EQ(r.headers.size(), 2u);
  EXPECT_EQ(r.headers[0].first, "Content-Type");  // first spelling kept
  EXPECT_EQ(r.Header("CONTENT-TYPE"), "application/json");
  EXPECT_EQ(r.Header("x-ms-missing"), "");
}

TEST(HttpResponse, HeaderLooksUpLowercasedNames) {
  HttpResponse r = Response(200, {{"x-ms-continuation-nextpartitionkey", "1!8!cDE-"}});
  EXPECT_EQ(r.Header("x-ms-continuation-nextpartitionkey"), "1!8!cDE-");
  EXPECT_EQ(r.Header("x-ms-continuation-NextPartitionKey"), "1!8!cDE-");
  EXPECT_EQ(r.Header("etag"), "");
}

TEST(RetryPolicy, RetryableStatuses) {
  for (int s : {408, 429, 500, 502, 503, 504}) EXPECT_TRUE(IsRetryableHttpStatus(s)) << s;
  for (int s : {200, 201, 304, 400, 401, 403, 404, 409, 412, 416, 501, 505}) {
    EXPECT_FALSE(IsRetryableHttpStatus(s)) << s;
  }
}

TEST(RetryPolicy, BackoffIsExponentialCappedAndJittered) {
  RetryPolicy p;
  p.initial_backoff = milliseconds(100);
  p.max_backoff = milliseconds(1000);
  EXPECT_EQ(BackoffDelay(p, 1, 0.0), milliseconds(0));
  EXPECT_EQ(BackoffDelay(p, 1, 0.5), milliseconds(50));
  EXPECT_EQ(BackoffDelay(p, 2, 0.5), milliseconds(100));
  EXPECT_EQ(BackoffDelay(p, 3, 0.5), milliseconds(200));
  EXPECT_EQ(BackoffDelay(p, 4, 0.999999), milliseconds(799));
  EXPECT_EQ(BackoffDelay(p, 5, 0.5), milliseconds(500));     // capped at 1000
  EXPECT_EQ(BackoffDelay(p, 1000, 0.5), milliseconds(500));  // no overflow
  for (int attempt = 1; attempt < 70; ++attempt) {
    for (double r : {0.0, 0.3, 0.9999}) {
      milliseconds d = BackoffDelay(p, attempt, r);
      EXPECT_GE(d, milliseconds(0));
      EXPECT_LE(d, p.max_backoff);
    }
  }
}

TEST(RetryingHttpClient, Retries503ThenSucceeds) {
  Harness h({Response(503), Response(503), Response(200)});
  auto r = h.Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(h.transport->sent.size(), 3u);
  // Full jitter with random 0.5 over 100 ms doubling.
  EXPECT_EQ(h.sleeps, (std::vector<milliseconds>{milliseconds(50), milliseconds(100)}));
}

TEST(RetryingHttpClient, GivesUpAfterMaxAttemptsWithTheLastResponse) {
  RetryPolicy p;
  p.max_attempts = 3;
  Harness h({Response(500)}, p);
  auto r = h.Run();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);  // the caller turns it into a Status
  EXPECT_EQ(h.transport->sent.size(), 3u);
  EXPECT_EQ(h.sleeps.size(), 2u);
}

TEST(RetryingHttpClient, DoesNotRetryFinalStatuses) {
  for (int status : {404, 412, 409, 403, 400}) {
    Harness h({Response(status), Response(200)});
    auto r = h.Run();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, status);
    EXPECT_EQ(h.transport->sent.size(), 1u) << status;
    EXPECT_TRUE(h.sleeps.empty());
  }
}

TEST(RetryingHttpClient, RetriesTransportErrorsAndTimeouts) {
  Harness h({Status(Code::kTransport, "connection refused"), Status(Code::kTimeout, "slow"),
             Response(201)});
  auto r = h.Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(h.transport->sent.size(), 3u);
}

TEST(RetryingHttpClient, ReturnsLastTransportFailureWhenAttemptsRunOut) {
  RetryPolicy p;
  p.max_attempts = 2;
  Harness h({Status(Code::kTransport, "reset"), Status(Code::kTimeout, "too slow")}, p);
  auto r = h.Run();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kTimeout);
  EXPECT_EQ(r.status().message(), "too slow");
}

TEST(RetryingHttpClient, DoesNotRetryOtherFailures) {
  Harness h({Status(Code::kInternal, "sink aborted"), Response(200)});
  auto r = h.Run();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInternal);
  EXPECT_EQ(h.transport->sent.size(), 1u);
}

TEST(RetryingHttpClient, SignsAFreshCopyForEachAttempt) {
  Harness h({Response(503), Response(502), Response(200)});
  ASSERT_TRUE(h.Run().ok());
  ASSERT_EQ(h.transport->sent.size(), 3u);
  EXPECT_EQ(h.signs, 3);
  for (size_t i = 0; i < 3; ++i) {
    const HttpRequest& sent = h.transport->sent[i];
    EXPECT_EQ(sent.url, "http://h/c/b?comp=list&sas=1");  // the token once, not piled up
    EXPECT_EQ(sent.Header("authorization"), "sig" + std::to_string(i + 1));
    EXPECT_EQ(sent.headers.size(), 1u);
  }
}

TEST(RetryingHttpClient, HonoursRetryAfterButCapsIt) {
  RetryPolicy p;
  p.max_backoff = milliseconds(5000);
  Harness h({Response(503, {{"retry-after", "2"}}), Response(429, {{"retry-after", "600"}}),
             Response(503, {{"retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"}}), Response(200)},
            p);
  ASSERT_TRUE(h.Run().ok());
  EXPECT_EQ(h.sleeps,
            (std::vector<milliseconds>{milliseconds(2000), milliseconds(5000), milliseconds(200)}));
}

TEST(RetryingHttpClient, AttemptTimeoutIsBoundedByTheTotalDeadline) {
  RetryPolicy p;
  p.attempt_timeout = milliseconds(30000);
  p.total_deadline = milliseconds(120000);
  Harness h({Response(200)}, p);
  ASSERT_TRUE(h.Run().ok());
  EXPECT_EQ(h.transport->timeouts[0], milliseconds(30000));

  p.total_deadline = milliseconds(800);
  Harness short_deadline({Response(200)}, p);
  ASSERT_TRUE(short_deadline.Run().ok());
  EXPECT_LE(short_deadline.transport->timeouts[0], milliseconds(800));
  EXPECT_GT(short_deadline.transport->timeouts[0], milliseconds(0));
}

TEST(RetryingHttpClient, StopsWhenTheBackoffWouldPassTheDeadline) {
  RetryPolicy p;
  p.initial_backoff = milliseconds(4000);
  p.max_backoff = milliseconds(4000);
  p.total_deadline = milliseconds(1000);
  Harness h({Response(503)}, p);  // backoff at random 0.5 is 2000 ms > 1000 ms left
  auto r = h.Run();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(h.transport->sent.size(), 1u);
  EXPECT_TRUE(h.sleeps.empty());
}

TEST(RetryingHttpClient, RespectsTheTotalDeadlineInRealTime) {
  RetryPolicy p;
  p.max_attempts = 100;
  p.initial_backoff = milliseconds(1);
  p.max_backoff = milliseconds(1);
  p.total_deadline = milliseconds(200);
  Harness h({Status(Code::kTransport, "refused")}, p, milliseconds(40));
  auto start = std::chrono::steady_clock::now();
  auto r = h.Run();
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kTransport);
  EXPECT_GE(h.transport->sent.size(), 2u);
  EXPECT_LE(h.transport->sent.size(), 6u);  // about 200 / 40 attempts, not 100
  EXPECT_LT(elapsed, milliseconds(1000));
  for (size_t i = 1; i < h.transport->timeouts.size(); ++i) {
    EXPECT_LT(h.transport->timeouts[i], h.transport->timeouts[i - 1]);  // shrinking budget
  }
}

// Each attempt hands `bytes` of body to the sink, then the connection drops.
class DroppingTransport : public HttpTransport {
 public:
  explicit DroppingTransport(size_t bytes) : bytes_(bytes) {}
  Result<HttpResponse> Send(const HttpRequest& request, milliseconds) override {
    ++attempts;
    const std::string body(bytes_, 'x');
    if (!body.empty() && request.sink) request.sink(0, body.data(), body.size());
    return Status(Code::kTransport, "connection reset");
  }
  int attempts = 0;

 private:
  size_t bytes_;
};

int AttemptsOfDroppedDownload(size_t bytes, milliseconds stall) {
  RetryPolicy p;
  p.max_attempts = 3;
  auto transport = std::make_shared<DroppingTransport>(bytes);
  RetryingHttpClient client(
      transport, p, [](milliseconds) {}, [] { return 0.5; });
  HttpRequest r;
  r.method = "GET";
  r.url = "http://h/c/b";
  r.stall_timeout = stall;
  r.sink = [](uint64_t, const char*, size_t) { return true; };
  EXPECT_EQ(client.Execute(r, {}).status().code(), Code::kTransport);
  return transport->attempts;
}

TEST(RetryingHttpClient, AStreamThatGotBytesIsNotResentButOneThatGotNoneIs) {
  EXPECT_EQ(AttemptsOfDroppedDownload(100, milliseconds(5000)), 1);
  EXPECT_EQ(AttemptsOfDroppedDownload(0, milliseconds(5000)), 3);
  EXPECT_EQ(AttemptsOfDroppedDownload(100, milliseconds(0)), 3) << "a plain read restarts";
}

TEST(UrlEncoding, EncodesAllButUnreserved) {
  EXPECT_EQ(UrlEncode("AZaz09-._~"), "AZaz09-._~");
  EXPECT_EQ(UrlEncode("dir/sp ace+plus'q(1).txt"), "dir%2Fsp%20ace%2Bplus%27q%281%29.txt");
  EXPECT_EQ(UrlEncode("dir/sp ace", true), "dir/sp%20ace");
  EXPECT_EQ(UrlEncode("YWJj=="), "YWJj%3D%3D");
  EXPECT_EQ(UrlEncode("\xc3\xa9"), "%C3%A9");
  EXPECT_EQ(UrlEncode(std::string("a\0b", 3)), "a%00b");
}

TEST(UrlEncoding, DecodeInvertsEncodeAndKeepsMalformedEscapes) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  EXPECT_EQ(UrlDecode(UrlEncode(all)), all);
  EXPECT_EQ(UrlDecode(UrlEncode(all, true)), all);
  EXPECT_EQ(UrlDecode("dir%2fa%2Bb"), "dir/a+b");
  EXPECT_EQ(UrlDecode("a+b"), "a+b");
  EXPECT_EQ(UrlDecode("100%"), "100%");
  EXPECT_EQ(UrlDecode("%zz%4"), "%zz%4");
}

}  // namespace
}  // namespace stampfs
