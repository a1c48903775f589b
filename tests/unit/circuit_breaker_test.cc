// The fail-fast circuit breaker (storage/circuit_breaker.h) on its own with
// a fake clock, and in RetryingHttpClient over a scripted transport: what
// opens it, what a request does while it is open, how a probe closes it.
#include "storage/circuit_breaker.h"

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "storage/cancel.h"
#include "storage/http.h"

namespace stampfs {
namespace {

using std::chrono::milliseconds;
using Gate = CircuitBreaker::Gate;

struct FakeClock {
  CircuitBreaker::Clock::time_point now{std::chrono::hours(1)};
  CircuitBreaker::NowFn Fn() {
    return [this] { return now; };
  }
};

BreakerPolicy Policy() {
  BreakerPolicy p;
  p.enabled = true;
  p.probe_interval = milliseconds(250);
  p.probe_timeout = milliseconds(2000);
  return p;
}

Status Refused() { return Status(Code::kTransport, "connection refused"); }

TEST(CircuitBreaker, OpensOnUnreachableAndFailsFastUntilAProbeIsDue) {
  FakeClock clock;
  CircuitBreaker b(Policy(), clock.Fn());
  EXPECT_EQ(b.Enter(), Gate::kPass);
  b.Unreachable(Refused());
  EXPECT_TRUE(b.open());
  EXPECT_EQ(b.Enter(), Gate::kFailFast);
  clock.now += milliseconds(249);
  EXPECT_EQ(b.Enter(), Gate::kFailFast);
  clock.now += milliseconds(1);
  EXPECT_EQ(b.Enter(), Gate::kProbe);
  EXPECT_EQ(b.Enter(), Gate::kFailFast) << "one probe at a time";
  b.Probed(false);
  EXPECT_TRUE(b.open());
  EXPECT_EQ(b.Enter(), Gate::kFailFast) << "the next probe waits its interval";
  clock.now += milliseconds(250);
  EXPECT_EQ(b.Enter(), Gate::kProbe);
  b.Probed(true);
  EXPECT_FALSE(b.open());
  EXPECT_EQ(b.Enter(), Gate::kPass);
}

TEST(CircuitBreaker, AnyAnswerClosesIt) {
  FakeClock clock;
  CircuitBreaker b(Policy(), clock.Fn());
  b.Unreachable(Refused());
  b.Answered();  // a request sent before it opened got an answer
  EXPECT_FALSE(b.open());
  EXPECT_EQ(b.Enter(), Gate::kPass);
}

TEST(CircuitBreaker, FailFastIsATransportFailureNamingTheLastOne) {
  FakeClock clock;
  CircuitBreaker b(Policy(), clock.Fn());
  b.Unreachable(Status(Code::kTimeout, "no complete response within 20000 ms"));
  clock.now += milliseconds(1500);
  Status s = b.FailFast("GET table.get");
  EXPECT_EQ(s.code(), Code::kTransport);
  EXPECT_NE(s.message().find("GET table.get: not sent"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("1.5 s"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("no complete response within 20000 ms"), std::string::npos);
}

TEST(CircuitBreaker, MadeOnlyWhenEnabled) {
  EXPECT_EQ(MakeBreaker(BreakerPolicy{}), nullptr);
  EXPECT_NE(MakeBreaker(Policy()), nullptr);
}

// Each request is answered by the next scripted outcome (the last repeats).
class ScriptTransport : public HttpTransport {
 public:
  Result<HttpResponse> Send(const HttpRequest& request, milliseconds timeout) override {
    sent.push_back(request.method + " " + request.url);
    timeouts.push_back(timeout);
    if (on_send) on_send();
    Result<HttpResponse> next = script.front();
    if (script.size() > 1) script.pop_front();
    return next;
  }
  std::deque<Result<HttpResponse>> script;
  std::vector<std::string> sent;
  std::vector<milliseconds> timeouts;
  std::function<void()> on_send;
};

HttpResponse Answer(int status) {
  HttpResponse r;
  r.status = status;
  return r;
}

struct Client {
  explicit Client(std::vector<Result<HttpResponse>> script)
      : transport(std::make_shared<ScriptTransport>()),
        breaker(std::make_shared<CircuitBreaker>(Policy(), clock.Fn())),
        http(
            transport, RetryPolicy{},
            [this](milliseconds) {
              if (on_sleep) on_sleep();
            },
            [] { return 0.5; }, breaker) {
    transport->script.assign(script.begin(), script.end());
  }

  Result<HttpResponse> Get(Resend resend = Resend::kRetryable) {
    HttpRequest r;
    r.method = "GET";
    r.url = "http://127.0.0.1:10000/devstoreaccount1/c/b?sv=x";
    return http.Execute(r, {}, resend);
  }

  FakeClock clock;
  std::shared_ptr<ScriptTransport> transport;
  std::shared_ptr<CircuitBreaker> breaker;
  std::function<void()> on_sleep;
  RetryingHttpClient http;
};

TEST(BreakerInHttpClient, AFailureARetryRepairsOpensNothing) {
  Client c({Refused(), Refused(), Answer(200)});
  ASSERT_TRUE(c.Get().ok());
  EXPECT_FALSE(c.breaker->open());
}

TEST(BreakerInHttpClient, AnswersWithErrorStatusesOpenNothing) {
  Client c({Answer(503)});
  auto r = c.Get();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(c.transport->sent.size(), 5u);
  EXPECT_FALSE(c.breaker->open());
}

TEST(BreakerInHttpClient, RetriesSpentOnFailuresOpenItAndTheNextRequestsAreNotSent) {
  Client c({Refused()});
  EXPECT_EQ(c.Get().status().code(), Code::kTransport);
  EXPECT_EQ(c.transport->sent.size(), 5u);
  EXPECT_TRUE(c.breaker->open());
  for (int i = 0; i < 3; ++i) {
    auto r = c.Get();
    EXPECT_EQ(r.status().code(), Code::kTransport);
    EXPECT_NE(r.status().message().find("not sent"), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(c.transport->sent.size(), 5u);
}

TEST(BreakerInHttpClient, AProbeThatGetsAnAnswerLetsTheRequestGo) {
  Client c({Refused()});
  EXPECT_FALSE(c.Get().ok());
  c.transport->sent.clear();
  c.transport->timeouts.clear();
  c.transport->script = {Answer(400), Answer(200)};  // the probe, then the request
  c.clock.now += milliseconds(250);
  auto r = c.Get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  // The probe: an unsigned GET of the endpoint's root, with the probe timeout.
  ASSERT_EQ(c.transport->sent.size(), 2u);
  EXPECT_EQ(c.transport->sent[0], "GET http://127.0.0.1:10000/");
  EXPECT_EQ(c.transport->timeouts[0], milliseconds(2000));
  EXPECT_EQ(c.transport->sent[1], "GET http://127.0.0.1:10000/devstoreaccount1/c/b?sv=x");
  EXPECT_FALSE(c.breaker->open());
}

TEST(BreakerInHttpClient, AProbeWithoutAnswerFailsTheRequestUnsent) {
  Client c({Refused()});
  EXPECT_FALSE(c.Get().ok());
  c.transport->sent.clear();
  c.transport->script = {Status(Code::kTimeout, "probe: no answer"), Answer(200)};
  c.clock.now += milliseconds(250);
  auto r = c.Get();
  EXPECT_EQ(r.status().code(), Code::kTransport);
  EXPECT_EQ(c.transport->sent, std::vector<std::string>{"GET http://127.0.0.1:10000/"});
  EXPECT_TRUE(c.breaker->open());
}

TEST(BreakerInHttpClient, ARequestWaitingToRetryStopsWhenAnotherOpenedIt) {
  Client c({Refused()});
  c.on_sleep = [&] { c.breaker->Unreachable(Refused()); };
  EXPECT_EQ(c.Get().status().code(), Code::kTransport);
  EXPECT_EQ(c.transport->sent.size(), 1u);
}

TEST(BreakerInHttpClient, ATimeoutNotResentOpensIt) {
  // A batch (Resend::kOnlyUnsent) is not resent after a timeout: that
  // timeout is its last attempt.
  Client c({Status(Code::kTimeout, "no complete response")});
  EXPECT_EQ(c.Get(Resend::kOnlyUnsent).status().code(), Code::kTimeout);
  EXPECT_EQ(c.transport->sent.size(), 1u);
  EXPECT_TRUE(c.breaker->open());
}

TEST(BreakerInHttpClient, OnlyUnsentResendsThrottlingAndConnectionFailures) {
  Client c({Answer(503), Refused(), Answer(500)});
  auto r = c.Get(Resend::kOnlyUnsent);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);  // may have run: not resent
  EXPECT_EQ(c.transport->sent.size(), 3u);
  EXPECT_FALSE(c.breaker->open());
}

TEST(BreakerInHttpClient, CancelledRequestsOpenNothing) {
  Client c({Refused()});
  CancelToken token;
  ScopedCancelToken current(&token);
  c.on_sleep = [&] { token.Cancel(); };  // interrupted while waiting to retry
  EXPECT_EQ(c.Get().status().code(), Code::kCancelled);
  EXPECT_EQ(c.transport->sent.size(), 1u);
  EXPECT_FALSE(c.breaker->open());

  token.Reset();
  c.on_sleep = nullptr;
  c.transport->script = {Cancelled("GET")};  // aborted under way
  EXPECT_EQ(c.Get().status().code(), Code::kCancelled);
  EXPECT_EQ(c.transport->sent.size(), 2u);
  EXPECT_FALSE(c.breaker->open());
}

TEST(BreakerInHttpClient, ACancelledRequestLeftUnansweredAsLongAsAProbeOpensIt) {
  Client c({Answer(200)});
  CancelToken token;
  ScopedCancelToken current(&token);
  // Given up after 1.9 s without an answer: the service may just be slow.
  c.transport->script = {Cancelled("GET")};
  c.transport->on_send = [&] { c.clock.now += milliseconds(1900); };
  EXPECT_EQ(c.Get().status().code(), Code::kCancelled);
  EXPECT_FALSE(c.breaker->open());
  // After 2 s (the probe's timeout) without one: as good as a timeout.
  c.transport->on_send = [&] { c.clock.now += milliseconds(2000); };
  EXPECT_EQ(c.Get().status().code(), Code::kCancelled);
  EXPECT_TRUE(c.breaker->open()) << "the next request probes first";
  EXPECT_EQ(c.Get().status().code(), Code::kTransport) << "failed fast, unsent";
  // A large upload may take that long to send: no sign of an outage.
  c.breaker->Answered();
  HttpRequest put;
  put.method = "PUT";
  put.url = "http://127.0.0.1:10000/devstoreaccount1/c/b";
  put.body = HttpBody::FromString(std::string(256 * 1024, 'x'));
  EXPECT_EQ(c.http.Execute(put, {}).status().code(), Code::kCancelled);
  EXPECT_FALSE(c.breaker->open());
}

TEST(BreakerInHttpClient, ACallerWithACachedAnswerProbesBriefly) {
  Client c({Refused()});
  EXPECT_FALSE(c.Get().ok());
  c.transport->timeouts.clear();
  c.transport->script = {Status(Code::kTimeout, "probe: no answer")};
  c.clock.now += milliseconds(250);  // a probe is due
  {
    ShortProbe cached;
    EXPECT_EQ(c.Get().status().code(), Code::kTransport);
  }
  c.clock.now += milliseconds(250);
  EXPECT_EQ(c.Get().status().code(), Code::kTransport);
  EXPECT_EQ(c.transport->timeouts,
            (std::vector<milliseconds>{milliseconds(500), milliseconds(2000)}));
}

}  // namespace
}  // namespace stampfs
