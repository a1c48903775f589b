// The Blob client without a network: XML bodies, error mapping, block ids,
// and the requests AzureBlobClient builds (through a recording transport).
#include "storage/blob_xml.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "storage/auth.h"
#include "storage/azure_clients.h"

namespace stampfs {
namespace {

constexpr char kListing[] = R"(<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<EnumerationResults ServiceEndpoint="http://127.0.0.1:10000/devstoreaccount1" ContainerName="c">
  <Prefix>dir/</Prefix><Marker/><MaxResults>2</MaxResults><Delimiter>/</Delimiter>
  <Blobs>
    <Blob><Name>dir/a &amp; b &lt;1&gt;.bin</Name>
      <Properties>
        <Creation-Time>Wed, 02 Dec 2026 13:07:26 GMT</Creation-Time>
        <Last-Modified>Wed, 02 Dec 2026 13:07:26 GMT</Last-Modified>
        <Etag>0x1E5C30C9A9C20A0</Etag>
        <Content-Length>2</Content-Length><Content-Type>text/plain</Content-Type>
        <BlobType>BlockBlob</BlobType>
      </Properties>
      <Metadata><author>alice</author><mode>644</mode></Metadata>
    </Blob>
    <Blob><Name> </Name><Properties><Etag>0x1</Etag><Content-Length>0</Content-Length>
      </Properties></Blob>
    <Blob><Name Encoded="true">dir%2Fcr%0D.txt</Name><Properties><Etag>"0x2"</Etag>
      <Content-Length>5</Content-Length></Properties></Blob>
    <BlobPrefix><Name>dir/sub/</Name></BlobPrefix>
  </Blobs>
  <NextMarker>dir/hello.txt</NextMarker>
</EnumerationResults>)";

TEST(BlobXml, ParsesListingWithMetadataPrefixesAndMarker) {
  auto listing = ParseBlobListingXml(kListing);
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  ASSERT_EQ(listing->blobs.size(), 3u);
  const BlobItem& first = listing->blobs[0];
  EXPECT_EQ(first.name, "dir/a & b <1>.bin");
  EXPECT_EQ(first.properties.size, 2u);
  EXPECT_EQ(first.properties.etag, "\"0x1E5C30C9A9C20A0\"");
  EXPECT_EQ(first.properties.last_modified, 1796216846);
  EXPECT_EQ(first.properties.content_type, "text/plain");
  EXPECT_EQ(first.properties.metadata, (BlobMetadata{{"author", "alice"}, {"mode", "644"}}));
  EXPECT_EQ(listing->blobs[1].name, " ");
  EXPECT_TRUE(listing->blobs[1].properties.metadata.empty());
  EXPECT_EQ(listing->blobs[2].name, "dir/cr\r.txt");
  EXPECT_EQ(listing->blobs[2].properties.etag, "\"0x2\"");
  EXPECT_EQ(listing->prefixes, std::vector<std::string>{"dir/sub/"});
  EXPECT_EQ(listing->next_marker, "dir/hello.txt");
}

TEST(BlobXml, ParsesBomPrefixedEmptyListing) {
  std::string body =
      "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults>"
      "<Blobs /><NextMarker /></EnumerationResults>";
  auto listing = ParseBlobListingXml(body);
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  EXPECT_TRUE(listing->blobs.empty());
  EXPECT_TRUE(listing->prefixes.empty());
  EXPECT_EQ(listing->next_marker, "");
}

TEST(BlobXml, MalformedListingIsCorruptionNotACrash) {
  for (const char* body :
       {"", "<", "not xml", "<EnumerationResults><Blobs><Blob>", "<Other/>", "{\"a\":1}",
        "<EnumerationResults><Blobs><Blob><Properties/></Blob></Blobs>"
        "</EnumerationResults>",
        "<EnumerationResults><Blobs><Blob><Name>x</Name><Properties>"
        "<Content-Length>-1</Content-Length></Properties></Blob></Blobs>"
        "</EnumerationResults>"}) {
    auto listing = ParseBlobListingXml(body);
    ASSERT_FALSE(listing.ok()) << body;
    EXPECT_EQ(listing.status().code(), Code::kCorruption) << body;
  }
  std::string truncated(kListing, sizeof(kListing) / 2);
  EXPECT_EQ(ParseBlobListingXml(truncated).status().code(), Code::kCorruption);
}

TEST(BlobXml, ParsesBlockList) {
  auto list = ParseBlockListXml(R"(<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<BlockList><CommittedBlocks><Block><Name>YQ==</Name><Size>4</Size></Block>
<Block><Name>Yg==</Name><Size>5</Size></Block></CommittedBlocks>
<UncommittedBlocks><Block><Name>eA==</Name><Size>2</Size></Block></UncommittedBlocks></BlockList>)");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->committed.size(), 2u);
  EXPECT_EQ(list->committed[1].id, "Yg==");
  EXPECT_EQ(list->committed[1].size, 5u);
  ASSERT_EQ(list->uncommitted.size(), 1u);
  EXPECT_EQ(list->uncommitted[0].id, "eA==");

  auto empty = ParseBlockListXml("<BlockList><CommittedBlocks/></BlockList>");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->committed.empty() && empty->uncommitted.empty());
  EXPECT_EQ(ParseBlockListXml("<BlockList><CommittedBlocks><Block><Name>a</Name></Block>"
                              "</CommittedBlocks></BlockList>")
                .status()
                .code(),
            Code::kCorruption);
  EXPECT_EQ(ParseBlockListXml("garbage").status().code(), Code::kCorruption);
}

TEST(BlobXml, BuildsBlockListInOrder) {
  std::string xml = BuildBlockListXml({{"QQ==", BlockRef::Source::kCommitted},
                                       {"Qg==", BlockRef::Source::kUncommitted},
                                       {"Qw==", BlockRef::Source::kLatest}});
  EXPECT_EQ(xml,
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<BlockList><Committed>QQ==</Committed>"
            "<Uncommitted>Qg==</Uncommitted><Latest>Qw==</Latest></BlockList>\n");
  EXPECT_NE(BuildBlockListXml({}).find("<BlockList></BlockList>"), std::string::npos);
}

TEST(BlobXml, HeaderFormats) {
  EXPECT_EQ(ParseHttpDate("Mon, 01 Jan 2024 00:00:00 GMT"), 1704067200);
  EXPECT_EQ(ParseHttpDate("Mon, 01 Jan 2024 00:00:00"), std::nullopt);
  EXPECT_EQ(ParseHttpDate("Mon, 31 Feb 2024 00:00:00 GMT"), std::nullopt);
  EXPECT_EQ(ParseHttpDate(""), std::nullopt);
  EXPECT_EQ(QuoteEtag("0x1"), "\"0x1\"");
  EXPECT_EQ(QuoteEtag("\"0x1\""), "\"0x1\"");
  EXPECT_EQ(QuoteEtag(""), "");
  EXPECT_EQ(ParseContentRangeTotal("bytes 0-4/11"), 11u);
  EXPECT_EQ(ParseContentRangeTotal("bytes 0--1/0"), 0u);
  EXPECT_EQ(ParseContentRangeTotal("bytes */11"), 11u);
  EXPECT_EQ(ParseContentRangeTotal("bytes 0-4/*"), std::nullopt);
  EXPECT_EQ(ParseUint64("12x"), std::nullopt);
}

TEST(BlockId, FixedWidthCanonicalBase64) {
  for (uint64_t index : {uint64_t{0}, uint64_t{1}, uint64_t{49999}, UINT64_MAX}) {
    std::string id = BlockIdFor(index);
    EXPECT_EQ(id.size(), 44u) << index;
    auto raw = Base64Decode(id);
    ASSERT_TRUE(raw.ok());
    EXPECT_EQ(raw->size(), 32u);
    EXPECT_EQ(Base64Encode(*raw), id);  // canonical: re-encoding reproduces it
  }
  EXPECT_EQ(BlockIdFor(0), "MDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDA=");
  EXPECT_EQ(*Base64Decode(BlockIdFor(255)), "000000000000000000000000000000ff");
  EXPECT_NE(BlockIdFor(1), BlockIdFor(2));
}

HttpResponse Response(int status, HttpHeaders headers = {}, std::string body = {}) {
  HttpResponse response;
  response.status = status;
  response.headers = std::move(headers);
  response.body = std::move(body);
  return response;
}

Status Mapped(int status, const std::string& code, std::string body = {}) {
  HttpHeaders headers;
  if (!code.empty()) headers["x-ms-error-code"] = code;
  return StatusFromResponse(Response(status, headers, std::move(body)), "op");
}

TEST(AzureErrors, MapsStatusesAndCodes) {
  EXPECT_EQ(Mapped(404, "BlobNotFound").code(), Code::kNotFound);
  EXPECT_EQ(Mapped(409, "BlobAlreadyExists").code(), Code::kAlreadyExists);
  EXPECT_EQ(Mapped(409, "ContainerAlreadyExists").code(), Code::kAlreadyExists);
  EXPECT_EQ(Mapped(409, "EntityAlreadyExists").code(), Code::kAlreadyExists);
  EXPECT_EQ(Mapped(409, "LeaseAlreadyPresent").code(), Code::kConflict);
  EXPECT_EQ(Mapped(409, "").code(), Code::kConflict);
  EXPECT_EQ(Mapped(412, "ConditionNotMet").code(), Code::kPreconditionFailed);
  EXPECT_EQ(Mapped(403, "AuthorizationFailure").code(), Code::kAuth);
  EXPECT_EQ(Mapped(403, "AuthenticationFailed").code(), Code::kAuth);
  EXPECT_EQ(Mapped(401, "").code(), Code::kAuth);
  EXPECT_EQ(Mapped(413, "RequestBodyTooLarge").code(), Code::kTooLarge);
  EXPECT_EQ(Mapped(400, "InvalidBlockList").code(), Code::kInvalidArgument);
  EXPECT_EQ(Mapped(400, "EntityTooLarge").code(), Code::kTooLarge);
  EXPECT_EQ(Mapped(400, "PropertyValueTooLarge").code(), Code::kTooLarge);
  EXPECT_EQ(Mapped(400, "RequestBodyTooLarge").code(), Code::kTooLarge);
  EXPECT_EQ(Mapped(408, "").code(), Code::kTimeout);
  EXPECT_EQ(Mapped(429, "").code(), Code::kThrottled);
  EXPECT_EQ(Mapped(503, "ServerBusy").code(), Code::kThrottled);
  EXPECT_EQ(Mapped(500, "InternalError").code(), Code::kInternal);
  EXPECT_EQ(Mapped(502, "").code(), Code::kInternal);
  Status s = Mapped(404, "BlobNotFound");
  EXPECT_EQ(s.http_status(), 404);
  EXPECT_EQ(s.service_code(), "BlobNotFound");
  EXPECT_EQ(s.message(), "op: HTTP 404");
}

TEST(AzureErrors, CodeAndMessageFromXmlBodyWithoutRequestIdLines) {
  Status s =
      Mapped(404, "",
             "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>BlobNotFound"
             "</Code><Message>The specified blob does not exist.\nRequestId:1234\n"
             "Time:2024-01-01T00:00:00.000Z</Message></Error>");
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.service_code(), "BlobNotFound");
  EXPECT_EQ(s.message(), "op: The specified blob does not exist.");
  // The header wins over the body.
  EXPECT_EQ(Mapped(409, "BlobAlreadyExists", "<Error><Code>Other</Code></Error>").service_code(),
            "BlobAlreadyExists");
}

TEST(AzureErrors, CodeAndMessageFromJsonBody) {
  Status s = Mapped(409, "",
                    R"({"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US",)"
                    R"("value":"The specified entity already exists.\nRequestId:x\nTime:y"}}})");
  EXPECT_EQ(s.code(), Code::kAlreadyExists);
  EXPECT_EQ(s.service_code(), "EntityAlreadyExists");
  EXPECT_EQ(s.message(), "op: The specified entity already exists.");
  EXPECT_EQ(Mapped(400, "", R"({"odata.error":{"code":"PropertyValueTooLarge"}})").code(),
            Code::kTooLarge);
}

TEST(AzureErrors, MalformedBodiesDoNotCrash) {
  for (const char* body :
       {"{", "{\"odata.error\":5}", "{\"odata.error\":{\"code\":7}}", "[1,2]", "<Error><Code>",
        "<html>502 Bad Gateway</html>", "\xff\xfe\x00", "{\"odata.error\":{\"message\":[1]}}"}) {
    Status s = Mapped(502, "", body);
    EXPECT_EQ(s.code(), Code::kInternal) << body;
    EXPECT_FALSE(s.message().empty());
  }
}

TEST(AzureErrors, AuthMessagesSayWhatIsWrong) {
  Status key = Mapped(403, "AuthorizationFailure");
  EXPECT_NE(key.message().find("authentication failed"), std::string::npos) << key.ToString();
  Status sas = Mapped(403, "AuthorizationPermissionMismatch",
                      "<Error><Code>AuthorizationPermissionMismatch</Code><Message>This request is "
                      "not authorized to perform this operation using this permission.</Message>"
                      "</Error>");
  EXPECT_EQ(sas.code(), Code::kAuth);
  EXPECT_NE(sas.message().find("permission denied"), std::string::npos) << sas.ToString();
  EXPECT_NE(sas.message().find("read-only SAS"), std::string::npos) << sas.ToString();
}

// ---- Request building through a recording transport ----

class RecordingTransport : public HttpTransport {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  explicit RecordingTransport(Handler handler) : handler_(std::move(handler)) {}

  Result<HttpResponse> Send(const HttpRequest& request, std::chrono::milliseconds) override {
    requests.push_back(request);
    HttpResponse response = handler_(request);
    if (response.status / 100 == 2 && request.sink && !response.body.empty()) {
      if (!request.sink(0, response.body.data(), response.body.size())) {
        return Status(Code::kTransport, "aborted by sink");
      }
      response.body.clear();
    }
    return response;
  }

  std::vector<HttpRequest> requests;

 private:
  Handler handler_;
};

StorageAccount DevAccount() {
  StorageAccount account;
  account.account_name = "devstoreaccount1";
  account.account_key =
      "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
  account.blob_endpoint = "http://127.0.0.1:10000/devstoreaccount1";
  account.table_endpoint = "http://127.0.0.1:10002/devstoreaccount1";
  return account;
}

struct Client {
  std::shared_ptr<RecordingTransport> transport;
  std::unique_ptr<BlobStore> store;
};

Client MakeClient(RecordingTransport::Handler handler) {
  Client client;
  client.transport = std::make_shared<RecordingTransport>(std::move(handler));
  ClientOptions options;
  options.transport = client.transport;
  options.retry.max_attempts = 1;
  options.now = [] { return std::string("Mon, 01 Jan 2024 00:00:00 GMT"); };
  client.store = MakeAzureBlobClient(DevAccount(), options);
  return client;
}

constexpr char kBlobUrl[] = "http://127.0.0.1:10000/devstoreaccount1/c/dir/f";

HttpResponse BlobGet(const HttpRequest& request, const std::string& content) {
  HttpHeaders headers = {{"etag", "\"0x1\""},
                         {"x-ms-meta-mode", "644"},
                         {"last-modified", "Mon, 01 Jan 2024 00:00:00 GMT"}};
  std::string range = request.Header("x-ms-range");
  if (range.empty()) {
    headers["content-length"] = std::to_string(content.size());
    return Response(200, headers, request.method == "HEAD" ? "" : content);
  }
  uint64_t start = std::stoull(range.substr(6));
  if (start >= content.size()) {
    return Response(416, {{"x-ms-error-code", "InvalidRange"},
                          {"content-range", "bytes */" + std::to_string(content.size())}});
  }
  std::string part = content.substr(start, 3);
  headers["content-range"] = "bytes " + std::to_string(start) + "-" +
                             std::to_string(start + part.size() - 1) + "/" +
                             std::to_string(content.size());
  return Response(206, headers, part);
}

TEST(AzureBlobRequests, WholeReadSendsNoRangeAndStreamsToTheSink) {
  auto client = MakeClient([](const HttpRequest& r) { return BlobGet(r, "hello"); });
  auto data = client.store->ReadToString("c", "dir/f");
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(*data, "hello");
  ASSERT_EQ(client.transport->requests.size(), 1u);
  const HttpRequest& sent = client.transport->requests[0];
  EXPECT_EQ(sent.method, "GET");
  EXPECT_EQ(sent.url, kBlobUrl);
  EXPECT_EQ(sent.Header("x-ms-range"), "");
  EXPECT_EQ(sent.Header("x-ms-version"), kBlobApiVersion);
  EXPECT_NE(sent.Header("Authorization"), "");
}

TEST(AzureBlobRequests, RangedReadIsPinnedAndReportsTheWholeSize) {
  auto client = MakeClient([](const HttpRequest& r) { return BlobGet(r, "0123456789"); });
  std::string got;
  auto result = client.store->Read("c", "dir/f", 4, 3, Condition::IfMatch("\"0x1\""),
                                   [&got](uint64_t, const char* data, size_t len) {
                                     got.append(data, len);
                                     return true;
                                   });
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(got, "456");
  EXPECT_EQ(result->bytes, 3u);
  EXPECT_EQ(result->properties.size, 10u);
  EXPECT_EQ(result->properties.etag, "\"0x1\"");
  EXPECT_EQ(result->properties.metadata.at("mode"), "644");
  const HttpRequest& sent = client.transport->requests.at(0);
  EXPECT_EQ(sent.Header("x-ms-range"), "bytes=4-6");
  EXPECT_EQ(sent.Header("If-Match"), "\"0x1\"");
}

TEST(AzureBlobRequests, ReadPastTheEndReturnsNothingWithTheSize) {
  auto client = MakeClient([](const HttpRequest& r) { return BlobGet(r, "0123456789"); });
  auto result = client.store->Read("c", "dir/f", 10, 4, Condition::IfMatch("\"0x1\""), {});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->bytes, 0u);
  EXPECT_EQ(result->properties.size, 10u);
  ASSERT_EQ(client.transport->requests.size(), 2u);
  EXPECT_EQ(client.transport->requests[1].method, "HEAD");
  EXPECT_EQ(client.transport->requests[1].Header("If-Match"), "\"0x1\"");
}

TEST(AzureBlobRequests, AzuriteStyleEmptyRangeAtTheEndReadsNothing) {
  auto client = MakeClient([](const HttpRequest&) {
    return Response(206, {{"content-range", "bytes 10-9/10"}, {"etag", "\"0x1\""}});
  });
  auto result = client.store->Read("c", "dir/f", 10, 0, Condition::None(), {});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->bytes, 0u);
  EXPECT_EQ(result->properties.size, 10u);
  EXPECT_EQ(client.transport->requests.at(0).Header("x-ms-range"), "bytes=10-");
}

TEST(AzureBlobRequests, EmptyBlobWholeReadNeedsNoRange) {
  auto client = MakeClient([](const HttpRequest& r) { return BlobGet(r, ""); });
  auto result = client.store->ReadToString("c", "dir/f");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(*result, "");
  ASSERT_EQ(client.transport->requests.size(), 1u);
  EXPECT_EQ(client.transport->requests[0].Header("x-ms-range"), "");
}

TEST(AzureBlobRequests, CreateOnlyPutSendsIfNoneMatchAndMapsExists) {
  auto client = MakeClient([](const HttpRequest&) {
    return Response(409, {{"x-ms-error-code", "BlobAlreadyExists"}});
  });
  auto etag =
      client.store->PutString("c", "dir/f", "data", {{"mode", "644"}}, Condition::IfNoneMatchAny());
  EXPECT_EQ(etag.status().code(), Code::kAlreadyExists);
  const HttpRequest& sent = client.transport->requests.at(0);
  EXPECT_EQ(sent.method, "PUT");
  EXPECT_EQ(sent.Header("If-None-Match"), "*");
  EXPECT_EQ(sent.Header("x-ms-blob-type"), "BlockBlob");
  EXPECT_EQ(sent.Header("Content-Type"), "application/octet-stream");
  EXPECT_EQ(sent.Header("x-ms-meta-mode"), "644");
  EXPECT_EQ(sent.body.size, 4u);
}

TEST(AzureBlobRequests, ConditionalWritesCarryIfMatch) {
  auto client = MakeClient([](const HttpRequest&) {
    return Response(412, {{"x-ms-error-code", "ConditionNotMet"}});
  });
  auto cond = Condition::IfMatch("\"0x9\"");
  EXPECT_EQ(client.store->PutString("c", "f", "x", {}, cond).status().code(),
            Code::kPreconditionFailed);
  EXPECT_EQ(client.store->PutBlockList("c", "f", {}, {}, cond).status().code(),
            Code::kPreconditionFailed);
  EXPECT_EQ(client.store->SetMetadata("c", "f", {}, cond).status().code(),
            Code::kPreconditionFailed);
  EXPECT_EQ(client.store->Delete("c", "f", cond).code(), Code::kPreconditionFailed);
  ASSERT_EQ(client.transport->requests.size(), 4u);
  for (const HttpRequest& sent : client.transport->requests) {
    EXPECT_EQ(sent.Header("If-Match"), "\"0x9\"") << sent.method << " " << sent.url;
  }
}

TEST(AzureBlobRequests, BlockRequestsEncodeIdsAndResendProperties) {
  auto client = MakeClient([](const HttpRequest& r) {
    return Response(201, {{"etag", "\"0x5\""}}, r.Header("x-ms-version").empty() ? "bad" : "");
  });
  ASSERT_TRUE(client.store->PutBlock("c", "f", "ab+/cd==", HttpBody::FromString("xyz")).ok());
  auto etag = client.store->PutBlockList("c", "f", {{"ab+/cd==", BlockRef::Source::kLatest}},
                                         {{"mode", "600"}}, Condition::None());
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  EXPECT_EQ(*etag, "\"0x5\"");
  const auto& sent = client.transport->requests;
  EXPECT_EQ(sent[0].url,
            "http://127.0.0.1:10000/devstoreaccount1/c/f?comp=block&blockid=ab%2B%2Fcd%3D%3D");
  EXPECT_EQ(sent[1].url, "http://127.0.0.1:10000/devstoreaccount1/c/f?comp=blocklist");
  EXPECT_EQ(sent[1].Header("x-ms-meta-mode"), "600");
  EXPECT_EQ(sent[1].Header("x-ms-blob-content-type"), "application/octet-stream");
  std::string body(sent[1].body.size, '\0');
  sent[1].body.reader(0, body.data(), body.size());
  EXPECT_NE(body.find("<Latest>ab+/cd==</Latest>"), std::string::npos) << body;
}

TEST(AzureBlobRequests, InvalidMetadataIsRejectedBeforeSending) {
  auto client = MakeClient([](const HttpRequest&) { return Response(201, {{"etag", "\"1\""}}); });
  for (const BlobMetadata& bad : std::vector<BlobMetadata>{{{"Mode", "1"}},
                                                           {{"a_b", "1"}, {"a1", "1"}},
                                                           {{"1a", "1"}},
                                                           {{"ok", "line\nbreak"}},
                                                           {{"ok", " padded"}},
                                                           {{"ok", "caf\xc3\xa9"}}}) {
    EXPECT_EQ(client.store->PutString("c", "f", "x", bad, Condition::None()).status().code(),
              Code::kInvalidArgument);
    EXPECT_EQ(client.store->SetMetadata("c", "f", bad, Condition::None()).status().code(),
              Code::kInvalidArgument);
  }
  EXPECT_EQ(
      client.store->PutString("c", "f", "x", {{"big", std::string(9000, 'v')}}, Condition::None())
          .status()
          .code(),
      Code::kTooLarge);
  EXPECT_TRUE(client.transport->requests.empty());
}

TEST(AzureBlobRequests, NamesAndQueryValuesArePercentEncoded) {
  auto client = MakeClient([](const HttpRequest&) {
    return Response(200, {}, "<EnumerationResults><Blobs/><NextMarker/></EnumerationResults>");
  });
  ListOptions options;
  options.prefix = "a b/";
  options.delimiter = "/";
  options.include_metadata = true;
  ASSERT_TRUE(client.store->ListBlobsPage("c", options, "m=1+2").ok());
  ASSERT_TRUE(client.store->GetProperties("c", "d/sp ace+%#?'\xc3\xa9").ok());
  const auto& sent = client.transport->requests;
  EXPECT_EQ(sent[0].url,
            "http://127.0.0.1:10000/devstoreaccount1/c?restype=container&comp=list&prefix=a%20b%2F"
            "&delimiter=%2F&marker=m%3D1%2B2&maxresults=5000&include=metadata");
  EXPECT_EQ(sent[1].url,
            "http://127.0.0.1:10000/devstoreaccount1/c/d/sp%20ace%2B%25%23%3F%27%C3%A9");
}

TEST(AzureBlobRequests, ListBlobsFollowsEveryMarker) {
  auto client = MakeClient([](const HttpRequest& r) {
    bool first = r.url.find("marker=") == std::string::npos;
    std::string blob = first ? "a" : "b";
    return Response(200, {},
                    "<EnumerationResults><Blobs><Blob><Name>" + blob +
                        "</Name><Properties><Content-Length>1</Content-Length><Etag>0x1</Etag>"
                        "</Properties></Blob></Blobs><NextMarker>" +
                        (first ? "a" : "") + "</NextMarker></EnumerationResults>");
  });
  auto listing = client.store->ListBlobs("c", {});
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  ASSERT_EQ(listing->blobs.size(), 2u);
  EXPECT_EQ(listing->blobs[1].name, "b");
  EXPECT_EQ(client.transport->requests.size(), 2u);
}

TEST(AzureBlobRequests, PendingCopyIsPolledUntilSuccess) {
  int heads = 0;
  auto client = MakeClient([&heads](const HttpRequest& r) {
    if (r.method == "PUT") {
      return Response(
          202, {{"x-ms-copy-status", "pending"}, {"x-ms-copy-id", "id1"}, {"etag", "\"0x1\""}});
    }
    ++heads;
    return Response(200, {{"x-ms-copy-status", heads < 2 ? "pending" : "success"},
                          {"x-ms-copy-id", "id1"},
                          {"etag", "\"0x2\""}});
  });
  auto etag = client.store->Copy("c", "src a", "dst", Condition::IfNoneMatchAny(), "\"0x7\"");
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  EXPECT_EQ(*etag, "\"0x2\"");
  EXPECT_EQ(heads, 2);
  const HttpRequest& put = client.transport->requests.at(0);
  EXPECT_EQ(put.Header("x-ms-copy-source"), "http://127.0.0.1:10000/devstoreaccount1/c/src%20a");
  EXPECT_EQ(put.Header("x-ms-source-if-match"), "\"0x7\"");
  EXPECT_EQ(put.Header("If-None-Match"), "*");
}

TEST(AzureBlobRequests, TransportFailuresKeepTheirCodeAndGainContext) {
  class Failing : public HttpTransport {
    Result<HttpResponse> Send(const HttpRequest&, std::chrono::milliseconds) override {
      return Status(Code::kTransport, "connection refused");
    }
  };
  ClientOptions options;
  options.transport = std::make_shared<Failing>();
  options.retry.max_attempts = 1;
  auto store = MakeAzureBlobClient(DevAccount(), options);
  Status s = store->GetContainerProperties("c");
  EXPECT_EQ(s.code(), Code::kTransport);
  EXPECT_NE(s.message().find("container c"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace stampfs
