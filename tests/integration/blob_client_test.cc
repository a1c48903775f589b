// AzureBlobClient checks that only make sense against a real service
// ($AZURE_STORAGE_CONNECTION_STRING, else Azurite): credentials, reachability,
// streaming memory bounds, and name encoding. Behaviour shared with the fake
// lives in tests/conformance/blob_store_conformance.cc.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <latch>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "integration/test_account.h"
#include "storage/auth.h"
#include "storage/azure_clients.h"
#include "storage/connection_string.h"
#include "storage/stats.h"

namespace stampfs {
namespace {

// "h2-<test name>-<random>": lowercase [a-z0-9-], 3..63 characters, no "--".
std::string UniqueContainerName() {
  std::string name = "h2-";
  for (char c : std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    if (name.size() >= 45) break;
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) name += c;
  }
  std::random_device random;
  char suffix[16];
  std::snprintf(suffix, sizeof(suffix), "-%08x", random());
  return name + suffix;
}

class BlobClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto account = Account();
    ASSERT_TRUE(account.ok()) << account.status().ToString();
    account_ = *account;
    store_ = MakeAzureBlobClient(account_);
    container_ = UniqueContainerName();
    Status created = store_->CreateContainer(container_);
    ASSERT_TRUE(created.ok()) << created.ToString();
  }

  void TearDown() override {
    if (store_ && !container_.empty()) store_->DeleteContainer(container_).PermitUnchecked();
  }

  StorageAccount account_;
  std::unique_ptr<BlobStore> store_;
  std::string container_;
};

TEST_F(BlobClientTest, WrongAccountKeyIsAuthAndTheMessageHidesTheKey) {
  if (!account_.HasKey()) GTEST_SKIP() << "needs a Shared Key account";
  StorageAccount wrong = account_;
  const std::string raw_key(64, 'k');
  wrong.account_key = Base64Encode(raw_key);
  auto store = MakeAzureBlobClient(wrong);
  for (const Status& s : {store->GetContainerProperties(container_),
                          store->PutString(container_, "f", "data", {}, Condition::None()).status(),
                          store->ListBlobsPage(container_, {}, "").status()}) {
    EXPECT_EQ(s.code(), Code::kAuth) << s.ToString();
    EXPECT_EQ(s.http_status(), 403);
    EXPECT_NE(s.message().find("authentication failed"), std::string::npos) << s.ToString();
    EXPECT_EQ(s.ToString().find(wrong.account_key), std::string::npos);
    EXPECT_EQ(s.ToString().find(account_.account_key), std::string::npos);
    EXPECT_EQ(s.ToString().find(raw_key), std::string::npos);
  }
}

// An account SAS over the blob service with only the given permissions.
std::string AccountSas(const StorageAccount& account, const std::string& permissions) {
  const std::string version = "2021-08-06";
  const std::string expiry = "2099-01-01T00:00:00Z";
  const std::string to_sign = account.account_name + "\n" + permissions + "\nb\nsco\n\n" + expiry +
                              "\n\nhttps,http\n" + version + "\n\n";
  auto key = Base64Decode(account.account_key);
  EXPECT_TRUE(key.ok());
  std::string signature = Base64Encode(HmacSha256(key.ok() ? *key : "", to_sign));
  return "sv=" + version + "&ss=b&srt=sco&sp=" + permissions + "&se=" + UrlEncode(expiry) +
         "&spr=" + UrlEncode("https,http") + "&sig=" + UrlEncode(signature);
}

TEST_F(BlobClientTest, ReadOnlySasReadsButWritesAreAPermissionError) {
  if (!account_.HasKey()) GTEST_SKIP() << "needs the account key to make a SAS";
  auto put = store_->PutString(container_, "f", "data", {}, Condition::None());
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  StorageAccount reader = account_;
  reader.account_key.clear();
  reader.sas_token = AccountSas(account_, "rl");
  auto store = MakeAzureBlobClient(reader);

  EXPECT_TRUE(store->GetContainerProperties(container_).ok());
  auto data = store->ReadToString(container_, "f");
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(*data, "data");
  auto listing = store->ListBlobs(container_, {});
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  EXPECT_EQ(listing->blobs.size(), 1u);

  Status denied = store->PutString(container_, "g", "x", {}, Condition::None()).status();
  EXPECT_EQ(denied.code(), Code::kAuth) << denied.ToString();
  EXPECT_NE(denied.message().find("permission"), std::string::npos) << denied.ToString();
  EXPECT_EQ(denied.ToString().find("sig="), std::string::npos);
  EXPECT_EQ(denied.ToString().find(reader.sas_token), std::string::npos);
  EXPECT_EQ(store->Delete(container_, "f", Condition::None()).code(), Code::kAuth);
}

TEST_F(BlobClientTest, MissingContainerIsNotFoundAndNamed) {
  const std::string missing = container_ + "-gone";
  Status s = store_->GetContainerProperties(missing);
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  EXPECT_EQ(s.service_code(), "ContainerNotFound");
  EXPECT_NE(s.message().find(missing), std::string::npos) << s.ToString();
  Status put = store_->PutString(missing, "f", "x", {}, Condition::None()).status();
  EXPECT_EQ(put.code(), Code::kNotFound) << put.ToString();
  EXPECT_EQ(put.service_code(), "ContainerNotFound");
}

TEST(BlobClientUnreachable, ClosedPortIsATransportErrorQuickly) {
  auto account = Account();
  ASSERT_TRUE(account.ok()) << account.status().ToString();
  account->blob_endpoint = "http://127.0.0.1:1/" + account->account_name;
  auto store = MakeAzureBlobClient(*account);
  auto start = std::chrono::steady_clock::now();
  Status s = store->GetContainerProperties("anything");
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.code(), Code::kTransport) << s.ToString();
  EXPECT_NE(s.message().find("container anything"), std::string::npos) << s.ToString();
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

// ---- 64 MiB through blocks, in bounded memory ----

constexpr uint64_t kBlockBytes = 4 << 20;
constexpr uint64_t kBlocks = 16;
constexpr uint64_t kTotalBytes = kBlockBytes * kBlocks;

// Deterministic, position-dependent bytes, so nothing needs to be kept.
char ByteAt(uint64_t position) {
  uint64_t x = position * 0x9E3779B97F4A7C15ull;
  return static_cast<char>(x >> 56);
}

struct Fnv1a {
  uint64_t hash = 1469598103934665603ull;
  void Add(const char* data, size_t len) {
    for (size_t i = 0; i < len; ++i) {
      hash = (hash ^ static_cast<unsigned char>(data[i])) * 1099511628211ull;
    }
  }
};

// Peak resident set in KiB ("VmHWM"), or -1.
long PeakRssKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

long CurrentRssKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// Resets VmHWM to the current RSS (Linux >= 4.0); false when not allowed.
bool ResetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

HttpBody GeneratedBlock(uint64_t index) {
  HttpBody body;
  body.size = kBlockBytes;
  body.reader = [base = index * kBlockBytes](uint64_t offset, char* buf, size_t len) -> size_t {
    size_t n =
        static_cast<size_t>(std::min<uint64_t>(len, kBlockBytes - std::min(offset, kBlockBytes)));
    for (size_t i = 0; i < n; ++i) buf[i] = ByteAt(base + offset + i);
    return n;
  };
  return body;
}

TEST_F(BlobClientTest, SixtyFourMebibytesStreamThroughBlocksInBoundedMemory) {
  Fnv1a expected;
  std::vector<char> chunk(1 << 16);
  for (uint64_t at = 0; at < kTotalBytes; at += chunk.size()) {
    for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = ByteAt(at + i);
    expected.Add(chunk.data(), chunk.size());
  }
  chunk = {};
  // Warm up connections and allocators before measuring.
  ASSERT_TRUE(store_->PutString(container_, "warm", "x", {}, Condition::None()).ok());
  ASSERT_TRUE(store_->ReadToString(container_, "warm").ok());
  const long baseline = CurrentRssKib();
  const long peak_before = ResetPeakRss() ? baseline : PeakRssKib();

  std::vector<BlockRef> blocks;
  for (uint64_t i = 0; i < kBlocks; ++i) {
    Status staged = store_->PutBlock(container_, "big", BlockIdFor(i), GeneratedBlock(i));
    ASSERT_TRUE(staged.ok()) << staged.ToString();
    blocks.push_back({BlockIdFor(i), BlockRef::Source::kUncommitted});
  }
  auto etag = store_->PutBlockList(container_, "big", blocks, {{"kind", "big"}},
                                   Condition::IfNoneMatchAny());
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();

  Fnv1a actual;
  uint64_t next = 0;
  bool in_order = true;
  auto read = store_->Read(container_, "big", 0, 0, Condition::IfMatch(*etag),
                           [&](uint64_t at, const char* data, size_t len) {
                             if (at == 0) actual = Fnv1a(), next = 0;  // a retry restarts
                             in_order = in_order && at == next;
                             actual.Add(data, len);
                             next = at + len;
                             return true;
                           });
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  const long peak_after = PeakRssKib();

  EXPECT_TRUE(in_order);
  EXPECT_EQ(read->bytes, kTotalBytes);
  EXPECT_EQ(read->properties.size, kTotalBytes);
  EXPECT_EQ(read->properties.metadata.at("kind"), "big");
  EXPECT_EQ(actual.hash, expected.hash);
  const long growth_kib = peak_after - std::max(peak_before, baseline);
  EXPECT_LT(growth_kib, 16 * 1024) << "peak RSS grew by " << growth_kib << " KiB";

  auto list = store_->GetBlockList(container_, "big", BlockListType::kCommitted);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->committed.size(), kBlocks);
  EXPECT_EQ(list->committed[5].id, BlockIdFor(5));
  EXPECT_EQ(list->committed[5].size, kBlockBytes);
  EXPECT_EQ(list->etag, *etag);
}

uint64_t Count(const std::string& name) {
  for (const auto& [n, v] : StatsSnapshot()) {
    if (n == name) return v;
  }
  return 0;
}

TEST_F(BlobClientTest, ReadStreamDeliversARangeInOrderInOneGetPinnedToItsVersion) {
  std::string data(3 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = ByteAt(i);
  auto etag = store_->PutString(container_, "s", data, {}, Condition::None());
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  const uint64_t offset = 1 << 20, length = 3 << 19;
  std::string got;
  bool in_order = true;
  const uint64_t gets = Count("requests.blob.get");
  auto read = store_->ReadStream(
      container_, "s", offset, length, Condition::IfMatch(*etag),
      [&](uint64_t at, const char* d, size_t n) {
        in_order = in_order && at == got.size();
        got.append(d, n);
        return true;
      },
      std::chrono::seconds(5));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->bytes, length);
  EXPECT_EQ(read->properties.size, data.size());
  EXPECT_TRUE(in_order);
  EXPECT_TRUE(got == data.substr(offset, length));
  EXPECT_EQ(Count("requests.blob.get"), gets + 1);

  // A sink that stops mid-body ends the stream: one GET, not retried.
  size_t taken = 0;
  auto cut = store_->ReadStream(
      container_, "s", 0, 0, Condition::IfMatch(*etag),
      [&](uint64_t, const char*, size_t n) {
        taken += n;
        return taken < (1 << 20);
      },
      std::chrono::seconds(5));
  EXPECT_FALSE(cut.ok());
  EXPECT_EQ(Count("requests.blob.get"), gets + 2);

  ASSERT_TRUE(store_->PutString(container_, "s", "new", {}, Condition::None()).ok());
  auto stale = store_->ReadStream(
      container_, "s", 0, 0, Condition::IfMatch(*etag),
      [](uint64_t, const char*, size_t) { return true; }, std::chrono::seconds(5));
  EXPECT_TRUE(stale.status().Is(Code::kPreconditionFailed)) << stale.status().ToString();
}

// ---- Names that need encoding ----

const std::vector<std::string>& AwkwardNames() {
  static const std::vector<std::string> names = {
      "sp ace.txt",
      "uni-\xC3\xBC-\xE6\x97\xA5\xE6\x9C\xAC-\xF0\x9F\x98\x80.txt",
      "per%cent%20x",
      "hash#tag",
      "ques?tion=1&x=2",
      "plus+sign",
      "quote'd \"double\"",
      "xml<&>.txt",
      "dir/mix %#?+'\xC3\xA9/leaf",
  };
  return names;
}

TEST_F(BlobClientTest, AwkwardNamesRoundTripInListingReadAndCopy) {
  for (const std::string& name : AwkwardNames()) {
    auto put = store_->PutString(container_, name, "data of " + name, {}, Condition::None());
    ASSERT_TRUE(put.ok()) << name << ": " << put.status().ToString();
  }
  auto listing = store_->ListBlobs(container_, {});
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  std::set<std::string> listed;
  for (const BlobItem& item : listing->blobs) listed.insert(item.name);
  EXPECT_EQ(listed, std::set<std::string>(AwkwardNames().begin(), AwkwardNames().end()));

  for (const std::string& name : AwkwardNames()) {
    auto data = store_->ReadToString(container_, name);
    ASSERT_TRUE(data.ok()) << name << ": " << data.status().ToString();
    EXPECT_EQ(*data, "data of " + name);
  }

  ListOptions by_dir;
  by_dir.prefix = "dir/mix %#?+'\xC3\xA9/";
  by_dir.delimiter = "/";
  auto dir = store_->ListBlobs(container_, by_dir);
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  ASSERT_EQ(dir->blobs.size(), 1u);
  EXPECT_EQ(dir->blobs[0].name, AwkwardNames().back());

  const std::string copy = "copy of " + AwkwardNames()[4];
  auto copied = store_->Copy(container_, AwkwardNames()[4], copy, Condition::IfNoneMatchAny(), "");
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  auto data = store_->ReadToString(container_, copy);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(*data, "data of " + AwkwardNames()[4]);
}

// Conditional writes are the only arbiter between mounts: of N writers racing
// on one blob name with If-None-Match:* (or If-Match one ETag), exactly one
// may succeed; the others get kAlreadyExists / kPreconditionFailed.
int RacingPuts(BlobStore& store, const std::string& container, const std::string& blob,
               const Condition& condition, int writers) {
  std::latch start(writers);
  std::atomic<int> won{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      std::string data(256 * 1024, static_cast<char>('a' + w));
      start.arrive_and_wait();
      auto r = store.PutString(container, blob, data, {}, condition);
      if (r.ok()) {
        won++;
      } else {
        EXPECT_TRUE(r.status().Is(Code::kAlreadyExists) || r.status().Is(Code::kPreconditionFailed))
            << r.status().ToString();
      }
    });
  }
  for (auto& t : threads) t.join();
  return won.load();
}

TEST_F(BlobClientTest, ConcurrentConditionalPutsHaveOneWinner) {
  std::map<int, int> create_wins, update_wins;  // winners per round -> rounds
  for (int round = 0; round < 20; ++round) {
    const std::string blob = "race-" + std::to_string(round);
    create_wins[RacingPuts(*store_, container_, blob, Condition::IfNoneMatchAny(), 6)]++;
    auto props = store_->GetProperties(container_, blob);
    ASSERT_TRUE(props.ok()) << props.status().ToString();
    update_wins[RacingPuts(*store_, container_, blob, Condition::IfMatch(props->etag), 6)]++;
  }
  auto show = [](const std::map<int, int>& m) {
    std::string s;
    for (auto [winners, rounds] : m)
      s += std::to_string(winners) + " winners: " + std::to_string(rounds) + " rounds; ";
    return s;
  };
  EXPECT_EQ(create_wins[1], 20) << "If-None-Match:* " << show(create_wins);
  EXPECT_EQ(update_wins[1], 20) << "If-Match " << show(update_wins);
}

}  // namespace
}  // namespace stampfs
