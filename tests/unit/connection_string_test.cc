#include "storage/connection_string.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace stampfs {
namespace {

constexpr const char* kDevKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

void ExpectDevelopmentAccount(const Result<StorageAccount>& a) {
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->account_name, "devstoreaccount1");
  EXPECT_EQ(a->account_key, kDevKey);
  EXPECT_EQ(a->sas_token, "");
  EXPECT_EQ(a->blob_endpoint, "http://127.0.0.1:10000/devstoreaccount1");
  EXPECT_EQ(a->table_endpoint, "http://127.0.0.1:10002/devstoreaccount1");
  EXPECT_EQ(a->queue_endpoint, "http://127.0.0.1:10001/devstoreaccount1");
}

// The error must name `field` and must not contain `secret`.
void ExpectError(const std::string& text, const std::string& field, const std::string& secret) {
  auto a = ParseConnectionString(text);
  ASSERT_FALSE(a.ok()) << text;
  EXPECT_EQ(a.status().code(), Code::kInvalidArgument);
  EXPECT_NE(a.status().message().find(field), std::string::npos) << a.status().message();
  if (!secret.empty()) {
    EXPECT_EQ(a.status().ToString().find(secret), std::string::npos) << a.status().ToString();
  }
}

TEST(ConnectionString, DevelopmentStorageShorthand) {
  ExpectDevelopmentAccount(ParseConnectionString(kDevelopmentConnectionString));
  ExpectDevelopmentAccount(ParseConnectionString("usedevelopmentstorage=TRUE;"));
  ExpectDevelopmentAccount(ParseConnectionString("  UseDevelopmentStorage = true  "));
}

TEST(ConnectionString, FullEmulatorStringMatchesShorthand) {
  ExpectDevelopmentAccount(ParseConnectionString(
      std::string("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=") +
      kDevKey +
      ";BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1/;"
      "QueueEndpoint=http://127.0.0.1:10001/devstoreaccount1;"
      "TableEndpoint=http://127.0.0.1:10002/devstoreaccount1//;"));
}

TEST(ConnectionString, DevelopmentStorageProxyReplacesHost) {
  auto a = ParseConnectionString(
      "UseDevelopmentStorage=true;DevelopmentStorageProxyUri=http://azurite.local/");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->blob_endpoint, "http://azurite.local:10000/devstoreaccount1");
  EXPECT_EQ(a->table_endpoint, "http://azurite.local:10002/devstoreaccount1");
  EXPECT_EQ(a->queue_endpoint, "http://azurite.local:10001/devstoreaccount1");
}

TEST(ConnectionString, EndpointsBuiltFromSuffix) {
  auto a = ParseConnectionString(std::string("AccountName=myacct;AccountKey=") + kDevKey);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->blob_endpoint, "https://myacct.blob.core.windows.net");
  EXPECT_EQ(a->table_endpoint, "https://myacct.table.core.windows.net");
  EXPECT_EQ(a->queue_endpoint, "https://myacct.queue.core.windows.net");

  a = ParseConnectionString(std::string("defaultendpointsprotocol=HTTP;accountname=myacct;"
                                        "ACCOUNTKEY=") +
                            kDevKey + ";EndpointSuffix=core.chinacloudapi.cn/;");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->blob_endpoint, "http://myacct.blob.core.chinacloudapi.cn");
  EXPECT_EQ(a->table_endpoint, "http://myacct.table.core.chinacloudapi.cn");
  EXPECT_EQ(a->queue_endpoint, "http://myacct.queue.core.chinacloudapi.cn");
}

TEST(ConnectionString, ExplicitEndpointOverridesOnlyItsService) {
  auto a = ParseConnectionString(
      std::string("AccountName=myacct;AccountKey=") + kDevKey +
      ";BlobEndpoint=https://blobs.example.com/;"
      "FileEndpoint=https://f.example.com;QueueEndpoint=https://q.example.com");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->blob_endpoint, "https://blobs.example.com");
  EXPECT_EQ(a->table_endpoint, "https://myacct.table.core.windows.net");
  EXPECT_EQ(a->queue_endpoint, "https://q.example.com");
}

TEST(ConnectionString, SasKeepsEqualsAndAmpersands) {
  const std::string sas =
      "sv=2021-08-06&ss=bt&srt=sco&sp=rwdlacup&se=2030-01-01T00:00:00Z&"
      "sig=ab%2Bc%2Fd%3D";
  auto a = ParseConnectionString("AccountName=myacct;SharedAccessSignature=?" + sas +
                                 ";EndpointSuffix=core.windows.net");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->sas_token, sas);
  EXPECT_FALSE(a->HasKey());
  EXPECT_TRUE(a->HasSas());
  EXPECT_EQ(a->blob_endpoint, "https://myacct.blob.core.windows.net");
}

TEST(ConnectionString, PortalSasStringDerivesAccountFromEndpoint) {
  auto a = ParseConnectionString(
      "BlobEndpoint=https://myacct.blob.core.windows.net/;"
      "TableEndpoint=https://myacct.table.core.windows.net/;SharedAccessSignature=sv=1&sig=x");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->account_name, "myacct");
  a = ParseConnectionString(
      "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;SharedAccessSignature=sv=1&sig=x");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->account_name, "devstoreaccount1");
  EXPECT_EQ(a->table_endpoint, "https://devstoreaccount1.table.core.windows.net");
}

TEST(ConnectionString, KeyWinsOverSas) {
  auto a = ParseConnectionString(std::string("AccountName=a1;AccountKey=") + kDevKey +
                                 ";SharedAccessSignature=sv=1&sig=x");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_TRUE(a->HasKey());
  EXPECT_FALSE(a->HasSas());
}

TEST(ConnectionString, ErrorsNameTheField) {
  const std::string key = std::string(";AccountKey=") + kDevKey;
  ExpectError("AccountKey=" + std::string(kDevKey), "AccountName", kDevKey);
  // "AccountName=a1" alone is valid: Entra ID sign-in (entra_auth_test.cc).
  ExpectError("AccountName=a1;AccountKey=", "AccountKey is empty", "");
  ExpectError("AccountName=a1;SharedAccessSignature=?", "SharedAccessSignature", "");
  ExpectError("AccountName=a1" + key + ";Colour=blue", "'Colour'", kDevKey);
  ExpectError("AccountName=a1" + key + ";AccountName=a2", "AccountName", kDevKey);
  ExpectError("DefaultEndpointsProtocol=ftp;AccountName=a1" + key, "DefaultEndpointsProtocol",
              kDevKey);
  ExpectError("AccountName=a1" + key + ";BlobEndpoint=127.0.0.1:10000", "BlobEndpoint", kDevKey);
  ExpectError("AccountName=a1" + key + ";TableEndpoint=https://t.example.com?sig=secret",
              "TableEndpoint", "secret");
  ExpectError("UseDevelopmentStorage=maybe", "UseDevelopmentStorage", "");
  ExpectError("UseDevelopmentStorage=true;AccountName=x", "AccountName", "");
  ExpectError("AccountName=a1;noequals", "no '='", "");
  ExpectError("", "empty", "");
  ExpectError(";;", "empty", "");
}

TEST(ConnectionString, InvalidKeyIsNeverEchoed) {
  const std::string bad_key = "not*base64*secretvalue==";
  ExpectError("AccountName=a1;AccountKey=" + bad_key, "AccountKey is not valid base64", bad_key);
  // URL-safe alphabet and missing padding are not what Azure issues.
  ExpectError("AccountName=a1;AccountKey=c2Vj-_Jl", "AccountKey is not valid base64", "c2Vj");
  ExpectError("AccountName=a1;AccountKey=c2VjcmV0cw", "AccountKey is not valid base64", "c2Vj");
}

TEST(ConnectionString, SecretLookingUnknownKeyIsNotEchoed) {
  // A stray key pasted without "AccountKey=" splits at its padding.
  ExpectError(std::string("AccountName=a1;") + kDevKey, "unknown key", "Eby8vdM02x");
}

TEST(StorageAccount, DescribeOmitsSecrets) {
  auto a = ParseConnectionString(kDevelopmentConnectionString);
  ASSERT_TRUE(a.ok());
  std::string d = a->Describe();
  EXPECT_EQ(d,
            "devstoreaccount1 (blob http://127.0.0.1:10000/devstoreaccount1, table "
            "http://127.0.0.1:10002/devstoreaccount1, SharedKey)");
  EXPECT_EQ(d.find("Eby8"), std::string::npos);

  auto s = ParseConnectionString("AccountName=a1;SharedAccessSignature=sv=1&sig=topsecret");
  ASSERT_TRUE(s.ok());
  EXPECT_NE(s->Describe().find("SAS"), std::string::npos);
  EXPECT_EQ(s->Describe().find("topsecret"), std::string::npos);
}

class ConnectionStringFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stampfs_cs_XXXXXX";
    int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = tmpl;
  }
  void TearDown() override { std::remove(path_.c_str()); }
  void Write(const std::string& text) { std::ofstream(path_, std::ios::binary) << text; }
  std::string path_;
};

TEST_F(ConnectionStringFile, ReadsAndTrimsWhitespace) {
  Write("\n  UseDevelopmentStorage=true;\r\n\t");
  auto text = ReadConnectionStringFile(path_);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "UseDevelopmentStorage=true;");
}

TEST_F(ConnectionStringFile, EmptyFileIsAnErrorNamingThePath) {
  Write(" \n");
  auto text = ReadConnectionStringFile(path_);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find(path_), std::string::npos);
}

TEST_F(ConnectionStringFile, UnreadablePathIsAnErrorNamingThePath) {
  auto text = ReadConnectionStringFile(path_ + ".missing");
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find(path_ + ".missing"), std::string::npos);
  EXPECT_NE(text.status().message().find("No such file"), std::string::npos);
  auto dir = ReadConnectionStringFile("/tmp");
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("/tmp"), std::string::npos);
}

}  // namespace
}  // namespace stampfs
