// The curl transport and signer against Azurite (or $AZURE_STORAGE_CONNECTION_STRING).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "integration/test_account.h"
#include "storage/auth.h"
#include "storage/connection_string.h"
#include "storage/http.h"

namespace stampfs {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kTimeout(10000);

std::string UniqueContainer(const std::string& tag) {
  static std::atomic<int> counter{0};
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return "h1" + tag + std::to_string(getpid()) + "x" +
         std::to_string(std::chrono::duration_cast<milliseconds>(now).count() % 100000000) + "x" +
         std::to_string(counter++);
}

class CurlTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto account = Account();
    ASSERT_TRUE(account.ok());
    account_ = *account;
    sign_ = MakeSigner(account_, Service::kBlob);
  }

  HttpRequest Blob(const std::string& method, const std::string& path) {
    HttpRequest r;
    r.method = method;
    r.url = account_.blob_endpoint + "/" + path;
    r.SetHeader("x-ms-version", "2021-08-06");
    return r;
  }

  Result<HttpResponse> Send(HttpRequest r) {
    STAMPFS_RETURN_IF_ERROR(sign_(r));
    return transport_->Send(r, kTimeout);
  }

  StorageAccount account_;
  RequestSigner sign_;
  std::unique_ptr<HttpTransport> transport_ = MakeCurlTransport();
};

TEST_F(CurlTransportTest, CreateContainerTwiceGives201Then409) {
  const std::string c = UniqueContainer("cc");
  auto first = Send(Blob("PUT", c + "?restype=container"));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->status, 201) << first->body;
  EXPECT_FALSE(first->Header("etag").empty());

  auto second = Send(Blob("PUT", c + "?restype=container"));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->status, 409);
  EXPECT_EQ(second->Header("x-ms-error-code"), "ContainerAlreadyExists");
  EXPECT_NE(second->body.find("ContainerAlreadyExists"), std::string::npos);

  auto gone = Send(Blob("DELETE", c + "?restype=container"));
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  EXPECT_EQ(gone->status, 202);
}

TEST_F(CurlTransportTest, UploadsStreamedBodyAndStreamsDownloadToSink) {
  const std::string c = UniqueContainer("up");
  ASSERT_EQ(Send(Blob("PUT", c + "?restype=container"))->status, 201);

  std::string data(300 * 1024, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i % 23);
  HttpRequest put = Blob("PUT", c + "/dir/sp%20ace%2Bplus.txt");
  put.SetHeader("Content-Type", "application/octet-stream");
  put.SetHeader("x-ms-blob-type", "BlockBlob");
  put.SetHeader("x-ms-meta-author", "alice");
  put.body = HttpBody::FromString(data);
  auto created = Send(put);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_EQ(created->status, 201) << created->body;

  HttpRequest head = Blob("HEAD", c + "/dir/sp%20ace%2Bplus.txt");
  auto props = Send(head);
  ASSERT_TRUE(props.ok()) << props.status().ToString();
  EXPECT_EQ(props->status, 200);
  EXPECT_EQ(props->Header("content-length"), std::to_string(data.size()));
  EXPECT_EQ(props->Header("content-type"), "application/octet-stream");
  EXPECT_EQ(props->Header("x-ms-meta-author"), "alice");

  std::string received;
  HttpRequest get = Blob("GET", c + "/dir/sp%20ace%2Bplus.txt");
  get.sink = [&received](uint64_t offset, const char* p, size_t n) {
    EXPECT_EQ(offset, received.size());
    received.append(p, n);
    return true;
  };
  auto got = Send(get);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->status, 200);
  EXPECT_TRUE(got->body.empty());
  EXPECT_EQ(received, data);

  // A 404 body lands in the response even with a sink.
  HttpRequest missing = Blob("GET", c + "/nope");
  missing.sink = get.sink;
  auto absent = Send(missing);
  ASSERT_TRUE(absent.ok());
  EXPECT_EQ(absent->status, 404);
  EXPECT_NE(absent->body.find("BlobNotFound"), std::string::npos);

  EXPECT_EQ(Send(Blob("DELETE", c + "?restype=container"))->status, 202);
}

TEST_F(CurlTransportTest, SinkAbortIsNotATransportError) {
  const std::string c = UniqueContainer("sa");
  ASSERT_EQ(Send(Blob("PUT", c + "?restype=container"))->status, 201);
  HttpRequest put = Blob("PUT", c + "/b");
  put.SetHeader("x-ms-blob-type", "BlockBlob");
  put.body = HttpBody::FromString("payload");
  ASSERT_EQ(Send(put)->status, 201);
  HttpRequest get = Blob("GET", c + "/b");
  get.sink = [](uint64_t, const char*, size_t) { return false; };
  auto got = Send(get);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInternal);
  EXPECT_EQ(Send(Blob("DELETE", c + "?restype=container"))->status, 202);
}

TEST_F(CurlTransportTest, BadSignatureIs403) {
  HttpRequest r = Blob("GET", "?comp=list");
  ASSERT_TRUE(sign_(r).ok());
  r.SetHeader("Authorization",
              "SharedKey devstoreaccount1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
  auto resp = transport_->Send(r, kTimeout);
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->status, 403);
  EXPECT_EQ(resp->Header("x-ms-error-code"), "AuthorizationFailure");
}

// Azurite closes idle sockets after 5 s; a pooled connection must not be reused then.
TEST_F(CurlTransportTest, SurvivesAzuriteKeepAliveTimeout) {
  auto first = Send(Blob("GET", "?comp=list"));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->status, 200);
  std::this_thread::sleep_for(milliseconds(5500));
  auto second = Send(Blob("GET", "?comp=list"));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->status, 200);
}

TEST(CurlTransport, ClosedPortFailsFastWithTransportErrorAndNoQuery) {
  auto transport = MakeCurlTransport();
  HttpRequest r;
  r.method = "GET";
  r.url = "http://127.0.0.1:1/devstoreaccount1/c?sv=2021&sig=SECRETSIGNATURE";
  auto start = std::chrono::steady_clock::now();
  auto resp = transport->Send(r, kTimeout);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.status().code(), Code::kTransport);
  EXPECT_NE(resp.status().message().find("127.0.0.1"), std::string::npos);
  EXPECT_EQ(resp.status().message().find("SECRETSIGNATURE"), std::string::npos);
  EXPECT_EQ(resp.status().message().find("sig="), std::string::npos);
  EXPECT_LT(elapsed, milliseconds(2000));
}

// A listener that never answers: the attempt must end at its own timeout.
TEST(CurlTransport, SilentServerTimesOutWithTimeoutCode) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);

  auto transport = MakeCurlTransport();
  HttpRequest r;
  r.method = "GET";
  r.url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/c?sig=SECRET";
  auto start = std::chrono::steady_clock::now();
  auto resp = transport->Send(r, milliseconds(300));
  auto elapsed = std::chrono::steady_clock::now() - start;
  close(fd);
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.status().code(), Code::kTimeout) << resp.status().ToString();
  EXPECT_EQ(resp.status().message().find("SECRET"), std::string::npos);
  EXPECT_GE(elapsed, milliseconds(250));
  EXPECT_LT(elapsed, milliseconds(3000));
}

// A one-connection HTTP server on loopback: a 200 with a 10-byte body of
// which it sends `sends` bytes, `gap` apart, then silence until the client
// gives up (at most 5 s).
class TricklingServer {
 public:
  TricklingServer(int sends, milliseconds gap) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    listen(fd_, 1);
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, sends, gap] {
      int c = accept(fd_, nullptr, nullptr);
      char buf[4096];
      if (c < 0 || recv(c, buf, sizeof(buf), 0) <= 0) return;
      const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
      send(c, head.data(), head.size(), MSG_NOSIGNAL);
      for (int i = 0; i < sends; ++i) {
        std::this_thread::sleep_for(gap);
        send(c, "x", 1, MSG_NOSIGNAL);
      }
      timeval patience{5, 0};
      setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof(patience));
      if (sends < 10) recv(c, buf, sizeof(buf), 0);  // silent until the client gives up
      close(c);
    });
  }
  ~TricklingServer() {
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/c/b"; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// A stream is bounded by progress: a body slower than the attempt timeout
// arrives while bytes keep coming, and silence ends it.
TEST(CurlTransport, AStreamEndsOnSilenceNotOnItsLength) {
  auto transport = MakeCurlTransport();
  HttpRequest r;
  r.method = "GET";
  r.stall_timeout = milliseconds(1000);
  size_t got = 0;
  r.sink = [&got](uint64_t, const char*, size_t n) {
    got += n;
    return true;
  };
  {
    TricklingServer slow(10, milliseconds(200));  // 2 s for the body
    r.url = slow.url();
    auto resp = transport->Send(r, milliseconds(500));
    ASSERT_TRUE(resp.ok()) << resp.status().ToString();
    EXPECT_EQ(got, 10u);
  }
  got = 0;
  TricklingServer stalled(3, milliseconds(10));
  r.url = stalled.url();
  auto start = std::chrono::steady_clock::now();
  auto resp = transport->Send(r, milliseconds(500));
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.status().code(), Code::kTimeout) << resp.status().ToString();
  EXPECT_EQ(got, 3u);
  EXPECT_GE(elapsed, milliseconds(900));
  EXPECT_LT(elapsed, milliseconds(3000));
}

TEST(CurlTransport, RetryingClientGivesUpOnClosedPort) {
  RetryPolicy policy;
  policy.max_attempts = 3;
  policy.initial_backoff = milliseconds(1);
  RetryingHttpClient client(MakeCurlTransport(), policy);
  HttpRequest r;
  r.method = "PUT";
  r.url = "http://127.0.0.1:1/x";
  int signs = 0;
  auto resp = client.Execute(r, [&signs](HttpRequest&) {
    ++signs;
    return Status::Ok();
  });
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.status().code(), Code::kTransport);
  EXPECT_EQ(signs, 3);
}

}  // namespace
}  // namespace stampfs
