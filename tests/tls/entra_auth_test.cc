// Microsoft Entra ID sign-in and https with a private CA, against the
// Azurite of tests/tls/fixture (https, --oauth basic) and the loopback token
// server (tests/tools/token_server.h): each method gets a token, and with it
// the Blob and the Table service answer. Skipped, saying why, when the
// fixture did not run or found something missing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "storage/auth.h"
#include "storage/azure_clients.h"
#include "storage/entra_credential.h"
#include "tests/tools/token_server.h"

#ifndef STAMPFS_BINARY_DIR
#error "STAMPFS_BINARY_DIR must name the build directory"
#endif
#ifndef STAMPFS_TOKEN_SERVER
#error "STAMPFS_TOKEN_SERVER must name the stampfs_token_server binary"
#endif

namespace stampfs {
namespace {

using testing::TokenServer;
using testing::TokenServerOptions;

std::map<std::string, std::string> ReadFixtureEnv() {
  std::map<std::string, std::string> env;
  std::ifstream in(std::string(STAMPFS_BINARY_DIR) + "/azurite-tls/env");
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

std::string UniqueName(const char* prefix) {
  std::random_device random;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", random());
  return prefix + std::string(suffix);
}

void WriteFile(const std::string& path, const std::string& text, mode_t mode = 0600) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

class EntraAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = ReadFixtureEnv();
    if (env_.empty()) {
      GTEST_SKIP() << "the TLS Azurite is not running: run through ctest (fixture "
                      "tls.azurite.start) or tests/tls/fixture start BUILD_DIR";
    }
    if (env_.count("SKIP")) GTEST_SKIP() << "TLS Azurite unavailable: " << env_["SKIP"];
    dir_ = std::filesystem::temp_directory_path() / UniqueName("stampfs-entra-");
    std::filesystem::create_directories(dir_);
    cert_pem_ = testing::MakeSelfSignedPem("stampfs-test-sp");
    WriteFile(dir_ / "sp.pem", cert_pem_);
    WriteFile(dir_ / "federated-token", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2ln\n");
    std::filesystem::create_symlink(STAMPFS_TOKEN_SERVER, dir_ / "az");
    TokenServerOptions o;
    o.client_secret = "s3cret-value-for-tests";
    o.federated_token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2ln";
    o.cert_pem = cert_pem_;
    o.identity_header = "identity-header-value";
    auto server = TokenServer::Start(o);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    server_options_ = o;
  }

  void TearDown() override {
    server_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  EntraOptions Options(AuthMethod method) {
    EntraOptions e;
    e.method = method;
    e.tenant_id = server_options_.tenant_id;
    e.client_id = server_options_.client_id;
    e.authority_host = server_->base_url();
    e.msi_endpoint = server_->base_url() + "/metadata/identity/oauth2/token";
    e.az = (dir_ / "az").string();
    e.ca_file = env_["TLS_CA_FILE"];
    return e;
  }

  StorageAccount Account(std::shared_ptr<TokenCredential> credential, bool with_ca = true) {
    StorageAccount a;
    a.account_name = "devstoreaccount1";
    a.blob_endpoint = env_["TLS_BLOB_ENDPOINT"];
    a.table_endpoint = env_["TLS_TABLE_ENDPOINT"];
    a.token_credential = std::move(credential);
    if (with_ca) a.ca_file = env_["TLS_CA_FILE"];
    return a;
  }

  // A container and a table written and read with the credential's tokens.
  void ExpectBothServicesServe(const EntraOptions& options) {
    auto credential = MakeEntraCredential(options);
    ASSERT_TRUE(credential.ok()) << credential.status().ToString();
    StorageAccount account = Account(*credential);
    auto blobs = MakeAzureBlobClient(account);
    auto table = MakeAzureTableClient(account);
    const std::string container = UniqueName("entra-");
    const std::string table_name = UniqueName("entra");
    Status created = blobs->CreateContainer(container);
    ASSERT_TRUE(created.ok()) << created.ToString();
    auto put = blobs->PutString(container, "a/b.txt", "signed in", {}, Condition::None());
    EXPECT_TRUE(put.ok()) << put.status().ToString();
    auto read = blobs->ReadToString(container, "a/b.txt");
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(*read, "signed in");
    Status table_created = table->CreateTable(table_name);
    ASSERT_TRUE(table_created.ok()) << table_created.ToString();
    Entity entity;
    entity.partition_key = "p";
    entity.row_key = "r";
    entity.properties["v"] = std::string("x");
    auto inserted = table->Insert(table_name, entity);
    EXPECT_TRUE(inserted.ok()) << inserted.status().ToString();
    auto got = table->Get(table_name, "p", "r");
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got->GetString("v"), "x");
    EXPECT_TRUE(table->DeleteTable(table_name).ok());
    EXPECT_TRUE(blobs->DeleteContainer(container).ok());
  }

  std::map<std::string, std::string> env_;
  std::filesystem::path dir_;
  std::string cert_pem_;
  std::unique_ptr<TokenServer> server_;
  TokenServerOptions server_options_;
};

TEST_F(EntraAuthTest, ManagedIdentityThroughImdsServesBlobAndTable) {
  ExpectBothServicesServe(Options(AuthMethod::kManagedIdentity));
  EXPECT_GE(server_->count("imds"), 1);
  EXPECT_EQ(server_->count("refused"), 0);
}

TEST_F(EntraAuthTest, ManagedIdentityThroughIdentityEndpointServesBlobAndTable) {
  EntraOptions o = Options(AuthMethod::kManagedIdentity);
  o.msi_endpoint.clear();
  o.identity_endpoint = server_->base_url() + "/msi/token";
  o.identity_header = server_options_.identity_header;
  ExpectBothServicesServe(o);
  EXPECT_GE(server_->count("appservice"), 1);
  EXPECT_EQ(server_->count("imds"), 0);
}

TEST_F(EntraAuthTest, WorkloadIdentityServesBlobAndTable) {
  EntraOptions o = Options(AuthMethod::kWorkloadIdentity);
  o.federated_token_file = (dir_ / "federated-token").string();
  ExpectBothServicesServe(o);
  EXPECT_GE(server_->count("workload"), 1);
}

TEST_F(EntraAuthTest, ServicePrincipalWithSecretServesBlobAndTable) {
  EntraOptions o = Options(AuthMethod::kServicePrincipal);
  o.client_secret = server_options_.client_secret;
  ExpectBothServicesServe(o);
  EXPECT_GE(server_->count("secret"), 1);
}

TEST_F(EntraAuthTest, ServicePrincipalWithCertificateServesBlobAndTable) {
  EntraOptions o = Options(AuthMethod::kServicePrincipal);
  o.client_cert_file = (dir_ / "sp.pem").string();
  ExpectBothServicesServe(o);
  EXPECT_GE(server_->count("certificate"), 1);
  EXPECT_EQ(server_->count("refused"), 0);
}

TEST_F(EntraAuthTest, AzureCliServesBlobAndTable) {
  ExpectBothServicesServe(Options(AuthMethod::kAzureCli));
}

TEST_F(EntraAuthTest, AutoFallsThroughToTheFirstMethodThatWorks) {
  EntraOptions o = Options(AuthMethod::kAuto);
  o.msi_endpoint = server_->base_url() + "/no-identity-here";  // managed identity: 404
  auto credential = MakeEntraCredential(o);
  ASSERT_TRUE(credential.ok()) << credential.status().ToString();
  auto token = (*credential)->Token();
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_NE((*credential)->Describe().find("Azure CLI"), std::string::npos)
      << (*credential)->Describe();
  ExpectBothServicesServe(o);
}

TEST_F(EntraAuthTest, AWrongSecretFailsWithTheEndpointsReasonAndNeverTheSecret) {
  EntraOptions o = Options(AuthMethod::kServicePrincipal);
  o.client_secret = "not-the-secret";
  auto credential = MakeEntraCredential(o);
  ASSERT_TRUE(credential.ok());
  auto token = (*credential)->Token();
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), Code::kAuth);
  EXPECT_NE(token.status().message().find("AADSTS7000215"), std::string::npos)
      << token.status().message();
  EXPECT_EQ(token.status().message().find("not-the-secret"), std::string::npos);
  // A request signed with no token fails unsent, with the reason.
  auto blobs = MakeAzureBlobClient(Account(*credential));
  Status created = blobs->CreateContainer(UniqueName("entra-"));
  EXPECT_EQ(created.code(), Code::kAuth) << created.ToString();
}

TEST_F(EntraAuthTest, HttpsIsVerifiedAgainstTheGivenCaOnly) {
  auto credential = MakeEntraCredential(Options(AuthMethod::kManagedIdentity));
  ASSERT_TRUE(credential.ok());
  // Without the private CA the self-signed chain is refused, never ignored.
  auto blobs = MakeAzureBlobClient(Account(*credential, /*with_ca=*/false));
  Status created = blobs->CreateContainer(UniqueName("entra-"));
  EXPECT_EQ(created.code(), Code::kTransport) << created.ToString();
  // With a CA that did not sign the server's certificate, too.
  WriteFile(dir_ / "other-ca.pem", cert_pem_.substr(0, cert_pem_.find("-----BEGIN PRIVATE")), 0644);
  StorageAccount other = Account(*credential, false);
  other.ca_file = (dir_ / "other-ca.pem").string();
  Status refused = MakeAzureBlobClient(other)->CreateContainer(UniqueName("entra-"));
  EXPECT_EQ(refused.code(), Code::kTransport) << refused.ToString();
}

TEST_F(EntraAuthTest, AzuriteRefusesAnExpiredToken) {
  // Proves the suite's tokens are checked at all: one expired a minute ago.
  class Expired : public TokenSource {
   public:
    Result<AccessToken> Fetch(std::chrono::milliseconds) override {
      return AccessToken{testing::MakeTestAccessToken("https://storage.azure.com", "t", "c", -60),
                         std::chrono::system_clock::now() + std::chrono::hours(1)};
    }
    std::string Describe() const override { return "expired"; }
  };
  auto credential = std::make_shared<TokenCredential>(std::make_unique<Expired>());
  Status created = MakeAzureBlobClient(Account(credential))->CreateContainer(UniqueName("entra-"));
  EXPECT_EQ(created.code(), Code::kAuth) << created.ToString();
}

// Tokens live 8 s and are replaced at half life; a copy of 48 blocks staged
// one every 0.4 s outlives several of them and never meets an expired one.
TEST_F(EntraAuthTest, ATokenThatExpiresDuringALongCopyIsReplacedInTime) {
  server_->set_lifetime(8);
  EntraOptions o = Options(AuthMethod::kServicePrincipal);
  o.client_secret = server_options_.client_secret;
  auto credential = MakeEntraCredential(o);
  ASSERT_TRUE(credential.ok());
  StorageAccount account = Account(*credential);
  auto blobs = MakeAzureBlobClient(account);
  auto table = MakeAzureTableClient(account);
  const std::string container = UniqueName("entra-");
  ASSERT_TRUE(blobs->CreateContainer(container).ok());
  const std::string table_name = UniqueName("entra");
  ASSERT_TRUE(table->CreateTable(table_name).ok());
  std::vector<BlockRef> blocks;
  std::string expected;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 48; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "block-%06d", i);
    BlockRef ref;
    ref.id = Base64Encode(id);
    std::string data(64 * 1024, static_cast<char>('a' + i % 26));
    Status staged = blobs->PutBlock(container, "long", ref.id, HttpBody::FromString(data));
    ASSERT_TRUE(staged.ok()) << "block " << i << ": " << staged.ToString();
    Entity progress;
    progress.partition_key = "copy";
    progress.row_key = std::to_string(i);
    ASSERT_TRUE(table->Insert(table_name, progress).ok()) << "entity " << i;
    blocks.push_back(ref);
    expected += data;
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  auto committed = blobs->PutBlockList(container, "long", blocks, {}, Condition::None());
  ASSERT_TRUE(committed.ok()) << committed.status().ToString();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(seconds, 16.0);  // two lifetimes at least
  auto read = blobs->ReadToString(container, "long");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(*read == expected);
  // One token per half life (4 s) give or take one.
  EXPECT_GE(server_->count("secret"), static_cast<int>(seconds / 4) - 1);
  EXPECT_EQ(server_->count("refused"), 0);
  EXPECT_TRUE(table->DeleteTable(table_name).ok());
  EXPECT_TRUE(blobs->DeleteContainer(container).ok());
}

}  // namespace
}  // namespace stampfs
