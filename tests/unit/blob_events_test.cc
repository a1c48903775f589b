// Event Grid blob events as a storage queue holds them: both schemas, base64
// or plain, and what is not such an event.
#include "storage/blob_events.h"

#include <gtest/gtest.h>

#include "storage/auth.h"

namespace stampfs {
namespace {

// As Event Grid's storage-queue destination writes a BlobCreated event of
// container "photos", blob "2026/a b.jpg" (Event Grid schema).
const char* kCreated = R"({
  "topic": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Storage/storageAccounts/acct",
  "subject": "/blobServices/default/containers/photos/blobs/2026/a b.jpg",
  "eventType": "Microsoft.Storage.BlobCreated",
  "id": "831e1650-001e-001b-66ab-eeb76e069631",
  "data": {"api": "PutBlockList", "clientRequestId": "6d79dbfb", "requestId": "831e1650",
           "eTag": "0x8D4BCC2E4835CD0", "contentType": "image/jpeg", "contentLength": 524288,
           "blobType": "BlockBlob", "url": "https://acct.blob.core.windows.net/photos/2026/a b.jpg",
           "sequencer": "00000000000004420000000000028963",
           "storageDiagnostics": {"batchId": "b68529f3"}},
  "dataVersion": "", "metadataVersion": "1", "eventTime": "2026-12-06T05:00:00.0Z"})";

const char* kDeletedCloudEvent = R"({
  "specversion": "1.0", "type": "Microsoft.Storage.BlobDeleted",
  "source": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Storage/storageAccounts/acct",
  "subject": "/blobServices/default/containers/photos/blobs/old.txt",
  "id": "4b2c", "time": "2026-12-06T05:00:01Z",
  "data": {"api": "DeleteBlob", "contentType": "text/plain", "blobType": "BlockBlob",
           "url": "https://acct.blob.core.windows.net/photos/old.txt",
           "sequencer": "0000000000000281000000000002F5CA"}})";

TEST(BlobEvents, ABase64EventGridBlobCreatedEvent) {
  auto e = ParseBlobEventMessage(Base64Encode(kCreated));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->kind, BlobEvent::Kind::kCreated);
  EXPECT_EQ(e->container, "photos");
  EXPECT_EQ(e->blob, "2026/a b.jpg");
  EXPECT_EQ(e->etag, "0x8D4BCC2E4835CD0");
  EXPECT_EQ(e->sequencer, "00000000000004420000000000028963");
  EXPECT_EQ(e->api, "PutBlockList");
  EXPECT_EQ(e->content_length, 524288u);
  EXPECT_EQ(e->id, "831e1650-001e-001b-66ab-eeb76e069631");
}

TEST(BlobEvents, ACloudEventsBlobDeletedEventInPlainJson) {
  auto e = ParseBlobEventMessage(kDeletedCloudEvent);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->kind, BlobEvent::Kind::kDeleted);
  EXPECT_EQ(e->container, "photos");
  EXPECT_EQ(e->blob, "old.txt");
  EXPECT_EQ(e->etag, "");
  EXPECT_EQ(e->api, "DeleteBlob");
}

TEST(BlobEvents, AnArrayOfOneEventIsThatEvent) {
  auto e = ParseBlobEventMessage(Base64Encode(std::string("[") + kCreated + "]"));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->blob, "2026/a b.jpg");
}

TEST(BlobEvents, OtherEventTypesAreNotSupportedAndGarbageIsInvalid) {
  const std::string renamed = R"({"eventType": "Microsoft.Storage.BlobRenamed",
    "subject": "/blobServices/default/containers/c/blobs/x", "data": {}})";
  EXPECT_TRUE(ParseBlobEventMessage(renamed).status().Is(Code::kNotSupported));
  for (const std::string& bad :
       {std::string(""), std::string("not base64 !"), Base64Encode("{not json"),
        Base64Encode("[1, 2]"), Base64Encode("42"), Base64Encode(R"({"data": {}})"),
        Base64Encode(R"({"eventType": "Microsoft.Storage.BlobCreated", "subject": "/x"})"),
        Base64Encode(R"({"eventType": "Microsoft.Storage.BlobCreated",
                         "subject": "/blobServices/default/containers/c/blobs/"})")}) {
    EXPECT_TRUE(ParseBlobEventMessage(bad).status().Is(Code::kInvalidArgument)) << bad;
  }
}

TEST(BlobEvents, SequencersOrderByStringComparison) {
  EXPECT_LT(
      CompareSequencers("0000000000000281000000000002F5CA", "00000000000004420000000000028963"), 0);
  EXPECT_GT(
      CompareSequencers("00000000000004420000000000028963", "0000000000000281000000000002F5CA"), 0);
  EXPECT_EQ(CompareSequencers("00A", "00A"), 0);
}

}  // namespace
}  // namespace stampfs
