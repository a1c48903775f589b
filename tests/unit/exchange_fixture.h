// Shared by the RENAME_EXCHANGE tests on the fakes (exchange_test.cc,
// xexchange_test.cc): the exchange call and views of what is stored.
#pragma once

#include <sys/stat.h>

#include "tests/unit/rename_fixture.h"

namespace stampfs {

class ExchangeFixture : public RenameFixture {
 protected:
  void SetUp() override { Reset(); }

  Result<std::vector<std::string>> Exchange(Namespace& ns, const std::string& x,
                                            const std::string& y) {
    return ns.Rename(InoOf(ns, ParentPath(x)), BaseName(x), InoOf(ns, ParentPath(y)), BaseName(y),
                     Namespace::kExchange);
  }

  // What the table says path `p` holds, read straight from the stores (no
  // roll-forward): "f <data of the blob its entry names>", "l <target>", ...
  std::string Raw(const std::string& p) {
    auto e = table_->Get(kTable, PartitionKeyForDirectory(ParentPath(p)), RowKeyForName(BaseName(p)));
    if (!e.ok()) return "<" + e.status().ToString() + ">";
    if (EntryType(*e) == S_IFLNK) return "l " + e->GetBinary("target")->bytes;
    if (EntryType(*e) != S_IFREG) return "other";
    const std::string* betag = e->GetString("betag");
    if (!betag || betag->empty()) return "f ";
    auto data = blobs_->ReadToString(kContainer, *e->GetString("blob"), 0, 0, Condition::IfMatch(*betag));
    return "f " + (data.ok() ? *data : "<" + data.status().ToString() + ">");
  }

  // A new mount's (or `ns`'s) view, a file without data (its blob read fails) as "f ".
  Tree View(Namespace* ns = nullptr) {
    Tree t = Snapshot(ns);
    for (auto& [path, what] : t) {
      if (what.rfind("f <", 0) == 0) what = "f ";
    }
    return t;
  }

  // The blobs `tree` has: one per file with data, under its path.
  static std::set<std::string> DataBlobs(const Tree& tree) {
    std::set<std::string> out;
    for (const auto& [path, what] : tree) {
      if (what.size() > 2 && what[0] == 'f') out.insert(BlobNameFor(path));
    }
    return out;
  }

  std::string BlobData(const std::string& path) {
    auto data = blobs_->ReadToString(kContainer, BlobNameFor(path), 0, 0, Condition::None());
    return data.ok() ? *data : "<" + data.status().ToString() + ">";
  }

  // `ino` (a file never committed) was exchanged with a file holding
  // `other_data` and is now at `path`, the other at `other_path`: its first
  // commit goes to its new path's blob, where no stale blob is left.
  void ExpectFirstCommitAtNewName(Namespace& ns, uint64_t ino, const std::string& path,
                                  const std::string& other_path, const std::string& other_data) {
    auto st = ns.GetFile(ino, true);
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->blob, BlobNameFor(path)) << "its first commit goes to its new path's blob";
    auto etag = blobs_->PutString(kContainer, st->blob, "late", {}, Condition::IfNoneMatchAny());
    ASSERT_TRUE(etag.ok()) << "no stale blob left at its new name";
    ASSERT_TRUE(ns.CommitFile(ino, 4, NowNs(), *etag, "").ok());
    EXPECT_EQ(Snapshot()[path], "f late");
    EXPECT_EQ(Snapshot()[other_path], "f " + other_data);
  }
};

}  // namespace stampfs
