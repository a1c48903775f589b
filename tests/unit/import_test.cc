// Importer on the in-memory fakes: blob names become a tree, blobfuse
// markers become directories, stampfs metadata restores attributes,
// unmappable names are reported, re-runs change nothing, --refresh adds,
// updates and removes, and a failed directory never leaves an entry whose
// "." row is missing.
#include "fs/admin/import.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>

#include "fs/namespace/attr.h"
#include "fs/namespace/inode_table.h"
#include "fs/namespace/namespace.h"
#include "fs/namespace/table_scan.h"
#include "storage/fakes.h"
#include "storage/table_keys.h"

namespace stampfs {
namespace {

constexpr const char* kContainer = "importc";
constexpr const char* kTable = "importt";

// Adds metadata to listed blobs that the stores' own checks would refuse to
// write (blobfuse's hdi_isfolder has an underscore). Everything else forwards.
class MetadataOverlay : public BlobStore {
 public:
  explicit MetadataOverlay(BlobStore& inner) : inner_(inner) {}
  std::map<std::string, BlobMetadata> extra;

  Status CreateContainer(const std::string& c) override { return inner_.CreateContainer(c); }
  Status DeleteContainer(const std::string& c) override { return inner_.DeleteContainer(c); }
  Status GetContainerProperties(const std::string& c) override {
    return inner_.GetContainerProperties(c);
  }
  Result<BlobListing> ListBlobsPage(const std::string& c, const ListOptions& o,
                                    const std::string& marker) override {
    auto page = inner_.ListBlobsPage(c, o, marker);
    if (!page.ok() || !o.include_metadata) return page;
    for (BlobItem& b : page->blobs) {
      for (const auto& [k, v] : extra[b.name]) b.properties.metadata[k] = v;
    }
    return page;
  }
  Result<BlobProperties> GetProperties(const std::string& c, const std::string& b) override {
    return inner_.GetProperties(c, b);
  }
  Result<ReadResult> Read(const std::string& c, const std::string& b, uint64_t off, uint64_t len,
                          const Condition& m, const BodySink& sink) override {
    return inner_.Read(c, b, off, len, m, sink);
  }
  Result<ReadResult> ReadStream(const std::string& c, const std::string& b, uint64_t off,
                                uint64_t len, const Condition& m, const BodySink& sink,
                                std::chrono::milliseconds stall) override {
    return inner_.ReadStream(c, b, off, len, m, sink, stall);
  }
  Result<std::string> Put(const std::string& c, const std::string& b, const HttpBody& body,
                          const BlobMetadata& md, const Condition& cond) override {
    return inner_.Put(c, b, body, md, cond);
  }
  Status PutBlock(const std::string& c, const std::string& b, const std::string& id,
                  const HttpBody& body) override {
    return inner_.PutBlock(c, b, id, body);
  }
  Result<std::string> PutBlockList(const std::string& c, const std::string& b,
                                   const std::vector<BlockRef>& blocks, const BlobMetadata& md,
                                   const Condition& cond, const std::string& md5 = "") override {
    return inner_.PutBlockList(c, b, blocks, md, cond, md5);
  }
  Result<BlockList> GetBlockList(const std::string& c, const std::string& b,
                                 BlockListType t) override {
    return inner_.GetBlockList(c, b, t);
  }
  Result<std::string> Copy(const std::string& c, const std::string& s, const std::string& d,
                           const Condition& cond, const std::string& sm) override {
    return inner_.Copy(c, s, d, cond, sm);
  }
  Status Delete(const std::string& c, const std::string& b, const Condition& cond) override {
    return inner_.Delete(c, b, cond);
  }
  Result<std::string> SetMetadata(const std::string& c, const std::string& b,
                                  const BlobMetadata& md, const Condition& cond) override {
    return inner_.SetMetadata(c, b, md, cond);
  }

 private:
  BlobStore& inner_;
};

class ImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plan_ = std::make_shared<FaultPlan>();
    faulty_table_ = MakeFaultyTableStore(*table_, plan_);
    ASSERT_TRUE(blobs_->CreateContainer(kContainer).ok());
  }

  std::string PutBlob(const std::string& name, const std::string& data,
                      const BlobMetadata& md = {}) {
    auto etag = blobs_->PutString(kContainer, name, data, md, Condition::None());
    EXPECT_TRUE(etag.ok()) << name << ": " << etag.status().ToString();
    return etag.ok() ? *etag : "";
  }

  ImportReport Import(bool refresh = false) {
    ImportOptions o;
    o.container = kContainer;
    o.table = kTable;
    o.refresh = refresh;
    o.uid = 1001;
    o.gid = 1002;
    o.now_ns = [] { return int64_t{1700000000} * 1000000000; };
    Importer importer(*faulty_table_, overlay_, o);
    auto r = importer.Run();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ImportReport{};
  }

  // The tree as a mount sees it: "path type size" lines, sorted.
  std::vector<std::string> MountedTree() {
    NamespaceOptions o;
    o.container = kContainer;
    o.table = kTable;
    Namespace ns(*table_, *blobs_, nullptr, o);
    EXPECT_TRUE(ns.Init().ok());
    std::vector<std::string> out;
    Walk(ns, kRootIno, "", &out);
    std::sort(out.begin(), out.end());
    return out;
  }

  void Walk(Namespace& ns, uint64_t ino, const std::string& path, std::vector<std::string>* out) {
    auto entries = ns.ReadDir(ino);
    ASSERT_TRUE(entries.ok()) << path << ": " << entries.status().ToString();
    for (const DirEntry& e : *entries) {
      auto attr = ns.Lookup(ino, e.name);
      ASSERT_TRUE(attr.ok()) << path << "/" << e.name << ": " << attr.status().ToString();
      const std::string p = path + "/" + e.name;
      out->push_back(p + (attr->IsDir() ? " d" : " f " + std::to_string(attr->size)));
      if (attr->IsDir()) Walk(ns, attr->ino, p, out);
    }
  }

  // Every row with its ETag, to prove a re-run changed nothing.
  std::map<std::string, std::string> Snapshot() {
    auto rows = table_->Query(kTable, {});
    EXPECT_TRUE(rows.ok());
    std::map<std::string, std::string> out;
    if (rows.ok()) {
      for (const Entity& e : *rows) out[e.partition_key + "|" + e.row_key] = e.etag;
    }
    return out;
  }

  Result<Entity> Entry(const std::string& dir, const std::string& name) {
    return table_->Get(kTable, PartitionKeyForDirectory(dir), RowKeyForName(name));
  }

  std::unique_ptr<TableStore> table_ = MakeFakeTableStore();
  std::unique_ptr<BlobStore> blobs_ = MakeFakeBlobStore();
  MetadataOverlay overlay_{*blobs_};
  std::shared_ptr<FaultPlan> plan_;
  std::unique_ptr<TableStore> faulty_table_;
};

TEST_F(ImportTest, NestedNamesBecomeDirectoriesWithDotRows) {
  PutBlob("a/b/c.txt", "ccc");
  PutBlob("a/d.txt", "dddd");
  PutBlob("top.txt", "t");
  ImportReport r = Import();
  EXPECT_EQ(r.blobs, 3u);
  EXPECT_EQ(r.files_created, 3u);
  EXPECT_EQ(r.dirs_created, 2u);
  EXPECT_TRUE(r.clean());
  EXPECT_EQ(MountedTree(), (std::vector<std::string>{"/a d", "/a/b d", "/a/b/c.txt f 3",
                                                      "/a/d.txt f 4", "/top.txt f 1"}));
  auto a = Entry("/", "a");
  auto dot = table_->Get(kTable, PartitionKeyForDirectory("/a/b"), ".");
  auto b = Entry("/a", "b");
  ASSERT_TRUE(a.ok() && dot.ok() && b.ok());
  EXPECT_EQ(dot->GetInt64("ino"), b->GetInt64("ino"));
  EXPECT_EQ(dot->GetInt64("touched"), int64_t{1700000000} * 1000000000);  // implicit: import time
  auto c = Entry("/a/b", "c.txt");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c->GetString("blob"), "a/b/c.txt");
  auto props = blobs_->GetProperties(kContainer, "a/b/c.txt");
  ASSERT_TRUE(props.ok());
  EXPECT_EQ(*c->GetString("betag"), props->etag);
}

TEST_F(ImportTest, InodeNumbersAreUniqueAndTakenInOneRange) {
  for (int i = 0; i < 10; ++i) PutBlob("d" + std::to_string(i % 3) + "/f" + std::to_string(i), "x");
  auto before = table_->Get(kTable, "~fs", "ino-counter");  // table not there yet
  EXPECT_FALSE(before.ok());
  ImportReport r = Import();
  EXPECT_EQ(r.files_created + r.dirs_created, 13u);
  auto scan = ScanTable(*table_, kTable);
  ASSERT_TRUE(scan.ok());
  std::set<int64_t> inos;
  for (const auto& [pk, part] : scan->partitions) {
    for (const auto& [rk, e] : part.entries) EXPECT_TRUE(inos.insert(e.GetInt64("ino")).second);
  }
  EXPECT_EQ(inos.size(), 13u);
  EXPECT_EQ(*inos.begin(), static_cast<int64_t>(kRootIno + 1));
  EXPECT_EQ(scan->fs_rows.at("ino-counter").GetInt64("next"), *inos.rbegin() + 1);
}

TEST_F(ImportTest, BlobfuseMarkersAndSlashMarkersBecomeDirectories) {
  PutBlob("empty", "");
  overlay_.extra["empty"] = {{"hdi_isfolder", "true"}};
  PutBlob("withkids", "");
  overlay_.extra["withkids"] = {{"hdi_isfolder", "True"}};
  PutBlob("withkids/k.txt", "kk");
  PutBlob("slash/", "");
  PutBlob("plain-empty", "");  // no marker metadata: an empty file
  ImportReport r = Import();
  EXPECT_TRUE(r.clean()) << (r.problems.empty() ? "" : r.problems[0].reason);
  EXPECT_EQ(MountedTree(), (std::vector<std::string>{"/empty d", "/plain-empty f 0", "/slash d",
                                                      "/withkids d", "/withkids/k.txt f 2"}));
  auto dot = table_->Get(kTable, PartitionKeyForDirectory("/empty"), ".");
  ASSERT_TRUE(dot.ok());
  // A directory's times follow its "." row's "touched": a new one keeps its own mtime.
  auto marker = blobs_->GetProperties(kContainer, "empty");
  ASSERT_TRUE(marker.ok());
  EXPECT_EQ(dot->GetInt64("touched"), marker->last_modified * 1000000000LL);
  auto entry = Entry("/", "empty");
  ASSERT_TRUE(entry.ok());
  EXPECT_EQ(entry->GetInt64("mtime"), marker->last_modified * 1000000000LL);
}

TEST_F(ImportTest, StampfsMetadataRestoresAttributesElseDefaults) {
  PutBlob("mine.sh", "#!/bin/sh\n",
          {{"mode", std::to_string(S_IFREG | 0750)}, {"uid", "1234"}, {"gid", "5678"},
           {"mtime", "1600000000123456789"}, {"bsize", "4194304"}, {"stampfs", "1"}});
  PutBlob("foreign.bin", "abc", {{"mode", "not-a-number"}});
  ImportReport r = Import();
  ASSERT_TRUE(r.clean());
  auto mine = Entry("/", "mine.sh");
  ASSERT_TRUE(mine.ok());
  auto a = AttrFromEntity(*mine);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->mode, static_cast<uint32_t>(S_IFREG | 0750));
  EXPECT_EQ(a->uid, 1234u);
  EXPECT_EQ(a->gid, 5678u);
  EXPECT_EQ(a->mtime_ns, 1600000000123456789LL);
  EXPECT_EQ(mine->GetInt64("bsize"), 4194304);

  auto foreign = Entry("/", "foreign.bin");
  ASSERT_TRUE(foreign.ok());
  auto f = AttrFromEntity(*foreign);
  ASSERT_TRUE(f.ok());
  auto props = blobs_->GetProperties(kContainer, "foreign.bin");
  ASSERT_TRUE(props.ok());
  EXPECT_EQ(f->mode, static_cast<uint32_t>(S_IFREG | 0644));
  EXPECT_EQ(f->uid, 1001u);
  EXPECT_EQ(f->gid, 1002u);
  EXPECT_EQ(f->mtime_ns, props->last_modified * 1000000000LL);
  EXPECT_EQ(f->size, 3u);
}

TEST_F(ImportTest, UnmappableNamesAreReportedAndTheRestImported) {
  PutBlob("a", "file a");
  PutBlob("a/b", "under a");
  PutBlob("x//y", "empty component");
  PutBlob("t/", "not empty");
  PutBlob("p/./q", "dot");
  PutBlob("p/../q", "dotdot");
  PutBlob(std::string(256, 'n') + "/z", "long");
  PutBlob("ok/fine", "fine");
  ImportReport r = Import();
  std::map<std::string, std::string> problems;
  for (const auto& p : r.problems) problems[p.blob] = p.reason;
  EXPECT_EQ(problems.size(), 6u);
  EXPECT_NE(problems["a"].find("directory of the same name"), std::string::npos);
  EXPECT_NE(problems["x//y"].find("empty path component"), std::string::npos);
  EXPECT_NE(problems["t/"].find("ends with '/'"), std::string::npos);
  EXPECT_NE(problems["p/./q"].find("\".\""), std::string::npos);
  EXPECT_NE(problems["p/../q"].find("\"..\""), std::string::npos);
  EXPECT_NE(problems[std::string(256, 'n') + "/z"].find("255 bytes"), std::string::npos);
  EXPECT_FALSE(r.clean());
  EXPECT_EQ(MountedTree(),
            (std::vector<std::string>{"/a d", "/a/b f 7", "/ok d", "/ok/fine f 4"}));
}

TEST_F(ImportTest, EscapedAndHashedNamesRoundTrip) {
  const std::string long_name(255, '#');  // escapes to 765 characters: a hashed RowKey
  std::string deep;
  for (int i = 0; i < 5; ++i) deep += std::string(120, static_cast<char>('a' + i)) + "/";
  PutBlob("sp ace/50%/#hash?/\xc3\xa9t\xc3\xa9.txt", "u");
  PutBlob(long_name, "h");
  PutBlob(deep + "leaf", "deep");  // the directory's key is over 512: hashed
  ImportReport r = Import();
  ASSERT_TRUE(r.clean());
  auto tree = MountedTree();
  EXPECT_NE(std::find(tree.begin(), tree.end(), "/sp ace/50%/#hash?/\xc3\xa9t\xc3\xa9.txt f 1"),
            tree.end());
  EXPECT_NE(std::find(tree.begin(), tree.end(), "/" + long_name + " f 1"), tree.end());
  EXPECT_NE(std::find(tree.begin(), tree.end(), "/" + deep + "leaf f 4"), tree.end());
  const std::string deep_dir = "/" + deep.substr(0, deep.size() - 1);
  ASSERT_TRUE(IsHashedKey(PartitionKeyForDirectory(deep_dir)));
  auto dot = table_->Get(kTable, PartitionKeyForDirectory(deep_dir), ".");
  ASSERT_TRUE(dot.ok());
  ASSERT_NE(dot->GetBinary("path"), nullptr);
  EXPECT_EQ(dot->GetBinary("path")->bytes, deep_dir);
}

TEST_F(ImportTest, PrivateUseBackslashInBlobNamesIsABackslashInFileNames) {
  const std::string bs = "\xEF\x81\x9C";  // U+F05C: how stampfs stores a backslash in blob names
  PutBlob("dir" + bs + "x/back" + bs + "slash", "b");
  PutBlob("mark" + bs + "er/", "");
  ImportReport r = Import();
  ASSERT_TRUE(r.clean());
  EXPECT_EQ(MountedTree(), (std::vector<std::string>{"/dir\\x d", "/dir\\x/back\\slash f 1",
                                                      "/mark\\er d"}));
  auto e = Entry("/dir\\x", "back\\slash");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e->GetString("blob"), BlobNameFor("/dir\\x/back\\slash"));
}

// U+F080..U+F0FF is how stampfs stores a byte that is not UTF-8: imported
// as that byte, so the file's blob is the blob it came from; a blob using
// those characters where stampfs never would (their bytes forming UTF-8)
// maps to no file name and is reported, never shared by two files.
TEST_F(ImportTest, PrivateUseBytesInBlobNamesAreTheBytesTheyStoreAndNoNameMapsTwice) {
  PutBlob("c\xEF\x83\x83" "d", "one");          // "c<0xC3>d"
  PutBlob("e\xEF\x83\x83\xEF\x82\xA9", "two");  // would be "e" + C3 A9 = "eé"
  ImportReport r = Import();
  EXPECT_EQ(r.files_created, 1u);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].blob, "e\xEF\x83\x83\xEF\x82\xA9");
  auto e = Entry("/", "c\xC3" "d");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(*e->GetString("blob"), "c\xEF\x83\x83" "d");
  EXPECT_EQ(BlobNameFor("/c\xC3" "d"), "c\xEF\x83\x83" "d");
}

TEST_F(ImportTest, RerunChangesNothing) {
  PutBlob("a/b/c", "1");
  PutBlob("d", "2");
  PutBlob("e", "");
  overlay_.extra["e"] = {{"hdi_isfolder", "true"}};
  ImportReport first = Import();
  ASSERT_TRUE(first.clean());
  auto before = Snapshot();
  ImportReport second = Import();
  EXPECT_EQ(second.files_created + second.dirs_created + second.updated + second.removed, 0u);
  EXPECT_EQ(second.unchanged, 5u);  // a, a/b, a/b/c, d, e
  EXPECT_EQ(Snapshot(), before);
}

TEST_F(ImportTest, RefreshAddsUpdatesAndRemovesCommittedFilesOnly) {
  PutBlob("keep", "k");
  PutBlob("change", "old");
  PutBlob("gone/x", "x");
  ASSERT_TRUE(Import().clean());
  const std::string etag = PutBlob("change", "newer contents", {{"mtime", "1234567890000000001"}});
  ASSERT_TRUE(blobs_->Delete(kContainer, "gone/x", Condition::None()).ok());
  PutBlob("later/new", "n");
  // A file a mount created but has not committed yet: no betag, no blob.
  NamespaceOptions no;
  no.container = kContainer;
  no.table = kTable;
  Namespace ns(*table_, *blobs_, nullptr, no);
  ASSERT_TRUE(ns.Init().ok());
  ASSERT_TRUE(ns.Create(kRootIno, "uncommitted", 0644, 0, 0).ok());

  ImportReport plain = Import(false);
  EXPECT_EQ(plain.stale, 1u);
  EXPECT_EQ(plain.removed, 0u);
  EXPECT_EQ(plain.updated, 0u);
  EXPECT_EQ(plain.files_created, 1u);  // later/new: missing entries are always created
  auto change = Entry("/", "change");
  ASSERT_TRUE(change.ok());
  EXPECT_EQ(change->GetInt64("size"), 3);

  PutBlob("later/newer", "nn");
  ImportReport r = Import(true);
  EXPECT_EQ(r.files_created, 1u);
  EXPECT_EQ(r.updated, 1u);
  EXPECT_EQ(r.removed, 1u);
  EXPECT_EQ(r.removed_paths, std::vector<std::string>{"/gone/x"});
  change = Entry("/", "change");
  ASSERT_TRUE(change.ok());
  EXPECT_EQ(change->GetInt64("size"), 14);
  EXPECT_EQ(change->GetInt64("mtime"), 1234567890000000001LL);
  EXPECT_EQ(*change->GetString("betag"), etag);
  EXPECT_EQ(MountedTree(), (std::vector<std::string>{"/change f 14", "/gone d", "/keep f 1",
                                                      "/later d", "/later/new f 1",
                                                      "/later/newer f 2", "/uncommitted f 0"}));
}

TEST_F(ImportTest, DotRowsChangeAfterTheirEntriesInBatchesOfAtMostAHundred) {
  ASSERT_TRUE(Import().clean());  // an empty container: the root exists
  auto root_before = table_->Get(kTable, PartitionKeyForDirectory("/"), ".");
  ASSERT_TRUE(root_before.ok());
  for (int i = 0; i < 250; ++i) PutBlob("many/f" + std::to_string(i), "x");
  PutBlob("one", "1");
  const int batches_before = plan_->calls("ExecuteBatch");
  ImportReport r = Import();
  EXPECT_EQ(r.files_created, 251u);
  EXPECT_EQ(plan_->calls("ExecuteBatch") - batches_before, 4);  // 3 for many/ (99+99+52), 1 for /
  auto root_after = table_->Get(kTable, PartitionKeyForDirectory("/"), ".");
  ASSERT_TRUE(root_after.ok());
  EXPECT_NE(root_after->etag, root_before->etag);
  EXPECT_EQ(root_after->GetInt64("ino"), root_before->GetInt64("ino"));
  auto listing = table_->QueryPartition(kTable, PartitionKeyForDirectory("/many"));
  ASSERT_TRUE(listing.ok());
  EXPECT_EQ(listing->size(), 251u);  // 250 entries and "."
}

TEST_F(ImportTest, AFailedDirectoryIsNotEnteredInItsParentAndARerunFinishes) {
  PutBlob("d1/d2/f", "f");
  PutBlob("d1/g", "g");
  PutBlob("h", "h");
  plan_->FailNth(1, ServerBusy(), "ExecuteBatch");  // the deepest directory, /d1/d2
  ImportReport r = Import();
  EXPECT_EQ(r.failed_directories, 1u);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].rfind("/d1/d2: ", 0), 0u) << r.errors[0];
  EXPECT_FALSE(Entry("/d1", "d2").ok()) << "an entry without its \".\" row";
  EXPECT_TRUE(Entry("/d1", "g").ok());
  auto mark = table_->Get(kTable, "~fs", "import");
  ASSERT_TRUE(mark.ok());
  EXPECT_EQ(*mark->GetString("state"), "running");
  auto again = Importer::ShouldAutoImport(*table_, *blobs_, kContainer, kTable);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(*again);

  ImportReport rerun = Import();
  EXPECT_TRUE(rerun.clean());
  EXPECT_EQ(rerun.files_created + rerun.dirs_created, 2u);  // d2 and d2/f
  EXPECT_EQ(MountedTree(), (std::vector<std::string>{"/d1 d", "/d1/d2 d", "/d1/d2/f f 1",
                                                      "/d1/g f 1", "/h f 1"}));
}

TEST_F(ImportTest, AdoptsAnUnfinishedMkdirAndReportsKindConflicts) {
  PutBlob("dir/f", "f");
  PutBlob("file", "x");
  PutBlob("sub/inner", "i");
  NamespaceOptions no;
  no.container = kContainer;
  no.table = kTable;
  Namespace ns(*table_, *blobs_, nullptr, no);
  ASSERT_TRUE(ns.Init().ok());
  ASSERT_TRUE(table_->Insert(kTable, DirectoryRow("/dir", 777)).ok());  // "." without entry
  ASSERT_TRUE(ns.Mkdir(kRootIno, "file", 0755, 0, 0).ok());            // a dir where a blob is a file
  ASSERT_TRUE(ns.Create(kRootIno, "sub", 0644, 0, 0).ok());             // a file where blobs need a dir
  ImportReport r = Import();
  auto dir = Entry("/", "dir");
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(dir->GetInt64("ino"), 777);
  std::map<std::string, std::string> problems;
  for (const auto& p : r.problems) problems[p.blob] = p.reason;
  EXPECT_EQ(problems.size(), 2u);
  EXPECT_NE(problems["file"].find("as a directory"), std::string::npos);
  EXPECT_NE(problems["sub/inner"].find("as a file"), std::string::npos);
}

TEST_F(ImportTest, AutoImportOnlyForAnEmptyNewTableOverBlobs) {
  auto empty = Importer::ShouldAutoImport(*table_, *blobs_, kContainer, kTable);
  EXPECT_FALSE(empty.ok());  // no table yet: a mount creates it first
  NamespaceOptions no;
  no.container = kContainer;
  no.table = kTable;
  Namespace ns(*table_, *blobs_, nullptr, no);
  ASSERT_TRUE(ns.Init().ok());
  auto no_blobs = Importer::ShouldAutoImport(*table_, *blobs_, kContainer, kTable);
  ASSERT_TRUE(no_blobs.ok());
  EXPECT_FALSE(*no_blobs);
  PutBlob("x", "x");
  auto with_blobs = Importer::ShouldAutoImport(*table_, *blobs_, kContainer, kTable);
  ASSERT_TRUE(with_blobs.ok());
  EXPECT_TRUE(*with_blobs);
  ASSERT_TRUE(Import().clean());
  auto after = Importer::ShouldAutoImport(*table_, *blobs_, kContainer, kTable);
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(*after);
}

TEST_F(ImportTest, AMissingContainerIsAnError) {
  ImportOptions o;
  o.container = "nosuchcontainer";
  o.table = kTable;
  Importer importer(*table_, *blobs_, o);
  auto r = importer.Run();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().Is(Code::kNotFound));
  EXPECT_FALSE(table_->Get(kTable, "~fs", "format").ok()) << "nothing written";
}

}  // namespace
}  // namespace stampfs
