#include "tests/sim/ledger.h"

#include <sys/stat.h>

#include <functional>

#include "fs/namespace/inode_table.h"
#include "fs/namespace/names.h"
#include "tests/sim/model.h"

namespace stampfs::sim {

std::string ContentOf(const ObservedEntry& e) {
  return e.blob_missing ? std::string("<blob missing>") : e.content;
}

View& Ledger::Load(int mount, uint64_t ino, const Snapshot& now, bool fresh) {
  auto [it, inserted] = views_.try_emplace({mount, ino});
  View& v = it->second;
  if (inserted) {
    v.ino = ino;
    const ObservedEntry* e = fresh ? nullptr : now.Ino(ino);
    v.base = e ? ContentOf(*e) : "";
    if (e && S_ISREG(e->mode) && e->betag.empty()) {
      // An entry naming no version, with a blob at its name: a first commit
      // whose entry merge was lost (an outage). A writable open adopts it
      // (FileData::Validate) and works on top of it.
      auto blob = now.blobs.find(e->blob.empty() ? BlobNameFor(e->path) : e->blob);
      if (blob != now.blobs.end() && HeldByAnyView(ino, blob->second)) v.base = blob->second;
    }
    v.data = v.base;
  }
  return v;
}

View* Ledger::Find(int mount, uint64_t ino) {
  auto it = views_.find({mount, ino});
  return it == views_.end() ? nullptr : &it->second;
}

void Ledger::Drop(int mount, uint64_t ino) { views_.erase({mount, ino}); }

void Ledger::EndStep() {
  for (const auto& [mount, ino] : drops_) {
    View* v = Find(mount, ino);
    if (v != nullptr && v->refs == 0) Drop(mount, ino);
  }
  drops_.clear();
}

void Ledger::Killed(int mount) {
  for (auto it = views_.begin(); it != views_.end();) {
    if (it->first.first == mount && (!it->second.dirty || it->second.unlinked)) {
      it = views_.erase(it);
    } else {
      if (it->first.first == mount) it->second.refs = 0;
      ++it;
    }
  }
}

std::vector<uint64_t> Ledger::Inos(int mount) const {
  std::vector<uint64_t> out;
  for (const auto& [key, v] : views_) {
    if (key.first == mount) out.push_back(key.second);
  }
  return out;
}

void Ledger::Write(View& v, uint64_t off, const std::string& bytes) {
  if (v.data.size() < off + bytes.size()) v.data.resize(off + bytes.size(), '\0');
  v.data.replace(off, bytes.size(), bytes);
  if (v.tainted) {
    for (size_t i = 0; i < bytes.size(); ++i) v.overlay[off + i] = bytes[i];
  }
  v.dirty = true;
}

void Ledger::Truncate(View& v, uint64_t size) {
  v.data.resize(size, '\0');
  if (v.tainted) v.overlay.erase(v.overlay.lower_bound(size), v.overlay.end());
  v.dirty = true;
}

bool Ledger::Holds(const std::string& content, const std::map<uint64_t, char>& overlay) {
  for (const auto& [off, c] : overlay) {
    if (off >= content.size() || content[off] != c) return false;
  }
  return true;
}

void Ledger::Acked(int mount, View& v, const Snapshot& now, int step, std::string* violation) {
  // Truncating an empty file changes nothing: nothing new is promised.
  const bool had_changes = v.dirty && (v.data != v.base || v.tainted);
  const bool partial = v.tainted;
  std::map<uint64_t, char> overlay = std::move(v.overlay);
  v.overlay.clear();
  v.tainted = false;
  v.dirty = false;
  const ObservedEntry* e = now.Ino(v.ino);
  if (e == nullptr && v.base.empty() && !doomed_.count(v.ino)) {
    // A new file whose entry never reached the table before a kill: the
    // journal replay inserted it under a new inode (commit=async).
    for (const auto& [path, entry] : now.by_path) {
      if (S_ISREG(entry.mode) && !IsConflictCopyName(BaseName(path)) &&
          ContentOf(entry) == v.data && !v.data.empty()) {
        e = &entry;
      }
    }
  }
  // POSIX: what is written to a file whose name was removed goes with it.
  if (!had_changes || v.unlinked || (e == nullptr && doomed_.count(v.ino))) return;
  // Where the promised bytes may be: the file, or a conflict copy.
  std::vector<const ObservedEntry*> places;
  if (e != nullptr) places.push_back(e);
  for (const ObservedEntry* c : now.ConflictCopies()) places.push_back(c);
  bool found = v.uncertain && e != nullptr;
  for (const ObservedEntry* p : places) {
    if (found) break;
    found = partial ? Holds(ContentOf(*p), overlay) : ContentOf(*p) == v.data;
  }
  if (!found && violation->empty()) {
    *violation = "invariant 1: mount m" + std::to_string(mount) + " was told ino " +
                 std::to_string(v.ino) + " is committed, but " +
                 (partial ? "the bytes written after its conflict are"
                          : "its content '" + Printable(v.data) + "' is") +
                 " neither in the file (" +
                 (e ? Printable(e->path) + ": '" + Printable(ContentOf(*e)) + "'" : "no entry") +
                 ") nor in a conflict copy";
  }
  if (v.uncertain && e != nullptr) v.data = ContentOf(*e);
  v.uncertain = false;
  v.own.insert(v.base);  // the landing of this commit is checked after the step
  v.base = v.data;
  acks_.push_back(Ack{e ? e->ino : v.ino, mount, step, e ? e->path : "", v.data, overlay, partial});
}

void Ledger::Conflicted(View& v, const Snapshot& now) {
  const ObservedEntry* e = now.Ino(v.ino);
  v.base = e ? ContentOf(*e) : "";
  v.data = v.base;
  v.dirty = false;
  v.uncertain = false;
  v.own.clear();
  v.overlay.clear();
  v.tainted = true;
  v.conflicted = true;
}

void Ledger::ForeignPut(const std::string& blob, const std::string& content) {
  foreign_[blob].insert(content);
  versions_.insert(std::hash<std::string>{}(content));
}

bool Ledger::ForeignExplains(const ObservedEntry& e, const std::string& now) const {
  const std::string blob = e.blob.empty() ? BlobNameFor(e.path) : e.blob;
  if (e.blob_missing) return foreign_deleted_.count(blob) > 0;
  auto it = foreign_.find(blob);
  return it != foreign_.end() && it->second.count(now) > 0;
}

bool Ledger::KnownVersion(int mount, uint64_t ino, const std::string& content) const {
  if (content.empty() || versions_.count(std::hash<std::string>{}(content))) return true;
  auto it = views_.find({mount, ino});
  return it != views_.end() && (it->second.data == content || it->second.base == content);
}

bool Ledger::HeldByAnyView(uint64_t ino, const std::string& content) const {
  for (const auto& [key, view] : views_) {
    if (key.second == ino && (view.data == content || view.own.count(content) > 0)) return true;
  }
  return false;
}

bool Ledger::Explained(int actor, uint64_t ino, const std::string& prev, const std::string& now,
                       bool new_entry) {
  View* v = actor < 0 ? nullptr : Find(actor, ino);
  if (v == nullptr && new_entry) {
    // A journal replay inserts a file that never reached the table under a
    // new inode: any new-file view of the actor with that content.
    for (auto& [key, view] : views_) {
      // (Its acknowledgement may be checked already: then "" is an own base.)
      const bool new_file = view.base.empty() || view.own.count(std::string()) > 0;
      if (key.first == actor && new_file && (view.uncertain || view.data == now)) {
        v = &view;
      }
    }
  }
  auto explains = [&](View* view, bool exact) {
    const bool content_ok = view->data == now || (!exact && (view->uncertain || view->tainted));
    const bool base_ok = view->base == prev || view->own.count(prev) > 0;
    if (!content_ok || !base_ok) return false;
    view->own.insert(now);
    return true;
  };
  if (v != nullptr && explains(v, false)) return true;
  // Another mount's commit whose blob landed with its answer lost (an
  // outage), its entry merge done by the actor's access (Adopt): exactly
  // that mount's content, on the version it was based on.
  for (auto& [key, view] : views_) {
    if (key.first != actor && key.second == ino && explains(&view, true)) return true;
  }
  return false;
}

void Ledger::CheckLandings(const Snapshot& before, const Snapshot& after, int actor, int step,
                           std::string* violation) {
  for (const auto& [name, content] : after.blobs)
    versions_.insert(std::hash<std::string>{}(content));
  for (const auto& [ino, path] : after.path_of) {
    const ObservedEntry& e = after.by_path.at(path);
    if (!S_ISREG(e.mode)) continue;
    const std::string now = ContentOf(e);
    // Mid-rename (an intent left by a crash) a moved file's old blob may be
    // gone before its entry moved: the roll-forward finishes it.
    if (e.blob_missing && after.intents > 0) continue;
    const ObservedEntry* old = before.Ino(ino);
    auto last = known_.find(ino);
    if (last == known_.end() && old != nullptr && old->blob_missing && before.intents > 0) {
      // First seen mid-rename (skipped above): the roll-forward shows the
      // content its writer had, whichever mount finishes it.
      known_[ino] = now;
      if (now.empty() || HeldByAnyView(ino, now)) continue;
    }
    const bool seen = last != known_.end() || old != nullptr;
    const std::string prev = last != known_.end() ? last->second : old ? ContentOf(*old) : "";
    known_[ino] = now;
    if (!seen && (now.empty() || IsConflictCopyName(BaseName(path)))) continue;
    if (seen && prev == now) continue;
    if (ForeignExplains(e, now) || Explained(actor, ino, prev, now, !seen)) {
      landings_.push_back(Landing{ino, step, prev});
      continue;
    }
    if (violation->empty()) {
      *violation = "invariant 2: in a step of m" + std::to_string(actor) + ", " + Printable(path) +
                   " (ino " + std::to_string(ino) + ") changed from '" + Printable(prev) +
                   "' to '" + Printable(now) +
                   "', which no view of that mount based on the old version explains "
                   "(a commit over another mount's version, or bytes from nowhere)";
    }
  }
}

void Ledger::DirChmod(int mount, uint64_t ino, uint32_t mode, bool acked, int step,
                      const std::string& path) {
  auto [it, first] = dir_modes_.try_emplace(ino);
  DirMode& d = it->second;
  d.shared = d.shared || (!first && d.mount != mount);
  d.mount = mount;
  d.mode = mode & 07777;
  d.acked = acked;
  d.step = step;
  d.path = path;
}

void Ledger::CheckDurable(const Snapshot& end, std::string* violation) const {
  for (const auto& [ino, d] : dir_modes_) {
    if (!violation->empty()) return;
    const ObservedEntry* e = end.Ino(ino);
    if (!d.acked || d.shared || e == nullptr || (e->mode & 07777) == d.mode) continue;
    *violation = "invariant 1: mode " + std::to_string(d.mode) + " of directory " +
                 Printable(d.path) + " (ino " + std::to_string(ino) + "), acknowledged to m" +
                 std::to_string(d.mount) + " at step " + std::to_string(d.step) +
                 ", is lost: it holds " + std::to_string(e->mode & 07777);
  }
  for (const Ack& a : acks_) {
    if (!violation->empty()) return;
    if (doomed_.count(a.ino)) continue;
    bool superseded = false;
    for (const Landing& l : landings_) {
      if (l.ino == a.ino && l.step >= a.step && l.prev == a.content) superseded = true;
    }
    for (const auto& [content, step] : foreign_replaced_) {
      const bool held = a.partial ? Holds(content, a.overlay) : content == a.content;
      superseded = superseded || (step >= a.step && held);
    }
    if (superseded) continue;
    std::vector<const ObservedEntry*> places;
    if (const ObservedEntry* e = end.Ino(a.ino)) places.push_back(e);
    for (const ObservedEntry* c : end.ConflictCopies()) places.push_back(c);
    bool found = false;
    for (const ObservedEntry* p : places) {
      found = found || (a.partial ? Holds(ContentOf(*p), a.overlay) : ContentOf(*p) == a.content);
    }
    if (!found) {
      const ObservedEntry* e = end.Ino(a.ino);
      *violation = "invariant 1: content '" + Printable(a.content) + "' of " + Printable(a.path) +
                   " (ino " + std::to_string(a.ino) + "), acknowledged to m" +
                   std::to_string(a.mount) + " at step " + std::to_string(a.step) +
                   ", is lost: the file holds " +
                   (e ? "'" + Printable(ContentOf(*e)) + "'" : "nothing (no entry)") +
                   " and no conflict copy has it";
    }
  }
}

}  // namespace stampfs::sim
