#include "storage/auth.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace stampfs {
namespace {

constexpr const char* kDevKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
constexpr const char* kDate = "Mon, 01 Jan 2024 00:00:00 GMT";

StorageAccount DevAccount() {
  StorageAccount a;
  a.account_name = "devstoreaccount1";
  a.account_key = kDevKey;
  a.blob_endpoint = "http://127.0.0.1:10000/devstoreaccount1";
  a.table_endpoint = "http://127.0.0.1:10002/devstoreaccount1";
  return a;
}

HttpDateFn FixedDate() {
  return [] { return std::string(kDate); };
}

TEST(Base64, KnownEncodings) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode(std::string("\xfb\xff", 2)), "+/8=");
}

TEST(Base64, RoundTripsEveryLengthAndByte) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (size_t len = 0; len <= all.size(); len += 7) {
    std::string bytes = all.substr(0, len);
    auto decoded = Base64Decode(Base64Encode(bytes));
    ASSERT_TRUE(decoded.ok()) << len;
    EXPECT_EQ(*decoded, bytes) << len;
  }
}

TEST(Base64, DevelopmentKeyIs64Bytes) {
  auto key = Base64Decode(kDevKey);
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(key->size(), 64u);
}

TEST(Base64, RejectsMalformedInput) {
  for (const char* bad :
       {"Zg=", "Zg", "Z!==", "Zg==Zg==", "Z===", "Zm9v\n", " Zm9v", "Zm-v", "Zm_v", "===="}) {
    auto decoded = Base64Decode(bad);
    EXPECT_FALSE(decoded.ok()) << bad;
    if (!decoded.ok()) {
      EXPECT_EQ(decoded.status().code(), Code::kInvalidArgument);
    }
  }
}

TEST(Digest, HmacSha256MatchesRfc4231Case2) {
  std::string mac = HmacSha256("Jefe", "what do ya want for nothing?");
  ASSERT_EQ(mac.size(), 32u);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : mac) {
    hex.push_back(kHex[c >> 4]);
    hex.push_back(kHex[c & 0xF]);
  }
  EXPECT_EQ(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(Digest, Sha256Hex) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

// AZURE-PROTOCOL.md §1.1 worked example 1.
TEST(BlobSigning, PutBlobVector) {
  HttpRequest r;
  r.method = "PUT";
  r.url = "http://127.0.0.1:10000/devstoreaccount1/mycontainer/dir/hello.txt";
  r.SetHeader("Content-Type", "text/plain");
  r.SetHeader("x-ms-blob-type", "BlockBlob");
  r.SetHeader("x-ms-meta-author", "alice");
  r.SetHeader("x-ms-version", "2021-08-06");
  r.body = HttpBody::FromString("hello world");
  ASSERT_TRUE(MakeSigner(DevAccount(), Service::kBlob, FixedDate())(r).ok());
  EXPECT_EQ(r.Header("x-ms-date"), kDate);
  EXPECT_EQ(
      BlobStringToSign(r, "devstoreaccount1"),
      "PUT\n\n\n11\n\ntext/plain\n\n\n\n\n\n\nx-ms-blob-type:BlockBlob\n"
      "x-ms-date:Mon, 01 Jan 2024 00:00:00 GMT\nx-ms-meta-author:alice\n"
      "x-ms-version:2021-08-06\n/devstoreaccount1/devstoreaccount1/mycontainer/dir/hello.txt");
  EXPECT_EQ(r.Header("authorization"),
            "SharedKey devstoreaccount1:3v6nxCeI6wBmm1P7QOL7iQsFF9HcQCcI61TGZ8599Cs=");
}

// AZURE-PROTOCOL.md §1.1 worked example 2.
TEST(BlobSigning, ListBlobsVector) {
  HttpRequest r;
  r.method = "GET";
  r.url =
      "http://127.0.0.1:10000/devstoreaccount1/mycontainer?restype=container&comp=list"
      "&prefix=dir%2F&delimiter=%2F&maxresults=2&include=metadata";
  r.SetHeader("x-ms-version", "2021-08-06");
  ASSERT_TRUE(MakeSigner(DevAccount(), Service::kBlob, FixedDate())(r).ok());
  EXPECT_EQ(BlobStringToSign(r, "devstoreaccount1"),
            "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Mon, 01 Jan 2024 00:00:00 GMT\n"
            "x-ms-version:2021-08-06\n/devstoreaccount1/devstoreaccount1/mycontainer\ncomp:list\n"
            "delimiter:/\ninclude:metadata\nmaxresults:2\nprefix:dir/\nrestype:container");
  EXPECT_EQ(r.Header("Authorization"),
            "SharedKey devstoreaccount1:roRJEslLNI29lBU0Z6foPSRdJz1qvHmuQsxhUzEGBWk=");
}

// AZURE-PROTOCOL.md §1.2 worked example 3.
TEST(TableSigning, InsertEntityVector) {
  HttpRequest r;
  r.method = "POST";
  r.url = "http://127.0.0.1:10002/devstoreaccount1/mytable";
  r.SetHeader("Content-Type", "application/json");
  r.SetHeader("Accept", "application/json;odata=minimalmetadata");
  r.SetHeader("x-ms-version", "2019-02-02");
  r.body = HttpBody::FromString(R"({"PartitionKey":"p1","RowKey":"r1"})");
  ASSERT_TRUE(MakeSigner(DevAccount(), Service::kTable, FixedDate())(r).ok());
  EXPECT_EQ(TableStringToSign(r, "devstoreaccount1"),
            "POST\n\napplication/json\nMon, 01 Jan 2024 00:00:00 GMT\n"
            "/devstoreaccount1/devstoreaccount1/mytable");
  EXPECT_EQ(r.Header("authorization"),
            "SharedKey devstoreaccount1:7Yhnlsng3syaRPfj2ayn/5qq4m3n8VzeRdyCJyDK4Jw=");
}

TEST(BlobSigning, EmptyBodySignsContentLengthAsEmpty) {
  HttpRequest r;
  r.method = "PUT";
  r.url = "http://127.0.0.1:10000/devstoreaccount1/c?restype=container";
  r.SetHeader("x-ms-date", kDate);
  EXPECT_EQ(BlobStringToSign(r, "devstoreaccount1"),
            "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Mon, 01 Jan 2024 00:00:00 GMT\n"
            "/devstoreaccount1/devstoreaccount1/c\nrestype:container");
}

TEST(BlobSigning, CanonicalizesHeadersAndQuery) {
  HttpRequest r;
  r.method = "PUT";
  r.url = "https://acct.blob.core.windows.net/c/a%20b?comp=block&BlockId=YWJj%2B%3D%3D";
  r.SetHeader("X-MS-Version", "2021-08-06");
  r.SetHeader("x-ms-meta-zeta", "  padded value ");
  r.SetHeader("If-Match", "\"0x8D\"");
  r.SetHeader("Range", "bytes=0-9");
  r.SetHeader("x-ms-date", kDate);
  r.body = HttpBody::FromString("abc");
  EXPECT_EQ(BlobStringToSign(r, "acct"),
            "PUT\n\n\n3\n\n\n\n\n\"0x8D\"\n\n\nbytes=0-9\n"
            "x-ms-date:Mon, 01 Jan 2024 00:00:00 GMT\nx-ms-meta-zeta:padded value\n"
            "x-ms-version:2021-08-06\n/acct/c/a%20b\nblockid:YWJj+==\ncomp:block");
}

TEST(BlobSigning, ServiceLevelPathAndRepeatedParameters) {
  HttpRequest r;
  r.method = "GET";
  r.url = "http://127.0.0.1:10000?comp=list&b=2&b=1";
  EXPECT_EQ(BlobStringToSign(r, "devstoreaccount1"),
            "GET\n\n\n\n\n\n\n\n\n\n\n\n/devstoreaccount1/\nb:1,2\ncomp:list");
}

TEST(TableSigning, SignsOnlyCompParameterAndPathAsSent) {
  HttpRequest r;
  r.method = "GET";
  r.url =
      "http://127.0.0.1:10002/devstoreaccount1/mytable()?$filter=PartitionKey%20eq%20'p'"
      "&NextPartitionKey=1%212";
  r.SetHeader("x-ms-date", kDate);
  EXPECT_EQ(TableStringToSign(r, "devstoreaccount1"),
            "GET\n\n\nMon, 01 Jan 2024 00:00:00 GMT\n/devstoreaccount1/devstoreaccount1/mytable()");
  r.url = "http://127.0.0.1:10002/devstoreaccount1/mytable?comp=acl";
  EXPECT_EQ(TableStringToSign(r, "devstoreaccount1"),
            "GET\n\n\nMon, 01 Jan 2024 00:00:00 GMT\n"
            "/devstoreaccount1/devstoreaccount1/mytable?comp=acl");
}

TEST(Signer, SasAppendsTokenWithoutAuthorization) {
  StorageAccount a;
  a.account_name = "acct";
  a.sas_token = "sv=2021-08-06&ss=bt&sig=abc%2B%3D";
  auto sign = MakeSigner(a, Service::kBlob, FixedDate());
  HttpRequest r;
  r.method = "GET";
  r.url = "https://acct.blob.core.windows.net/c";
  ASSERT_TRUE(sign(r).ok());
  EXPECT_EQ(r.url, "https://acct.blob.core.windows.net/c?sv=2021-08-06&ss=bt&sig=abc%2B%3D");
  EXPECT_EQ(r.Header("authorization"), "");
  EXPECT_EQ(r.Header("x-ms-date"), kDate);
  ASSERT_TRUE(sign(r).ok());  // signing the same request again must not append twice
  EXPECT_EQ(r.url, "https://acct.blob.core.windows.net/c?sv=2021-08-06&ss=bt&sig=abc%2B%3D");

  HttpRequest q;
  q.method = "GET";
  q.url = "https://acct.blob.core.windows.net/c?restype=container&comp=list";
  ASSERT_TRUE(sign(q).ok());
  EXPECT_EQ(q.url,
            "https://acct.blob.core.windows.net/c?restype=container&comp=list&"
            "sv=2021-08-06&ss=bt&sig=abc%2B%3D");
}

TEST(Signer, ResigningReplacesDateAndAuthorization) {
  int calls = 0;
  auto sign = MakeSigner(DevAccount(), Service::kBlob, [&calls] {
    return "Mon, 01 Jan 2024 00:00:0" + std::to_string(calls++) + " GMT";
  });
  HttpRequest r;
  r.method = "GET";
  r.url = "http://127.0.0.1:10000/devstoreaccount1/c/b";
  ASSERT_TRUE(sign(r).ok());
  std::string first = r.Header("authorization");
  ASSERT_TRUE(sign(r).ok());
  EXPECT_EQ(r.headers.size(), 2u);  // x-ms-date and Authorization, each once
  EXPECT_EQ(r.Header("x-ms-date"), "Mon, 01 Jan 2024 00:00:01 GMT");
  EXPECT_NE(r.Header("authorization"), first);
}

TEST(HttpDate, IsRfc1123Gmt) {
  std::regex format(
      R"((Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) )"
      R"(\d{4} \d\d:\d\d:\d\d GMT)");
  EXPECT_TRUE(std::regex_match(HttpDateNow(), format)) << HttpDateNow();
}

}  // namespace
}  // namespace stampfs
