// RENAME_EXCHANGE of two entries of two directories (docs/design.md,
// "Exchange"). No transaction spans two partitions, so the swap is rolled
// forward from an intent like a rename across directories:
//   1. the intent (op "exchange-across") holds both entries' inodes and blobs, and
//      the entry at `from` (A) as it was decided ("stash");
//   2. both entries are claimed (`renaming` = intent id, If-Match): another
//      mount's rename, exchange, unlink, rename-over or link of either then
//      fails until the intent is gone;
//   3. `from` gets a copy of the entry at `to` (B), If-Match A's claimed row:
//      both names read B, and A lives on in the intent alone;
//   4. `to` gets A from the intent, If-Match B's row: the names are swapped;
//   5. FinishExchange puts each blob back under its entry's path.
// Every step is decided from the inodes at the two names: A at `from` and B
// at `to`: not swapped (claim, step 3); B at both: step 4; A at `to`: step 5.
// Each name reads its old or its new entry at every instant. A state no step
// leads to (a claimed entry gone: only a mount without claims could do it)
// is reported and the intent left in the table, never guessed at.
#include <sys/stat.h>

#include "fs/base/fault_points.h"
#include "fs/namespace/hard_links.h"
#include "fs/base/log.h"
#include "fs/namespace/names.h"
#include "fs/namespace/namespace.h"
#include "fs/namespace/table_scan.h"
#include "storage/table_keys.h"

namespace stampfs {

namespace {

uint64_t InoOf(const Entity& e) { return static_cast<uint64_t>(e.GetInt64("ino")); }

const std::string& Mark(const Entity& e) {
  static const std::string kEmpty;
  const std::string* s = e.GetString(kRenamingProperty);
  return s ? *s : kEmpty;
}

// `props` as the entry at `path`, claimed by `intent`: a file keeps naming
// its blob when the exchange moves data (FinishExchange puts it back),
// else it names its new path's (where its first commit goes).
Entity Placed(const std::map<std::string, PropertyValue>& props, const std::string& path,
              const RenameIntent& intent) {
  Entity e{PartitionKeyForDirectory(ParentPath(path)), RowKeyForName(BaseName(path)), props, {}};
  SetEntryName(BaseName(path), &e);
  e.properties["ctime"] = NowNs();
  e.properties[kRenamingProperty] = intent.id;
  const bool data = !intent.betag.empty() || !intent.betag2.empty();
  if (EntryType(e) == S_IFREG && !IsLinkName(e) && (!data || !e.GetString("blob"))) {
    e.properties["blob"] = BlobNameFor(path);
  }
  return e;
}

// Whether two entries hold the same file state (ctime, name and claim aside).
bool SameState(const Entity& x, const Entity& y) {
  auto strip = [](std::map<std::string, PropertyValue> p) {
    for (const char* k : {"ctime", "name", kRenamingProperty}) p.erase(k);
    return p;
  };
  return strip(x.properties) == strip(y.properties);
}

}  // namespace

// REQUIRES: rename_mu_. `a` at `from` and `b` at `to` (two directories),
// both read just now and checked exchangeable. False: dropped with nothing
// moved because an entry changed meanwhile (read again and retry).
Result<bool> Namespace::ExchangeAcross(const Located& from, const Located& to, const Entity& a,
                                       const Entity& b) {
  STAMPFS_RETURN_IF_ERROR(FinishPendingRenames());
  RenameIntent intent;
  intent.exchange = true;
  intent.from = from.path;
  intent.to = to.path;
  intent.ino = InoOf(a);
  intent.ino2 = InoOf(b);
  const bool a_file = EntryType(a) == S_IFREG, b_file = EntryType(b) == S_IFREG;
  if (a_file) {
    intent.blob = a.GetString("blob") ? *a.GetString("blob") : "";
    intent.betag = a.GetString("betag") ? *a.GetString("betag") : "";
  }
  if (b_file) {
    intent.blob2 = b.GetString("blob") ? *b.GetString("blob") : "";
    intent.betag2 = b.GetString("betag") ? *b.GetString("betag") : "";
  }
  intent.stash = a.properties;
  intent.stash.erase(kRenamingProperty);
  intent.stash_etag = a.etag;
  STAMPFS_RETURN_IF_ERROR(WriteIntent(&intent));
  FaultPoint("exchange.after_intent");
  bool settled = false;
  Status s = FinishExchangeAcross(intent, &settled);
  if (s.Is(Code::kPreconditionFailed) && settled) return false;
  if (!s.ok() && !settled) LeaveUnfinished(intent);
  STAMPFS_RETURN_IF_ERROR(s);
  return true;
}

Status Namespace::FinishExchangeAcross(const RenameIntent& intent, bool* settled) {
  *settled = false;
  const std::string from_dir = ParentPath(intent.from), to_dir = ParentPath(intent.to);
  struct Side {
    std::string dir, path;
    std::optional<Entity> e;
    uint64_t ino = 0;
  };
  Side x{from_dir, intent.from, {}, 0}, y{to_dir, intent.to, {}, 0};
  auto read = [&]() -> Status {
    for (Side* s : {&x, &y}) {
      auto e = FetchEntry(s->dir, BaseName(s->path), true, false);
      if (!e.ok() && !e.status().Is(Code::kNotFound)) return e.status();
      s->e.reset();
      s->ino = 0;
      if (e.ok()) {
        s->ino = InoOf(*e);
        s->e = std::move(*e);
      }
    }
    return Status::Ok();
  };
  // Writes `row` over `s`'s entry If-Match its ETag (or inserts it where
  // none is). kPreconditionFailed: it changed meanwhile (read again).
  auto put = [&](const Side& s, Entity row, bool names) -> Status {
    row.etag.clear();
    TableOperation op = s.e ? TableOperation::Replace(row, Condition::IfMatch(s.e->etag))
                            : TableOperation::Insert(row);
    BatchError err;
    auto r = CommitInDirectory(s.dir, {op}, &err, names);
    if (!r.ok() && err.failed_index == 0 &&
        (r.status().Is(Code::kNotFound) || r.status().Is(Code::kAlreadyExists))) {
      return Status(Code::kPreconditionFailed, s.path + " changed");
    }
    return StatusOf(r);
  };
  // Nothing swapped: claims released, intent deleted, `why` returned.
  auto drop = [&](Status why) -> Status {
    LogWarning(intent.Describe() + ": dropped: " + why.ToString());
    STAMPFS_RETURN_IF_ERROR(read());
    for (Side* s : {&x, &y}) {
      const uint64_t was = s == &x ? intent.ino : intent.ino2;
      if (!s->e || s->ino != was || Mark(*s->e) != intent.id) continue;
      Entity released = *s->e;
      released.properties.erase(kRenamingProperty);
      Status r = put(*s, released, false);
      if (!r.ok() && !r.Is(Code::kPreconditionFailed)) return r;
    }
    table_requests++;
    Status s = table_.Delete(options_.table, kIntentsPartition, intent.id, Condition::IfMatch("*"));
    if (s.Is(Code::kNotFound)) s = Status::Ok();
    STAMPFS_RETURN_IF_ERROR(s);
    *settled = true;
    return why;
  };
  // Claims `s`'s entry for this intent (If-Match `etag`). kNotFound: another
  // live intent has it.
  auto claim = [&](Side& s, const std::string& etag) -> Status {
    if (Mark(*s.e) == intent.id) return Status::Ok();
    auto other = ClaimedByLiveIntent(*s.e);
    STAMPFS_RETURN_IF_ERROR(other);
    if (*other) return Status(Code::kNotFound, s.path + " is being renamed by another mount");
    Entity claimed = *s.e;
    claimed.properties[kRenamingProperty] = intent.id;
    s.e->etag = etag;
    return put(s, claimed, false);
  };
  for (int round = 0; round < 12; ++round) {
    STAMPFS_RETURN_IF_ERROR(read());
    if (y.ino == intent.ino) return FinishExchange(intent, settled);  // swapped
    const bool b_claimed = y.ino == intent.ino2 && Mark(*y.e) == intent.id;
    if (x.ino == intent.ino) {
      // Not swapped yet.
      if (y.ino != intent.ino2) {
        return drop(Status(Code::kNotFound, intent.to + " was removed or renamed by another mount"));
      }
      for (const Entity* e : {&*x.e, &*y.e}) {
        if (EntryType(*e) == S_IFDIR || IsLinkName(*e)) {
          return drop(Status(Code::kInvalidArgument, intent.Describe() + ": became a hard link"));
        }
      }
      // A before B; A only as it was decided (the stash must be its copy).
      const bool a_claimed = Mark(*x.e) == intent.id;
      Status c = claim(x, a_claimed ? x.e->etag : intent.stash_etag);
      // Unclaimed, A changed since the decision: decide again.
      if (c.Is(Code::kNotFound) || (c.Is(Code::kPreconditionFailed) && !a_claimed)) return drop(c);
      if (c.ok()) c = claim(y, y.e->etag);
      if (c.Is(Code::kNotFound)) return drop(c);
      if (c.Is(Code::kPreconditionFailed)) continue;
      STAMPFS_RETURN_IF_ERROR(c);
      STAMPFS_RETURN_IF_ERROR(read());
      if (x.ino != intent.ino || y.ino != intent.ino2) continue;
      FaultPoint("exchange.after_claim");
      if (!SameState(Placed(intent.stash, intent.from, intent), *x.e)) {
        // A changed after its claim (a commit, a chmod): the stash follows.
        RenameIntent now = intent;
        now.stash = x.e->properties;
        now.stash.erase(kRenamingProperty);
        table_requests++;
        auto w = table_.Update(options_.table, IntentToEntity(now), UpdateMode::kReplace,
                               Condition::IfMatch("*"));
        STAMPFS_RETURN_IF_ERROR(w);
        return FinishExchangeAcross(now, settled);
      }
      Status first = put(x, Placed(y.e->properties, intent.from, intent), true);
      if (first.Is(Code::kPreconditionFailed)) continue;
      STAMPFS_RETURN_IF_ERROR(first);
      FaultPoint("exchange.after_first_swap");
      continue;
    }
    if (x.ino == intent.ino2 && b_claimed) {
      // B at both names; A in the intent alone.
      const Entity b_there = Placed(y.e->properties, intent.from, intent);
      if (!SameState(b_there, *x.e)) {
        // B changed at its old name since its copy was made: copy it again.
        Status again = put(x, b_there, false);
        if (!again.ok() && !again.Is(Code::kPreconditionFailed)) return again;
        continue;
      }
      Status second = put(y, Placed(intent.stash, intent.to, intent), true);
      if (second.Is(Code::kPreconditionFailed)) continue;
      STAMPFS_RETURN_IF_ERROR(second);
      FaultPoint("exchange.after_second_swap");
      continue;
    }
    if (x.ino == intent.ino2 && !y.e) {
      // B's old entry went after the first swap (a mount that ignored the
      // claim): A still takes its new name, where nothing is now.
      Status second = put(y, Placed(intent.stash, intent.to, intent), true);
      if (!second.ok() && !second.Is(Code::kPreconditionFailed)) return second;
      continue;
    }
    if (y.ino == intent.ino2 && !b_claimed) {
      // B was never claimed, so `from` was never overwritten: A went first.
      return drop(Status(Code::kNotFound, intent.from + " was removed or renamed by another mount"));
    }
    // A claimed entry went away: whether A still needs the intent cannot be
    // told from the table. Left there (fsck reports it), nothing overwritten.
    *settled = true;  // not retried by this mount
    return Status(Code::kConflict, intent.Describe() + ": a claimed entry was removed by a mount "
                                   "that ignored the claim; the intent is left for inspection");
  }
  return Status(Code::kPreconditionFailed, intent.Describe() + ": the entries kept changing");
}

}  // namespace stampfs
