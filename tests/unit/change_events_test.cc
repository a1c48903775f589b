// The change-event consumer on the fake queue: applied events are deleted,
// what asks for nothing is dropped, failures come back and end in the poison
// queue, garbage goes there at once, and an empty queue is polled less.
#include "fs/admin/change_events.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "storage/auth.h"

namespace stampfs {
namespace {

std::string Event(const std::string& type, const std::string& container, const std::string& blob) {
  return Base64Encode(R"({"eventType": ")" + type +
                      R"(", "subject": "/blobServices/default/containers/)" + container +
                      "/blobs/" + blob +
                      R"(", "id": "e1", "data": {"eTag": "0x1", "sequencer": "01"}})");
}

class ChangeEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(queue_->CreateQueue("events").ok());
    options_.queue = "events";
    options_.container = "photos";
  }
  ChangeEvents Consumer() {
    return ChangeEvents(*queue_, options_, [this](const BlobEvent& e) {
      seen_.push_back(e);
      return fail_ ? Status(Code::kTimeout, "the blob could not be read") : Status::Ok();
    });
  }
  size_t Left(const std::string& queue) {
    now_ms_ += 3600 * 1000;  // every hidden message visible again
    auto peek = queue_->PeekMessages(queue, 32);
    EXPECT_TRUE(peek.ok()) << peek.status().ToString();
    return peek.ok() ? peek->size() : 0;
  }

  std::atomic<int64_t> now_ms_{1000};
  std::unique_ptr<QueueStore> queue_ = MakeFakeQueueStore([this] { return now_ms_.load(); });
  ChangeEventOptions options_;
  std::vector<BlobEvent> seen_;
  bool fail_ = false;
};

TEST_F(ChangeEventsTest, AnAppliedEventIsDeletedAndOthersAskForNothing) {
  ASSERT_TRUE(
      queue_->PutMessage("events", Event("Microsoft.Storage.BlobCreated", "photos", "a/b.jpg"))
          .ok());
  ASSERT_TRUE(
      queue_->PutMessage("events", Event("Microsoft.Storage.BlobCreated", "other", "x")).ok());
  ASSERT_TRUE(
      queue_->PutMessage("events", Event("Microsoft.Storage.BlobTierChanged", "photos", "y")).ok());
  ChangeEvents c = Consumer();
  ASSERT_TRUE(c.Prepare().ok());
  auto taken = c.PollOnce();
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  EXPECT_EQ(*taken, 3u);
  ASSERT_EQ(seen_.size(), 1u) << "only this container's blob changes are applied";
  EXPECT_EQ(seen_[0].blob, "a/b.jpg");
  EXPECT_EQ(c.stats().applied, 1u);
  EXPECT_EQ(c.stats().ignored, 2u);
  EXPECT_EQ(Left("events"), 0u) << "all three deleted";
}

TEST_F(ChangeEventsTest, AFailingEventComesBackAndGoesToThePoisonQueueAtItsFifthTry) {
  ASSERT_TRUE(
      queue_->PutMessage("events", Event("Microsoft.Storage.BlobDeleted", "photos", "z")).ok());
  ChangeEvents c = Consumer();
  ASSERT_TRUE(c.Prepare().ok());
  fail_ = true;
  for (int i = 1; i <= 5; ++i) {
    auto taken = c.PollOnce();
    ASSERT_TRUE(taken.ok());
    EXPECT_EQ(*taken, 1u) << "try " << i;
    auto hidden = c.PollOnce();
    ASSERT_TRUE(hidden.ok());
    EXPECT_EQ(*hidden, 0u) << "hidden for its visibility timeout";
    now_ms_ += 31 * 1000;
  }
  EXPECT_EQ(seen_.size(), 5u);
  EXPECT_EQ(c.stats().retried, 4u);
  EXPECT_EQ(c.stats().poisoned, 1u);
  EXPECT_EQ(Left("events"), 0u);
  EXPECT_EQ(Left("events-poison"), 1u);
}

TEST_F(ChangeEventsTest, AMessageThatIsNoEventGoesToThePoisonQueueAtOnce) {
  ASSERT_TRUE(queue_->PutMessage("events", "forged: not an event").ok());
  ChangeEvents c = Consumer();
  ASSERT_TRUE(c.Prepare().ok());
  ASSERT_TRUE(c.PollOnce().ok());
  EXPECT_TRUE(seen_.empty());
  EXPECT_EQ(c.stats().poisoned, 1u);
  EXPECT_EQ(Left("events"), 0u);
  EXPECT_EQ(Left("events-poison"), 1u);
}

TEST_F(ChangeEventsTest, AnEmptyQueueIsPolledLessUpToPollMaxAndABusyOneAtPollMin) {
  ChangeEvents c = Consumer();
  using std::chrono::milliseconds;
  EXPECT_EQ(c.NextInterval(size_t{0}), milliseconds(400));
  EXPECT_EQ(c.NextInterval(size_t{0}), milliseconds(800));
  for (int i = 0; i < 10; ++i) c.NextInterval(size_t{0});
  EXPECT_EQ(c.NextInterval(size_t{0}), milliseconds(5000)) << "at most one request per 5 s idle";
  EXPECT_EQ(c.NextInterval(Status(Code::kTimeout, "away")), milliseconds(5000));
  EXPECT_EQ(c.NextInterval(size_t{3}), milliseconds(200)) << "busy: back to 0.2 s";
}

TEST_F(ChangeEventsTest, TheThreadAppliesWhatArrives) {
  options_.poll_min = std::chrono::milliseconds(10);
  options_.poll_max = std::chrono::milliseconds(20);
  std::atomic<int> applied{0};
  ChangeEvents c(*queue_, options_, [&](const BlobEvent&) {
    applied++;
    return Status::Ok();
  });
  c.Start();
  ASSERT_TRUE(
      queue_->PutMessage("events", Event("Microsoft.Storage.BlobCreated", "photos", "n")).ok());
  for (int i = 0; i < 300 && applied.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(applied.load(), 1);
}

}  // namespace
}  // namespace stampfs
