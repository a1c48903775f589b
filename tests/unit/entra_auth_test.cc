// Entra ID sign-in without a network: token answers parsed, the cache and its
// refresh on a fake clock, the certificate's client assertion, the bearer
// signer, and the mount options that choose a method.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "fs/daemon/mount_config.h"
#include "fs/daemon/mount_options.h"
#include "storage/auth.h"
#include "storage/client_assertion.h"
#include "storage/connection_string.h"
#include "storage/entra_credential.h"
#include "storage/token_credential.h"
#include "storage/token_sources.h"
#include "tests/tools/token_server.h"

namespace stampfs {
namespace {

using std::chrono::seconds;

SystemTime At(int64_t epoch_seconds) { return SystemTime(seconds(epoch_seconds)); }

TEST(TokenResponse, ImdsAnswersWithEpochStrings) {
  auto t = ParseTokenResponse(
      R"({"access_token":"eyJ0.eyJ1.c2ln","expires_in":"3599","expires_on":"1700003600",)"
      R"("resource":"https://storage.azure.com","token_type":"Bearer"})",
      At(1700000000));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->token, "eyJ0.eyJ1.c2ln");
  EXPECT_EQ(t->expires_on, At(1700003600));
}

TEST(TokenResponse, EntraIdAnswersWithExpiresInSeconds) {
  auto t = ParseTokenResponse(R"({"token_type":"Bearer","expires_in":3599,"ext_expires_in":3599,)"
                              R"("access_token":"abc.def.ghi"})",
                              At(1700000000));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->expires_on, At(1700003599));
}

TEST(TokenResponse, AzureCliExpiresOnWinsOverItsLocalTimeString) {
  auto t = ParseTokenResponse(R"({"accessToken":"a.b.c","expiresOn":"2000-01-01 00:00:00.000000",)"
                              R"("expires_on":1700003600,"tokenType":"Bearer"})",
                              At(1700000000));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->token, "a.b.c");
  EXPECT_EQ(t->expires_on, At(1700003600));
}

TEST(TokenResponse, OlderAzureCliGivesOnlyLocalTime) {
  setenv("TZ", "UTC", 1);
  tzset();
  auto t = ParseTokenResponse(R"({"accessToken":"a.b.c","expiresOn":"2023-11-14 22:13:20.000000"})",
                              At(0));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->expires_on, At(1700000000));
}

TEST(TokenResponse, MalformedAnswersAreRefusedWithoutEchoingTheToken) {
  for (const char* body :
       {"not json", R"({"expires_in":10})", R"({"access_token":"secret-token-value"})",
        R"({"access_token":"secret token value","expires_in":10})"}) {
    auto t = ParseTokenResponse(body, At(0));
    ASSERT_FALSE(t.ok()) << body;
    EXPECT_EQ(t.status().code(), Code::kCorruption);
    EXPECT_EQ(t.status().message().find("secret"), std::string::npos) << t.status().message();
  }
}

TEST(TokenRefresh, AnHourTokenIsReplacedFiveMinutesEarlyAShortOneAtHalfLife) {
  TokenRefreshPolicy policy;  // margin 300 s
  AccessToken hour{"t", At(3600)};
  EXPECT_EQ(RefreshTime(hour, At(0), policy), At(3300));
  AccessToken minute{"t", At(90)};
  EXPECT_EQ(RefreshTime(minute, At(0), policy), At(45));
  policy.margin = seconds(10);
  EXPECT_EQ(RefreshTime(minute, At(0), policy), At(80));
}

// A source handing out tokens of a fixed life on a fake clock.
class ScriptedSource : public TokenSource {
 public:
  ScriptedSource(std::atomic<int64_t>* clock, int lifetime) : clock_(clock), lifetime_(lifetime) {}
  Result<AccessToken> Fetch(std::chrono::milliseconds) override {
    ++fetches;
    if (fail) return Status(Code::kTransport, "token endpoint unreachable");
    return AccessToken{"token-" + std::to_string(fetches.load()), At(*clock_ + lifetime_)};
  }
  std::string Describe() const override { return "scripted"; }
  std::atomic<int> fetches{0};
  std::atomic<bool> fail{false};

 private:
  std::atomic<int64_t>* clock_;
  int lifetime_;
};

struct CredentialFixture {
  std::atomic<int64_t> now{1000};
  ScriptedSource* source = nullptr;
  std::unique_ptr<TokenCredential> credential;
  explicit CredentialFixture(int lifetime, TokenRefreshPolicy policy = {}) {
    auto s = std::make_unique<ScriptedSource>(&now, lifetime);
    source = s.get();
    credential =
        std::make_unique<TokenCredential>(std::move(s), policy, [this] { return At(now.load()); });
  }
};

TEST(TokenCredential, ATokenIsFetchedOnceAndReusedUntilItsRefreshTime) {
  CredentialFixture f(3600);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(*f.credential->Token(), "token-1");
  f.now += 3299;
  EXPECT_EQ(*f.credential->Token(), "token-1");
  f.now += 2;  // past expiry - 300 s
  EXPECT_EQ(*f.credential->Token(), "token-2");
  EXPECT_EQ(f.source->fetches, 2);
}

TEST(TokenCredential, AShortTokenIsReplacedAtHalfLife) {
  CredentialFixture f(60);
  EXPECT_EQ(*f.credential->Token(), "token-1");
  f.now += 29;
  EXPECT_EQ(*f.credential->Token(), "token-1");
  f.now += 2;
  EXPECT_EQ(*f.credential->Token(), "token-2");
}

TEST(TokenCredential, AFailedRefreshKeepsTheValidTokenThenFailsWithTheReason) {
  TokenRefreshPolicy policy;
  policy.retry_after_failure = std::chrono::seconds(10);
  CredentialFixture f(60, policy);
  EXPECT_EQ(*f.credential->Token(), "token-1");
  f.source->fail = true;
  f.now += 31;  // refresh due, endpoint down: the old token still serves
  EXPECT_EQ(*f.credential->Token(), "token-1");
  EXPECT_EQ(f.source->fetches, 2);
  f.now += 5;  // within retry_after_failure: no new try
  EXPECT_EQ(*f.credential->Token(), "token-1");
  EXPECT_EQ(f.source->fetches, 2);
  f.now += 30;  // expired (1066 > 1060), and the endpoint still down
  auto t = f.credential->Token();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kAuth);
  EXPECT_NE(t.status().message().find("scripted"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("unreachable"), std::string::npos);
  f.source->fail = false;
  f.now += 11;
  EXPECT_EQ(*f.credential->Token(), "token-4");
}

TEST(TokenCredential, ConcurrentCallersShareOneFetch) {
  CredentialFixture f(3600);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 100; ++j) ok += f.credential->Token().ok();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 800);
  EXPECT_EQ(f.source->fetches, 1);
}

TEST(ClientAssertion, IsSignedRs256AndNamesTheCertificate) {
  const std::string pem = testing::MakeSelfSignedPem("sp");
  auto cert = ClientCertificate::FromPem(pem, "test pem");
  ASSERT_TRUE(cert.ok()) << cert.status().ToString();
  const std::string aud = "https://login.microsoftonline.com/tenant/oauth2/v2.0/token";
  auto jwt = MakeClientAssertion(**cert, "client", aud, std::chrono::system_clock::now());
  ASSERT_TRUE(jwt.ok());
  Status verified = testing::VerifyClientAssertion(*jwt, pem, aud, "client");
  EXPECT_TRUE(verified.ok()) << verified.ToString();
  // Another audience, client or a changed signature is refused.
  EXPECT_FALSE(testing::VerifyClientAssertion(*jwt, pem, aud + "x", "client").ok());
  EXPECT_FALSE(testing::VerifyClientAssertion(*jwt, pem, aud, "other").ok());
  std::string tampered = *jwt;
  tampered[tampered.size() - 3] = tampered[tampered.size() - 3] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(testing::VerifyClientAssertion(tampered, pem, aud, "client").ok());
  // Another certificate's key does not verify it.
  EXPECT_FALSE(
      testing::VerifyClientAssertion(*jwt, testing::MakeSelfSignedPem("other"), aud, "client")
          .ok());
}

TEST(ClientAssertion, APemWithoutKeyOrCertificateIsRefusedByName) {
  const std::string pem = testing::MakeSelfSignedPem("sp");
  const std::string cert_only = pem.substr(0, pem.find("-----BEGIN PRIVATE KEY"));
  auto no_key = ClientCertificate::FromPem(cert_only, "client certificate file /x.pem");
  ASSERT_FALSE(no_key.ok());
  EXPECT_NE(no_key.status().message().find("/x.pem"), std::string::npos);
  EXPECT_NE(no_key.status().message().find("private key"), std::string::npos);
  auto no_cert = ClientCertificate::FromPem(pem.substr(pem.find("-----BEGIN PRIVATE KEY")), "f");
  EXPECT_FALSE(no_cert.ok());
}

TEST(Base64Url, RoundTripsWithoutPadding) {
  for (std::string s : {"", "f", "fo", "foo", "\xff\xfe\xfd"}) {
    std::string e = Base64UrlEncode(s);
    EXPECT_EQ(e.find_first_of("+/="), std::string::npos) << e;
    EXPECT_EQ(*Base64UrlDecode(e), s);
  }
}

class FixedSource : public TokenSource {
 public:
  explicit FixedSource(bool fail) : fail_(fail) {}
  Result<AccessToken> Fetch(std::chrono::milliseconds) override {
    if (fail_) return Status(Code::kTransport, "down");
    return AccessToken{"tok.en.value", std::chrono::system_clock::now() + std::chrono::hours(1)};
  }
  std::string Describe() const override { return "fixed"; }

 private:
  bool fail_;
};

TEST(BearerSigner, SetsTheTokenAndFailsUnsentWithoutOne) {
  StorageAccount account;
  account.account_name = "acct";
  account.token_credential =
      std::make_shared<TokenCredential>(std::make_unique<FixedSource>(false));
  HttpRequest r;
  r.method = "GET";
  r.url = "https://acct.blob.core.windows.net/c?restype=container";
  ASSERT_TRUE(MakeSigner(account, Service::kBlob, [] { return "date"; })(r).ok());
  EXPECT_EQ(r.Header("Authorization"), "Bearer tok.en.value");
  EXPECT_EQ(r.Header("x-ms-date"), "date");
  EXPECT_EQ(r.url, "https://acct.blob.core.windows.net/c?restype=container");

  account.token_credential = std::make_shared<TokenCredential>(std::make_unique<FixedSource>(true));
  HttpRequest q = r;
  Status s = MakeSigner(account, Service::kTable)(q);
  EXPECT_EQ(s.code(), Code::kAuth);
  EXPECT_NE(s.message().find("fixed"), std::string::npos);
}

TEST(TokenEndpoints, PlainHttpOnlyToLoopbackOrLinkLocal) {
  EXPECT_TRUE(CheckTokenEndpoint("https://login.microsoftonline.com", "a", false).ok());
  EXPECT_TRUE(CheckTokenEndpoint(kImdsTokenEndpoint, "a", false).ok());
  EXPECT_TRUE(CheckTokenEndpoint("http://localhost:42356/msi/token", "a", false).ok());
  EXPECT_TRUE(CheckTokenEndpoint("http://127.0.0.1:8080", "a", false).ok());
  EXPECT_FALSE(CheckTokenEndpoint("http://login.example.com", "a", false).ok());
  EXPECT_TRUE(CheckTokenEndpoint("http://login.example.com", "a", true).ok());
  EXPECT_FALSE(CheckTokenEndpoint("ftp://x", "a", true).ok());
  EXPECT_EQ(ResourceWithoutSlash("https://storage.azure.com/"), "https://storage.azure.com");
  EXPECT_EQ(ResourceWithoutSlash("https://storage.azure.com/.default"),
            "https://storage.azure.com");
}

TEST(EntraCredential, AMethodMissingWhatItNeedsSaysWhat) {
  EntraOptions o;
  o.method = AuthMethod::kServicePrincipal;
  auto sp = MakeEntraCredential(o);
  ASSERT_FALSE(sp.ok());
  EXPECT_NE(sp.status().message().find("tenant_id"), std::string::npos);
  o.tenant_id = "t";
  o.client_id = "c";
  EXPECT_NE(MakeEntraCredential(o).status().message().find("client_secret_file"),
            std::string::npos);
  o.method = AuthMethod::kWorkloadIdentity;
  EXPECT_NE(MakeEntraCredential(o).status().message().find("AZURE_FEDERATED_TOKEN_FILE"),
            std::string::npos);
  o.method = AuthMethod::kManagedIdentity;
  o.msi_endpoint = "http://metadata.example.com/token";
  EXPECT_NE(MakeEntraCredential(o).status().message().find("plain http"), std::string::npos);
}

TEST(ConnectionString, AnAccountNameAloneMeansEntraId) {
  auto a = ParseConnectionString("AccountName=acct");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_FALSE(a->HasKey());
  EXPECT_FALSE(a->HasSas());
  EXPECT_EQ(a->blob_endpoint, "https://acct.blob.core.windows.net");
  auto e = ParseConnectionString(
      "BlobEndpoint=https://127.0.0.1:10010/devstoreaccount1;"
      "TableEndpoint=https://127.0.0.1:10012/devstoreaccount1");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->account_name, "devstoreaccount1");
}

TEST(MountOptionsAuth, MethodsAndSecretsAreChecked) {
  MountOptions o;
  EXPECT_TRUE(ApplyOptionList("auth=msi,tenant_id=t,client_id=c,token_refresh_margin=20", &o).ok());
  EXPECT_EQ(o.auth, "msi");
  EXPECT_EQ(o.token_refresh_margin, 20);
  Status bad = ApplyOptionList("auth=password", &o);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("msi"), std::string::npos);
  Status secret = ApplyOptionList("client_secret=hunter2", &o);
  EXPECT_FALSE(secret.ok());
  EXPECT_EQ(secret.message().find("hunter2"), std::string::npos);
  EXPECT_NE(secret.message().find("client_secret_file"), std::string::npos);
}

TEST(MountOptionsAuth, LoadAccountRefusesAMethodThatContradictsTheCredentials) {
  const auto dir = std::filesystem::temp_directory_path() / "stampfs-entra-unit";
  std::filesystem::create_directories(dir);
  const std::string key = (dir / "key").string();
  std::ofstream(key) << "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
                        "KBHBeksoGMGw==";
  ::chmod(key.c_str(), 0600);
  MountOptions o;
  o.account_name = "acct";
  o.account_key_file = key;
  o.auth = "msi";
  auto both = LoadAccount(o);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("one or the other"), std::string::npos);
  o.auth = "key";
  EXPECT_TRUE(LoadAccount(o).ok());
  o.account_key_file.clear();
  auto no_key = LoadAccount(o);
  ASSERT_FALSE(no_key.ok());
  EXPECT_NE(no_key.status().message().find("account_key_file"), std::string::npos);
  // A secret file readable by others is refused before anything is sent.
  const std::string secret = (dir / "secret").string();
  std::ofstream(secret) << "s3cret";
  ::chmod(secret.c_str(), 0644);
  o.auth = "sp";
  o.client_secret_file = secret;
  auto open_secret = LoadAccount(o);
  ASSERT_FALSE(open_secret.ok());
  EXPECT_NE(open_secret.status().message().find("chmod 600"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stampfs
