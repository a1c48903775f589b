// RENAME_EXCHANGE (docs/design.md, "Exchange").
//
// The two entries swap names in one transaction of their directory (each
// Replace If-Match the ETag read), so the swap is atomic. Each file keeps
// naming its own blob through the swap, so both names read the right data at
// every instant. When a swapped file has data, an intent row (op "exchange")
// is written before the swap, and FinishExchange then puts each blob back
// under its entry's path: copy, re-point the entry If-Match, delete the old
// blob. A blob an entry names is never overwritten: of two crossed blobs one
// goes to a temporary name first (ExchangeTempBlob). Every step is decided
// from what the table holds, so a crash at any point is finished by the next
// mount or fsck --repair (FinishRename hands exchange intents here).
// Two entries of two directories (no transaction spans two partitions) are
// swapped by a roll-forward from an intent: fs/namespace/namespace_xexchange.cc.
// Refused with EINVAL: directories (their entries are keyed by their path)
// and hard-linked names (their blob and paths are the inode record's).
#include <sys/stat.h>
#include <map>

#include "fs/base/fault_points.h"
#include "fs/namespace/hard_links.h"
#include "fs/base/log.h"
#include "fs/namespace/names.h"
#include "fs/namespace/namespace.h"
#include "fs/namespace/table_scan.h"
#include "storage/table_keys.h"

namespace stampfs {

namespace {

const std::string& Prop(const Entity& e, const char* name) {
  static const std::string kEmpty;
  const std::string* s = e.GetString(name);
  return s ? *s : kEmpty;
}

uint64_t InoOf(const Entity& e) { return static_cast<uint64_t>(e.GetInt64("ino")); }

bool IsFile(const Entity& e) { return EntryType(e) == S_IFREG && !IsLinkName(e); }

// A file whose data is a committed blob (the entry's "blob" at "betag").
bool HasData(const Entity& e) { return IsFile(e) && !Prop(e, "betag").empty(); }

// The blob a file entry names ("" for other entries).
std::string BlobNamed(const Entity& e) { return IsFile(e) ? Prop(e, "blob") : std::string(); }

}  // namespace

// Whether `e` is claimed by a rename or exchange (`exchanges_only`: an
// exchange) whose intent still exists.
Result<bool> Namespace::ClaimedByLiveIntent(const Entity& e, bool exchanges_only) {
  const std::string& mark = Prop(e, kRenamingProperty);
  if (mark.empty()) return false;
  table_requests++;
  auto other = table_.Get(options_.table, kIntentsPartition, mark);
  if (other.ok()) return !exchanges_only || Prop(*other, "op") != "rename";
  if (other.status().Is(Code::kNotFound)) return false;
  return other.status();
}

Status Namespace::CheckNotExchanging(const Entity& e, const std::string& path) {
  auto claimed = ClaimedByLiveIntent(e, true);
  STAMPFS_RETURN_IF_ERROR(claimed);
  if (*claimed) return Status(Code::kConflict, path + " is being exchanged by another mount");
  return Status::Ok();
}

// REQUIRES: rename_mu_
Result<std::vector<std::string>> Namespace::Exchange(uint64_t parent, const std::string& name,
                                                     uint64_t new_parent,
                                                     const std::string& new_name) {
  auto from = Locate(parent, name);
  STAMPFS_RETURN_IF_ERROR(from);
  auto to = Locate(new_parent, new_name);
  STAMPFS_RETURN_IF_ERROR(to);
  // `e` (at `was_at`) under the name `at`, replacing that row If-Match `row_etag`. A file
  // with data keeps its blob (claimed by the intent `mark` until it is back
  // under its path); one without takes its new path's blob unless the other
  // entry's data is there (`keep_blob`), then it follows at the roll-forward.
  const auto swapped = [&](const Entity& e, const std::string& was_at, const Located& at,
                           const std::string& row_etag, const std::string& mark, bool keep_blob) {
    Entity moved = e;
    moved.row_key = RowKeyForName(at.name);
    moved.etag.clear();
    SetEntryName(at.name, &moved);
    moved.properties["ctime"] = NowNs();
    moved.properties.erase(kRenamingProperty);
    if (IsFile(e)) {
      std::string blob = keep_blob ? Prop(e, "blob") : BlobNameFor(at.path);
      if (blob.empty()) blob = BlobNameFor(was_at);
      moved.properties["blob"] = blob;
      if (blob != BlobNameFor(at.path) && !mark.empty()) moved.properties[kRenamingProperty] = mark;
    }
    return TableOperation::Replace(moved, Condition::IfMatch(row_etag));
  };
  for (int attempt = 0; attempt < 4; ++attempt) {
    auto a = FetchEntry(from->parent_path, name, true);
    STAMPFS_RETURN_IF_ERROR(a);
    auto b = FetchEntry(to->parent_path, new_name, true);
    STAMPFS_RETURN_IF_ERROR(b);
    if (from->path == to->path) return std::vector<std::string>{};
    for (const Entity* e : {&*a, &*b}) {
      if (EntryType(*e) == S_IFDIR || IsLinkName(*e)) {
        return Status(Code::kInvalidArgument,
                      "RENAME_EXCHANGE of a directory or a hard-linked name is not supported");
      }
      auto claimed = ClaimedByLiveIntent(*e);
      STAMPFS_RETURN_IF_ERROR(claimed);
      if (*claimed) return Status(Code::kNotFound, from->path + " is being renamed by another mount");
    }
    if (from->parent_path != to->parent_path) {
      auto done = ExchangeAcross(*from, *to, *a, *b);
      STAMPFS_RETURN_IF_ERROR(done);
      if (!*done) continue;  // an entry changed before its claim: decide again
      inodes_.Move(InoOf(*a), new_parent, new_name);
      inodes_.Move(InoOf(*b), parent, name);
      return std::vector<std::string>{};
    }
    const bool data = HasData(*a) || HasData(*b);
    RenameIntent intent;
    if (data) {
      STAMPFS_RETURN_IF_ERROR(FinishPendingRenames());
      intent.exchange = true;
      intent.from = from->path;
      intent.to = to->path;
      intent.ino = InoOf(*a);
      intent.blob = BlobNamed(*a);
      intent.betag = Prop(*a, "betag");
      intent.ino2 = InoOf(*b);
      intent.blob2 = BlobNamed(*b);
      intent.betag2 = Prop(*b, "betag");
      STAMPFS_RETURN_IF_ERROR(WriteIntent(&intent));
      FaultPoint("exchange.after_intent");
    }
    BatchError err;
    auto r = CommitInDirectory(from->parent_path,
                               {swapped(*a, from->path, *to, b->etag, intent.id, data),
                                swapped(*b, to->path, *from, a->etag, intent.id, data)},
                               &err, true);
    const bool refused = !r.ok() && err.failed_index < 2 &&
                         (r.status().Is(Code::kPreconditionFailed) || r.status().Is(Code::kNotFound));
    if (data && r.ok()) FaultPoint("exchange.after_swap");
    if (data && refused) {
      // Nothing swapped: the intent goes (left behind, it is dropped as such).
      table_requests++;
      table_.Delete(options_.table, kIntentsPartition, intent.id, Condition::IfMatch("*"))
          .PermitUnchecked();
    }
    if (refused && r.status().Is(Code::kPreconditionFailed)) continue;
    if (!r.ok()) {
      // Outcome unknown: the intent (if any) stays, and its roll-forward decides.
      if (data && !refused) LeaveUnfinished(intent);
      return r.status();
    }
    inodes_.Move(InoOf(*a), new_parent, new_name);
    inodes_.Move(InoOf(*b), parent, name);
    if (data) {
      // The names are exchanged: putting the blobs back is the intent's
      // business from here (the next rename, mount or fsck retries it).
      bool settled = false;
      Status s = FinishExchange(intent, &settled);
      if (!s.ok()) {
        LogWarning(intent.Describe() + ": blobs not yet under their new names: " + s.ToString());
        if (!settled) LeaveUnfinished(intent);
      }
    }
    return std::vector<std::string>{};
  }
  return Status(Code::kPreconditionFailed, from->path + " kept changing under concurrent updates");
}

// Puts the blobs of an exchanged pair back under their entries' paths. At
// `intent.from` the entry of `ino2` is expected, at `intent.to` that of
// `ino`; an entry not there (never swapped, or removed or renamed since) is
// left alone. Each round reads both entries and moves one blob: to its
// entry's path when no entry's data is there, else (the two blobs crossed)
// to the temporary name. Copies are made where no entry names the target
// (If-None-Match, or If-Match the stale version found there), the entry is
// re-pointed If-Match its ETag, and the old blob is deleted If-Match the
// version copied. Last, blobs of this exchange no entry names are deleted.
Status Namespace::FinishExchange(const RenameIntent& intent, bool* settled) {
  *settled = false;
  const std::string temp = ExchangeTempBlob(intent.id);
  std::map<std::string, std::string> made;  // copies made: blob -> ETag
  struct Side {
    std::string path;
    uint64_t ino;
    std::optional<Entity> e;    // set when the expected entry is there
    std::optional<Entity> any;  // whatever entry is there
  };
  Side sides[2] = {{intent.from, intent.ino2, {}, {}}, {intent.to, intent.ino, {}, {}}};
  auto read = [&]() -> Status {
    for (Side& s : sides) {
      s.e.reset();
      s.any.reset();
      auto e = FetchEntry(ParentPath(s.path), BaseName(s.path), true, false);
      if (!e.ok() && !e.status().Is(Code::kNotFound)) return e.status();
      if (e.ok()) s.any = *e;
      if (e.ok() && InoOf(*e) == s.ino) s.e = std::move(*e);
    }
    return Status::Ok();
  };
  // Moves `s`'s blob to `target` (an entry without data: only its "blob").
  // kPreconditionFailed: something changed meanwhile; read again.
  auto move = [&](Side& s, const std::string& target) -> Status {
    const Entity& e = *s.e;
    const std::string from_blob = Prop(e, "blob");
    const std::string from_etag = Prop(e, "betag");
    Entity moved = e;
    moved.etag.clear();
    moved.properties["blob"] = target;
    if (target == BlobNameFor(s.path)) moved.properties.erase(kRenamingProperty);
    std::string etag;
    if (HasData(e)) {
      auto copy = blobs_.Copy(options_.container, from_blob, target, Condition::IfNoneMatchAny(),
                              from_etag);
      if (copy.status().Is(Code::kPreconditionFailed) || copy.status().Is(Code::kAlreadyExists)) {
        // A stale version at the target (a crash between a re-point and
        // its delete), or the source changed: which one, the target says.
        auto there = blobs_.GetProperties(options_.container, target);
        if (!there.ok()) return there.status();
        copy = blobs_.Copy(options_.container, from_blob, target, Condition::IfMatch(there->etag),
                           from_etag);
      }
      STAMPFS_RETURN_IF_ERROR(copy);
      etag = *copy;
      made[target] = etag;
      moved.properties["betag"] = etag;
      NoteMovedFrom(from_etag, &moved);
      FaultPoint("exchange.after_copy");
    }
    BatchError err;
    auto r = CommitInDirectory(ParentPath(s.path),
                               {TableOperation::Replace(moved, Condition::IfMatch(e.etag))}, &err,
                               false);
    if (!r.ok() && err.failed_index == 0 && r.status().Is(Code::kNotFound)) {
      return Status(Code::kPreconditionFailed, s.path + " was removed");
    }
    STAMPFS_RETURN_IF_ERROR(r);
    if (!HasData(e)) return Status::Ok();
    BlobMoved({s.ino, from_blob, from_etag, target, etag});
    FaultPoint("exchange.after_repoint");
    blobs_.Delete(options_.container, from_blob, Condition::IfMatch(from_etag)).PermitUnchecked();
    return Status::Ok();
  };
  for (int round = 0;; ++round) {
    if (round == 12) {
      return Status(Code::kPreconditionFailed, intent.Describe() + ": the files kept changing");
    }
    STAMPFS_RETURN_IF_ERROR(read());
    Side* next = nullptr;
    std::string target;
    for (int i = 0; i < 2 && !next; ++i) {
      Side& s = sides[i];
      const Side& other = sides[1 - i];
      if (!s.e || !IsFile(*s.e) || Prop(*s.e, "blob") == BlobNameFor(s.path)) continue;
      const bool blocked =
          other.e && HasData(*other.e) && BlobNamed(*other.e) == BlobNameFor(s.path);
      if (!blocked) {
        next = &s;
        target = BlobNameFor(s.path);
      }
    }
    if (!next) {
      // Both blocked: the two blobs crossed (both files have data).
      for (Side& s : sides) {
        if (s.e && HasData(*s.e) && Prop(*s.e, "blob") != BlobNameFor(s.path) &&
            Prop(*s.e, "blob") != temp) {
          next = &s;
          target = temp;
          break;
        }
      }
    }
    if (!next) {
      // Every entry there names its path's blob; claims this exchange left
      // on entries that needed no move (across directories) go.
      Side* marked = nullptr;
      for (Side& s : sides) {
        if (s.e && Prop(*s.e, kRenamingProperty) == intent.id) marked = &s;
      }
      if (!marked) break;
      Entity released = *marked->e;
      released.etag.clear();
      released.properties.erase(kRenamingProperty);
      BatchError err;
      auto r = CommitInDirectory(ParentPath(marked->path),
                                 {TableOperation::Replace(released, Condition::IfMatch(marked->e->etag))},
                                 &err, false);
      if (!r.ok() && !(err.failed_index == 0 && (r.status().Is(Code::kPreconditionFailed) ||
                                                  r.status().Is(Code::kNotFound)))) {
        return r.status();
      }
      continue;
    }
    Status s = move(*next, target);
    if (!s.ok() && !s.Is(Code::kPreconditionFailed) && !s.Is(Code::kNotFound)) return s;
  }
  // Blobs of this exchange no entry at its two paths holds its data in
  // (swapped or not; a file without data only names where its first commit
  // goes): copies whose re-point lost a race, the versions the intent
  // recorded, the temporary blob.
  auto named = [&](const std::string& blob) {
    for (const Side& s : sides) {
      if (s.any && HasData(*s.any) && BlobNamed(*s.any) == blob) return true;
    }
    return false;
  };
  std::vector<std::pair<std::string, Condition>> strays;
  for (const auto& [blob, etag] : made) strays.emplace_back(blob, Condition::IfMatch(etag));
  if (!intent.betag.empty()) strays.emplace_back(intent.blob, Condition::IfMatch(intent.betag));
  if (!intent.betag2.empty()) strays.emplace_back(intent.blob2, Condition::IfMatch(intent.betag2));
  strays.emplace_back(temp, Condition::None());  // this exchange's alone
  for (const auto& [blob, cond] : strays) {
    if (named(blob)) continue;
    Status gone = blobs_.Delete(options_.container, blob, cond);
    if (!gone.ok() && !gone.Is(Code::kNotFound) && !gone.Is(Code::kPreconditionFailed)) return gone;
  }
  table_requests++;
  Status s = table_.Delete(options_.table, kIntentsPartition, intent.id, Condition::IfMatch("*"));
  if (s.Is(Code::kNotFound)) s = Status::Ok();
  *settled = s.ok();
  return s;
}

}  // namespace stampfs
