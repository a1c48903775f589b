// Cancellation of storage calls (storage/cancel.h): the token, the sleeps,
// and the curl transport aborting a request that gets no answer.
#include "storage/cancel.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "fs/fuse/errno_map.h"
#include "storage/http.h"

namespace stampfs {
namespace {

using std::chrono::milliseconds;
using Clock = CancelToken::Clock;

TEST(CancelToken, CancelledFromTheEarliestTimeGivenUntilReset) {
  CancelToken token;
  EXPECT_FALSE(token.cancelled());
  token.CancelAt(Clock::now() + std::chrono::hours(1));
  EXPECT_FALSE(token.cancelled());
  token.CancelAt(Clock::now() - milliseconds(1));
  EXPECT_TRUE(token.cancelled());
  token.CancelAt(Clock::now() + std::chrono::hours(2));  // later: the earlier holds
  EXPECT_TRUE(token.cancelled());
  token.Reset();
  EXPECT_FALSE(token.cancelled());
}

TEST(CancelToken, ScopesNestAndRestoreTheCurrentToken) {
  EXPECT_EQ(CurrentCancelToken(), nullptr);
  EXPECT_FALSE(CurrentlyCancelled());
  CancelToken outer, inner;
  {
    ScopedCancelToken a(&outer);
    {
      ScopedCancelToken b(&inner);
      inner.Cancel();
      EXPECT_TRUE(CurrentlyCancelled());
    }
    EXPECT_EQ(CurrentCancelToken(), &outer);
    EXPECT_FALSE(CurrentlyCancelled());
  }
  EXPECT_EQ(CurrentCancelToken(), nullptr);
}

TEST(CancelToken, SleepEndsEarlyWhenCancelled) {
  EXPECT_TRUE(SleepUnlessCancelled(milliseconds(5)));
  CancelToken token;
  ScopedCancelToken current(&token);
  token.CancelAt(Clock::now() + milliseconds(50));
  const auto start = Clock::now();
  EXPECT_FALSE(SleepUnlessCancelled(std::chrono::seconds(10)));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
}

TEST(CancelToken, CancelledIsEintr) {
  Status s = Cancelled("GET table.get");
  EXPECT_EQ(s.code(), Code::kCancelled);
  EXPECT_EQ(ErrnoFor(s), EINTR);
}

// A TCP port on loopback that accepts connections (the kernel's backlog)
// and never answers: a frozen service.
class SilentPort {
 public:
  SilentPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen on loopback";
    }
    port_ = ntohs(addr.sin_port);
  }
  ~SilentPort() { close(fd_); }
  HttpRequest Get() const {
    HttpRequest request;
    request.method = "GET";
    request.url = "http://127.0.0.1:" + std::to_string(port_) + "/c/b";
    return request;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(CurlTransportCancel, ARequestWithoutAnswerIsAbortedSoonAfterItsTokenIsCancelled) {
  SilentPort silent;
  auto transport = MakeCurlTransport();
  const HttpRequest request = silent.Get();
  CancelToken token;
  ScopedCancelToken current(&token);
  token.CancelAt(Clock::now() + milliseconds(200));
  const auto start = Clock::now();
  auto r = transport->Send(request, std::chrono::seconds(20));
  const auto took = Clock::now() - start;
  EXPECT_EQ(r.status().code(), Code::kCancelled) << r.status().ToString();
  EXPECT_GE(took, milliseconds(200));
  EXPECT_LT(took, milliseconds(1500));  // curl looks at least once a second

  // Cancelled already: not sent at all.
  r = transport->Send(request, std::chrono::seconds(20));
  EXPECT_EQ(r.status().code(), Code::kCancelled);
  EXPECT_NE(r.status().message().find("not sent"), std::string::npos);
}

TEST(CurlTransportCancel, WithoutATokenTheTimeoutStillApplies) {
  SilentPort silent;
  auto r = MakeCurlTransport()->Send(silent.Get(), milliseconds(300));
  EXPECT_EQ(r.status().code(), Code::kTimeout) << r.status().ToString();
}

}  // namespace
}  // namespace stampfs
