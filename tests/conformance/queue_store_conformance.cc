#include "conformance/queue_store_conformance.h"

#include <chrono>
#include <random>
#include <set>
#include <thread>

namespace stampfs {
namespace {

std::string RandomSuffix() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::to_string(rng() % 1000000000000ull);
}

std::set<std::string> Texts(const std::vector<QueueMessage>& messages) {
  std::set<std::string> out;
  for (const QueueMessage& m : messages) out.insert(m.text);
  return out;
}

}  // namespace

std::string QueueStoreFactoryName(const ::testing::TestParamInfo<QueueStoreFactory>& info) {
  return info.param.name;
}

void QueueStoreConformance::SetUp() {
  store_ = GetParam().make();
  ASSERT_NE(store_, nullptr);
  queue_ = "conf-" + RandomSuffix();
  Status created = store_->CreateQueue(queue_);
  ASSERT_TRUE(created.ok()) << created.ToString();
}

TEST_P(QueueStoreConformance, CreatingAQueueTwiceIsFine) {
  Status again = store_->CreateQueue(queue_);
  EXPECT_TRUE(again.ok()) << again.ToString();
}

TEST_P(QueueStoreConformance, BadQueueNamesAreRefusedBeforeAnyRequest) {
  for (const char* bad : {"Upper", "a", "double--hyphen", "-lead", "under_score"}) {
    EXPECT_TRUE(store_->CreateQueue(bad).Is(Code::kInvalidArgument)) << bad;
  }
}

TEST_P(QueueStoreConformance, AMessageTakenIsHiddenUntilDeletedAndTextSurvivesXml) {
  const std::string text = "<a href=\"x\">&amp; 'q' \xC3\xA9</a>";
  ASSERT_TRUE(store_->PutMessage(queue_, text).ok());
  auto got = store_->GetMessages(queue_, 32, std::chrono::seconds(30));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].text, text);
  EXPECT_EQ((*got)[0].dequeue_count, 1);
  EXPECT_FALSE((*got)[0].pop_receipt.empty());
  auto hidden = store_->GetMessages(queue_, 32, std::chrono::seconds(30));
  ASSERT_TRUE(hidden.ok());
  EXPECT_TRUE(hidden->empty()) << "hidden for its visibility timeout";
  auto peeked = store_->PeekMessages(queue_, 32);
  ASSERT_TRUE(peeked.ok());
  EXPECT_TRUE(peeked->empty()) << "peek sees only visible messages";
  EXPECT_TRUE(store_->DeleteMessage(queue_, (*got)[0].id, (*got)[0].pop_receipt).ok());
  Status twice = store_->DeleteMessage(queue_, (*got)[0].id, (*got)[0].pop_receipt);
  EXPECT_TRUE(twice.Is(Code::kNotFound)) << twice.ToString();
}

TEST_P(QueueStoreConformance, AMessageNotDeletedComesBackWithAHigherDequeueCount) {
  ASSERT_TRUE(store_->PutMessage(queue_, "again").ok());
  auto first = store_->GetMessages(queue_, 1, std::chrono::seconds(1));
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 1u);
  std::vector<QueueMessage> second;
  for (int i = 0; i < 40 && second.empty(); ++i) {  // visible again after 1 s
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto r = store_->GetMessages(queue_, 1, std::chrono::seconds(30));
    ASSERT_TRUE(r.ok());
    second = *r;
  }
  ASSERT_EQ(second.size(), 1u) << "the message came back";
  EXPECT_EQ(second[0].id, (*first)[0].id);
  EXPECT_EQ(second[0].dequeue_count, 2);
  Status stale = store_->DeleteMessage(queue_, (*first)[0].id, (*first)[0].pop_receipt);
  EXPECT_FALSE(stale.ok()) << "the first receipt no longer deletes it";
  EXPECT_TRUE(store_->DeleteMessage(queue_, second[0].id, second[0].pop_receipt).ok());
}

TEST_P(QueueStoreConformance, PeekLeavesMessagesAndGetTakesAtMostMax) {
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(store_->PutMessage(queue_, "m" + std::to_string(i)).ok());
  auto peeked = store_->PeekMessages(queue_, 32);
  ASSERT_TRUE(peeked.ok());
  EXPECT_EQ(peeked->size(), 5u);
  EXPECT_TRUE((*peeked)[0].pop_receipt.empty());
  auto got = store_->GetMessages(queue_, 3, std::chrono::seconds(30));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 3u);
  auto rest = store_->GetMessages(queue_, 32, std::chrono::seconds(30));
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(rest->size(), 2u);
  std::set<std::string> all = Texts(*got);
  all.merge(Texts(*rest));
  EXPECT_EQ(all, (std::set<std::string>{"m0", "m1", "m2", "m3", "m4"}));
}

TEST_P(QueueStoreConformance, AMissingQueueIsNotFound) {
  auto got = store_->GetMessages("gone-" + RandomSuffix(), 1, std::chrono::seconds(1));
  EXPECT_TRUE(got.status().Is(Code::kNotFound)) << got.status().ToString();
  EXPECT_TRUE(store_->PutMessage("gone-" + RandomSuffix(), "x").Is(Code::kNotFound));
}

TEST_P(QueueStoreConformance, TooLargeAMessageIsRefused) {
  EXPECT_TRUE(store_->PutMessage(queue_, std::string(64 * 1024 + 1, 'x')).Is(Code::kTooLarge));
}

}  // namespace stampfs
