// Shared by the data-path tests on the fakes (file_data_test.cc,
// commit_outcome_test.cc): one FakeTableStore and one FakeBlobStore behind
// fault-injecting decorators with one FaultPlan, and mounts (Namespace +
// BlockCache + FileData, each with its own cache directory) over them. A
// crash is a Mount destroyed without committing; a new Mount on the same
// cache name is the restarted daemon.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "fs/data/file_data.h"
#include "fs/namespace/attr.h"
#include "storage/fakes.h"
#include "storage/table_keys.h"

namespace stampfs {

constexpr const char* kContainer = "datacontainer";
constexpr const char* kTable = "datatable";
constexpr uint64_t kBlock = 64 * 1024;

inline std::string Pattern(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// One "machine": its own metadata cache, block cache and FileData over the
// shared (faulty) stores.
struct Mount {
  std::unique_ptr<MetaCache> meta;
  std::unique_ptr<Namespace> ns;
  std::unique_ptr<BlockCache> blocks;
  std::unique_ptr<FileData> data;

  Mount() = default;
  Mount(Mount&&) = default;
  // `m = Mount{}` (a crash): the old mount goes in the destructor's order,
  // the data path before the namespace and caches it uses (member-wise
  // assignment freed the namespace under FileData's destructor).
  Mount& operator=(Mount&& other) {
    data.reset();
    blocks.reset();
    ns.reset();
    meta.reset();
    meta = std::move(other.meta);
    ns = std::move(other.ns);
    blocks = std::move(other.blocks);
    data = std::move(other.data);
    return *this;
  }
};

class FileDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plan_ = std::make_shared<FaultPlan>();
    table_ = MakeFaultyTableStore(*raw_table_, plan_);
    blobs_ = MakeFaultyBlobStore(*raw_blobs_, plan_);
    root_ = std::filesystem::temp_directory_path() /
            ("stampfs-file-data-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // The mounts' metadata cache file (under root_); "" for one in memory each.
  std::string meta_file_;

  Mount NewMount(const std::string& cache_name, uint64_t capacity = 64ull << 20,
                 ConflictPolicy policy = ConflictPolicy::kCopy) {
    Mount m;
    if (!meta_file_.empty()) std::filesystem::create_directories(root_);
    auto meta = MetaCache::Open(meta_file_.empty() ? ":memory:" : (root_ / meta_file_).string());
    m.meta = std::move(meta.value());
    NamespaceOptions o;
    o.container = kContainer;
    o.table = kTable;
    o.now_ms = [this] { return NowNs() / 1000000 + now_ms_; };  // tests move TTLs with now_ms_
    m.ns = std::make_unique<Namespace>(*table_, *blobs_, m.meta.get(), o);
    EXPECT_TRUE(m.ns->Init().ok());
    auto bc = BlockCache::Open((root_ / cache_name).string(), capacity);
    EXPECT_TRUE(bc.ok()) << bc.status().ToString();
    m.blocks = std::move(*bc);
    FileDataOptions fo;
    fo.container = kContainer;
    fo.block_size = block_size_;
    fo.single_put_limit = single_put_limit_;
    fo.conflict = policy;
    fo.host = "testhost";
    if (now_) fo.now_ns = now_;
    fo.async_commit = async_threads_ >= 0;
    fo.commit_threads = std::max(async_threads_, 0);
    fo.commit_delay_ms = commit_delay_ms_;
    fo.max_queued = max_queued_;
    m.data = std::make_unique<FileData>(*m.ns, *blobs_, *m.blocks, fo);
    return m;
  }

  uint64_t Create(Mount& m, const std::string& name) {
    auto attr = m.ns->Create(kRootIno, name, 0644, 0, 0);
    EXPECT_TRUE(attr.ok()) << attr.status().ToString();
    auto opened = m.data->Open(attr->ino, OpenFlags{true, true, true});
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    return attr->ino;
  }

  uint64_t OpenExisting(Mount& m, const std::string& name, bool writable = true) {
    auto attr = m.ns->Lookup(kRootIno, name);
    EXPECT_TRUE(attr.ok()) << attr.status().ToString();
    auto opened = m.data->Open(attr->ino, OpenFlags{false, false, writable});
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    return attr->ino;
  }

  void Write(Mount& m, uint64_t ino, const std::string& data, uint64_t off, size_t chunk = 16384) {
    for (size_t done = 0; done < data.size(); done += chunk) {
      size_t n = std::min(chunk, data.size() - done);
      auto w = m.data->Write(ino, data.data() + done, n, off + done);
      ASSERT_TRUE(w.ok()) << w.status().ToString();
      ASSERT_EQ(*w, n);
    }
  }

  std::string ReadAll(Mount& m, uint64_t ino, uint64_t size) {
    std::string out(size, '?');
    for (uint64_t done = 0; done < size;) {
      auto r = m.data->Read(ino, out.data() + done, std::min<uint64_t>(20000, size - done), done);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok() || *r == 0) break;
      done += *r;
    }
    return out;
  }

  // Opens `name` under `parent` through `m` for reading, reads every byte, closes it.
  std::string ReadFile(Mount& m, uint64_t parent, const std::string& name) {
    auto attr = m.ns->Lookup(parent, name);
    EXPECT_TRUE(attr.ok()) << attr.status().ToString();
    if (!attr.ok()) return "";
    EXPECT_TRUE(m.data->Open(attr->ino, OpenFlags{}).ok());
    std::string got = ReadAll(m, attr->ino, attr->size);
    EXPECT_TRUE(m.data->Release(attr->ino).ok());
    return got;
  }

  bool InTable(const std::string& dir, const std::string& name) {
    return raw_table_->Get(kTable, PartitionKeyForDirectory(dir), RowKeyForName(name)).ok();
  }

  std::string Blob(const std::string& name) {
    auto s = raw_blobs_->ReadToString(kContainer, name);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : "";
  }

  // The name of the entry in the root starting with `prefix` ("" if none).
  std::string EntryStartingWith(Mount& m, const std::string& prefix) {
    auto listing = m.ns->ReadDir(kRootIno);
    EXPECT_TRUE(listing.ok());
    if (listing.ok()) {
      for (const DirEntry& e : *listing) {
        if (e.name.rfind(prefix, 0) == 0) return e.name;
      }
    }
    return "";
  }

  Mount ColdReader(const std::string& content, uint64_t* ino, uint64_t capacity = 64ull << 20);

  // Conflict copies in the root directory, as `m` lists it.
  int ConflictCopies(Mount& m) {
    auto listing = m.ns->ReadDir(kRootIno);
    EXPECT_TRUE(listing.ok());
    int copies = 0;
    for (const DirEntry& e : listing.ok() ? *listing : std::vector<DirEntry>{}) {
      if (e.name.find(".conflict-") != std::string::npos) copies++;
    }
    return copies;
  }

  // Writes and commits `content` as a new file through `m`.
  void Commit(Mount& m, const std::string& name, const std::string& content) {
    uint64_t ino = Create(m, name);
    Write(m, ino, content, 0);
    ASSERT_TRUE(m.data->Release(ino).ok());
  }

  std::function<int64_t()> now_;  // FileData's clock when set
  uint64_t block_size_ = kBlock;  // of new files
  uint64_t single_put_limit_ = 2 * kBlock;
  // -1: commit=close; else commit=async with this many pipeline threads
  // (0: none, the test runs CommitDue).
  int async_threads_ = -1;
  int64_t commit_delay_ms_ = 500;
  size_t max_queued_ = 4096;  // the commit queue's bound
  int64_t now_ms_ = 0;  // added to the namespaces' clock (TTLs)
  std::shared_ptr<FaultPlan> plan_;
  std::unique_ptr<TableStore> raw_table_ = MakeFakeTableStore();
  std::unique_ptr<BlobStore> raw_blobs_ = MakeFakeBlobStore();
  std::unique_ptr<TableStore> table_;
  std::unique_ptr<BlobStore> blobs_;
  std::filesystem::path root_;
};

template <typename Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 500 && !pred(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return pred();
}

class DeferredCreateTest : public FileDataTest {
 protected:
  uint64_t CreateDeferred(Mount& m, uint64_t dir, const std::string& name) {
    auto attr = m.ns->Create(dir, name, 0644, 0, 0, true);
    EXPECT_TRUE(attr.ok()) << attr.status().ToString();
    if (!attr.ok()) return 0;
    EXPECT_TRUE(m.data->Open(attr->ino, OpenFlags{true, true, true}).ok());
    return attr->ino;
  }
  // A new file /d/NAME pending in `a` (holding `data`) while `b` removes /d,
  // empty in the table.
  uint64_t PendingInRemovedDirectory(Mount& a, Mount& b, const std::string& name,
                                     const std::string& data) {
    auto dir = a.ns->Mkdir(kRootIno, "d", 0755, 0, 0);
    EXPECT_TRUE(dir.ok());
    if (!dir.ok()) return 0;
    uint64_t ino = CreateDeferred(a, dir->ino, name);
    if (!data.empty()) Write(a, ino, data, 0);
    EXPECT_TRUE(a.ns->Rmdir(kRootIno, "d").Is(Code::kNotEmpty)) << "not empty for this mount";
    EXPECT_TRUE(b.ns->Lookup(kRootIno, "d").ok());
    EXPECT_TRUE(b.ns->Rmdir(kRootIno, "d").ok()) << "empty in the table";
    return ino;
  }
};

}  // namespace stampfs
