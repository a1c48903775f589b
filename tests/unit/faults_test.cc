#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "storage/fakes.h"

namespace stampfs {
namespace {

constexpr const char* kContainer = "faults";
constexpr const char* kTable = "faults";

class FaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(blobs_->CreateContainer(kContainer).ok());
    ASSERT_TRUE(tables_->CreateTable(kTable).ok());
  }

  Status Put(const std::string& name) {
    return faulty_blobs_->PutString(kContainer, name, "data", {}, Condition::None()).status();
  }
  bool InnerHas(const std::string& name) { return blobs_->GetProperties(kContainer, name).ok(); }

  std::unique_ptr<BlobStore> blobs_ = MakeFakeBlobStore();
  std::unique_ptr<TableStore> tables_ = MakeFakeTableStore();
  std::shared_ptr<FaultPlan> plan_ = std::make_shared<FaultPlan>();
  std::unique_ptr<BlobStore> faulty_blobs_ = MakeFaultyBlobStore(*blobs_, plan_);
  std::unique_ptr<TableStore> faulty_tables_ = MakeFaultyTableStore(*tables_, plan_);
};

Entity Row(const std::string& rk) {
  Entity e;
  e.partition_key = "p";
  e.row_key = rk;
  return e;
}

TEST_F(FaultsTest, FailNthFailsOnlyTheNthCallOverAllOperations) {
  plan_->FailNth(3, ServerBusy());
  EXPECT_TRUE(Put("a").ok());
  EXPECT_TRUE(faulty_blobs_->GetProperties(kContainer, "a").ok());
  Status third = Put("b");
  EXPECT_TRUE(Put("c").ok());
  EXPECT_EQ(third.code(), Code::kThrottled);
  EXPECT_EQ(third.http_status(), 503);
  EXPECT_EQ(third.service_code(), "ServerBusy");
  EXPECT_FALSE(InnerHas("b")) << "a before-call fault never reaches the store";
  EXPECT_TRUE(InnerHas("c"));
  EXPECT_EQ(plan_->calls(), 4);
  EXPECT_EQ(plan_->calls("Put"), 3);
  EXPECT_EQ(plan_->calls("GetProperties"), 1);
}

TEST_F(FaultsTest, FailNthOfOneOperationCountsOnlyThatOperationFromWhenItIsAdded) {
  EXPECT_TRUE(Put("before").ok());  // not counted: the rule does not exist yet
  plan_->FailNth(2, RequestTimeout(), "Put");
  EXPECT_TRUE(faulty_blobs_->GetProperties(kContainer, "before").ok());
  EXPECT_TRUE(Put("first").ok());
  EXPECT_TRUE(faulty_blobs_->GetProperties(kContainer, "first").ok());
  EXPECT_EQ(Put("second").code(), Code::kTimeout);
  EXPECT_TRUE(Put("third").ok()) << "FailNth fires once";
  EXPECT_FALSE(InnerHas("second"));
}

TEST_F(FaultsTest, AfterCallFaultAppliesTheWriteButLosesTheResponse) {
  plan_->FailNth(1, RequestTimeout(), "Put", /*after_call=*/true);
  EXPECT_EQ(Put("lost").code(), Code::kTimeout);
  EXPECT_TRUE(InnerHas("lost")) << "the write happened although the caller saw an error";
}

TEST_F(FaultsTest, AfterCallFaultOnABatchAppliesItAndReportsTheWholeBatch) {
  plan_->FailNth(1, RequestTimeout(), "ExecuteBatch", /*after_call=*/true);
  BatchError error;
  auto result = faulty_tables_->ExecuteBatch(
      kTable, {TableOperation::Insert(Row("a")), TableOperation::Insert(Row("b"))}, &error);
  EXPECT_EQ(result.status().code(), Code::kTimeout);
  EXPECT_EQ(error.status.code(), Code::kTimeout);
  EXPECT_EQ(error.failed_index, -1);
  EXPECT_TRUE(tables_->Get(kTable, "p", "a").ok());
  EXPECT_TRUE(tables_->Get(kTable, "p", "b").ok());
}

TEST_F(FaultsTest, BeforeCallFaultOnABatchAppliesNothing) {
  plan_->FailNth(1, ServerBusy(), "ExecuteBatch");
  BatchError error;
  auto result = faulty_tables_->ExecuteBatch(kTable, {TableOperation::Insert(Row("a"))}, &error);
  EXPECT_EQ(result.status().code(), Code::kThrottled);
  EXPECT_EQ(error.failed_index, -1);
  EXPECT_EQ(tables_->Get(kTable, "p", "a").status().code(), Code::kNotFound);
}

TEST_F(FaultsTest, FailAlwaysFailsEveryMatchingCallUntilCleared) {
  ASSERT_TRUE(Put("m").ok());
  plan_->FailAlways(PreconditionFailed(), "SetMetadata");
  for (int i = 0; i < 3; ++i) {
    Status s =
        faulty_blobs_->SetMetadata(kContainer, "m", {{"k", "v"}}, Condition::None()).status();
    EXPECT_EQ(s.code(), Code::kPreconditionFailed);
    EXPECT_EQ(s.http_status(), 412);
    EXPECT_EQ(s.service_code(), "ConditionNotMet");
  }
  EXPECT_TRUE(Put("other").ok()) << "other operations pass";
  plan_->Clear();
  EXPECT_TRUE(faulty_blobs_->SetMetadata(kContainer, "m", {{"k", "v"}}, Condition::None()).ok());
  EXPECT_EQ(plan_->calls("SetMetadata"), 4) << "Clear keeps the counts";
}

TEST_F(FaultsTest, FailAlwaysWithoutAnOperationFailsBothStores) {
  plan_->FailAlways(ServerBusy());
  EXPECT_EQ(Put("x").code(), Code::kThrottled);
  EXPECT_EQ(faulty_tables_->Get(kTable, "p", "r").status().code(), Code::kThrottled);
  EXPECT_EQ(faulty_tables_->CreateTable("another").code(), Code::kThrottled);
  plan_->Clear();
  EXPECT_TRUE(Put("x").ok());
}

TEST_F(FaultsTest, InjectorSeesEachOperationWithItsOwnCallNumber) {
  std::vector<std::pair<std::string, int>> seen;
  plan_->SetInjector([&](const std::string& op, int n) {
    seen.emplace_back(op, n);
    EXPECT_GE(plan_->calls(), 1) << "the injector may look at the plan";
    return op == "Read" && n == 2 ? ServerBusy() : Status::Ok();
  });
  ASSERT_TRUE(Put("r").ok());
  EXPECT_TRUE(faulty_blobs_->ReadToString(kContainer, "r").ok());
  EXPECT_EQ(faulty_blobs_->ReadToString(kContainer, "r").status().code(), Code::kThrottled);
  EXPECT_TRUE(faulty_blobs_->ListBlobs(kContainer, {}).ok());
  const std::vector<std::pair<std::string, int>> expected = {
      {"Put", 1}, {"Read", 1}, {"Read", 2}, {"ListBlobsPage", 1}};
  EXPECT_EQ(seen, expected) << "helpers go through the decorator's virtual methods";
  plan_->Clear();
  EXPECT_TRUE(faulty_blobs_->ReadToString(kContainer, "r").ok()) << "Clear drops the injector";
}

TEST_F(FaultsTest, EveryTableOperationIsNamedAfterItsMethod) {
  std::vector<std::string> seen;
  plan_->SetInjector([&](const std::string& op, int) {
    seen.push_back(op);
    return Status::Ok();
  });
  ASSERT_TRUE(faulty_tables_->Insert(kTable, Row("a")).ok());
  ASSERT_TRUE(faulty_tables_->Get(kTable, "p", "a").ok());
  ASSERT_TRUE(faulty_tables_->Update(kTable, Row("a"), UpdateMode::kMerge, Condition::None()).ok());
  ASSERT_TRUE(faulty_tables_->QueryPartition(kTable, "p").ok());
  ASSERT_TRUE(faulty_tables_->ExecuteBatch(kTable, {TableOperation::Insert(Row("b"))}).ok());
  ASSERT_TRUE(faulty_tables_->Delete(kTable, "p", "a", Condition::IfMatch("*")).ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"Insert", "Get", "Update", "QueryPage", "ExecuteBatch",
                                            "Delete"}));
}

TEST_F(FaultsTest, TimedOutBatchIsSplitAndResentByExecuteInBatches) {
  plan_->FailNth(1, RequestTimeout(), "ExecuteBatch");
  std::vector<TableOperation> ops;
  for (int i = 0; i < 10; ++i) ops.push_back(TableOperation::Insert(Row("r" + std::to_string(i))));
  size_t applied = 0;
  EXPECT_TRUE(ExecuteInBatches(*faulty_tables_, kTable, ops, &applied).ok());
  EXPECT_EQ(applied, 10u);
  EXPECT_GE(plan_->calls("ExecuteBatch"), 3);
  auto rows = tables_->QueryPartition(kTable, "p");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 10u);
}

TEST_F(FaultsTest, FailNthFiresExactlyOnceUnderConcurrentCalls) {
  plan_->FailNth(150, ServerBusy(), "GetContainerProperties");
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        if (!faulty_blobs_->GetContainerProperties(kContainer).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 1);
  EXPECT_EQ(plan_->calls("GetContainerProperties"), 400);
}

}  // namespace
}  // namespace stampfs
