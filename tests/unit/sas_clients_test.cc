// The Azure clients under a container SAS and a table SAS: no container- or
// table-level requests (which such a SAS cannot sign), existence by listing.
#include <gtest/gtest.h>

#include "storage/azure_clients.h"
#include "storage/connection_string.h"

namespace stampfs {
namespace {

class Recorder : public HttpTransport {
 public:
  Result<HttpResponse> Send(const HttpRequest& request, std::chrono::milliseconds) override {
    sent.push_back(request);
    HttpResponse r;
    r.status = 200;
    r.body = request.url.find("comp=list") != std::string::npos
                 ? "<?xml version=\"1.0\"?><EnumerationResults><Blobs/></EnumerationResults>"
                 : "{\"value\":[]}";
    return r;
  }
  std::vector<HttpRequest> sent;
};

StorageAccount SasAccount() {
  StorageAccount a;
  a.account_name = "acct";
  a.sas_token = "sv=2019-02-02&sr=c&sp=racwdl&sig=x";
  a.table_sas_token = "sv=2019-02-02&tn=fsbox&sp=raud&sig=y";
  a.blob_endpoint = "https://acct.blob.core.windows.net";
  a.table_endpoint = "https://acct.table.core.windows.net";
  return a;
}

TEST(SasClients, AContainerSasChecksTheContainerByListingInsteadOfCreatingIt) {
  auto transport = std::make_shared<Recorder>();
  ClientOptions options;
  options.transport = transport;
  auto blobs = MakeAzureBlobClient(SasAccount(), options);
  EXPECT_TRUE(blobs->CreateContainer("box").Is(Code::kAlreadyExists));
  EXPECT_TRUE(blobs->GetContainerProperties("box").ok());
  ASSERT_EQ(transport->sent.size(), 2u);
  for (const HttpRequest& r : transport->sent) {
    EXPECT_EQ(r.method, "GET");
    EXPECT_NE(r.url.find("comp=list"), std::string::npos) << r.url;
    EXPECT_NE(r.url.find("sr=c"), std::string::npos) << r.url;
  }
}

TEST(SasClients, ATableSasChecksTheTableByQueryingInsteadOfCreatingItAndSignsTableRequests) {
  auto transport = std::make_shared<Recorder>();
  ClientOptions options;
  options.transport = transport;
  auto table = MakeAzureTableClient(SasAccount(), options);
  EXPECT_TRUE(table->CreateTable("fsbox").Is(Code::kAlreadyExists));
  ASSERT_EQ(transport->sent.size(), 1u);
  EXPECT_EQ(transport->sent[0].method, "GET");
  EXPECT_NE(transport->sent[0].url.find("fsbox()"), std::string::npos) << transport->sent[0].url;
  EXPECT_NE(transport->sent[0].url.find("tn=fsbox"), std::string::npos);
  EXPECT_EQ(transport->sent[0].url.find("sr=c"), std::string::npos);
}

}  // namespace
}  // namespace stampfs
