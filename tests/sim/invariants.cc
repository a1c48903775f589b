#include "tests/sim/invariants.h"

#include <map>

#include "fs/admin/fsck.h"
#include "fs/namespace/inode_table.h"
#include "tests/sim/model.h"

namespace stampfs::sim {

std::string CheckBlobNaming(const Snapshot& snap, bool quiescent,
                            const std::set<std::string>* unmapped) {
  std::map<std::string, std::string> named;  // blob -> path of the entry naming it
  for (const auto& [path, e] : snap.by_path) {
    if (!S_ISREG(e.mode)) continue;
    const std::string blob = e.blob.empty() ? BlobNameFor(path) : e.blob;
    auto [it, inserted] = named.emplace(blob, path);
    if (!inserted) {
      return "invariant 5: entries '" + Printable(it->second) + "' and '" + Printable(path) +
             "' name one blob '" + Printable(blob) + "'";
    }
  }
  if (!quiescent) return "";
  for (const auto& [blob, content] : snap.blobs) {
    if (!named.count(blob) && !(unmapped && unmapped->count(blob))) {
      return "invariant 5: blob '" + Printable(blob) + "' ('" + Printable(content) +
             "') has no entry";
    }
  }
  return "";
}

std::string CheckFsck(World& world, const std::set<std::string>* unmapped) {
  FsckOptions o;
  o.container = kContainer;
  o.table = kTable;
  auto report = Fsck(world.raw_table(), world.raw_blobs(), o).Run();
  if (!report.ok()) return "invariant 4: fsck could not run: " + report.status().ToString();
  std::string out;
  for (const FsckFinding& f : report->findings) {
    if (unmapped && unmapped->count(f.where)) continue;
    out += std::string(out.empty() ? "invariant 4: fsck: " : "; ") + FsckKindName(f.kind) + ": " +
           Printable(f.where) + ": " + Printable(f.detail, 200);
  }
  return out;
}

namespace {

// A file's content as the mount serves it (open, read, release).
std::string ReadThrough(SimMount& m, uint64_t ino, uint64_t size) {
  if (!m.data->Open(ino, OpenFlags{false, false, false}).ok()) return "<open failed>";
  std::string out(size, '\0');
  uint64_t done = 0;
  while (done < size) {
    auto n = m.data->Read(ino, out.data() + done, size - done, done);
    if (!n.ok()) {
      out = "<" + n.status().ToString() + ">";
      break;
    }
    if (*n == 0) break;
    done += *n;
  }
  if (done < size && out.size() == size) out.resize(done);
  m.data->Release(ino).PermitUnchecked();
  return out;
}

void Walk(SimMount& m, BlobStore& raw, uint64_t ino, const std::string& path, bool with_content,
          std::map<std::string, std::string>* lines) {
  auto entries = m.ns->ReadDir(ino);
  if (!entries.ok()) {
    (*lines)[path] = Printable(path, 300) + " <readdir: " + entries.status().ToString() + ">";
    return;
  }
  for (const DirEntry& d : *entries) {
    const std::string p = JoinPath(path, d.name);
    m.ns->Remember(ino, d);
    Attr a = d.attr;
    m.data->OverrideAttr(a.ino, &a);
    std::string line = Printable(p, 300);
    if (a.IsDir()) {
      line += " dir " + std::to_string(a.mode & 07777);
      Walk(m, raw, a.ino, p, with_content, lines);
    } else if (a.IsSymlink()) {
      auto t = m.ns->ReadLink(a.ino);
      line += " link -> " + (t.ok() ? Printable(*t) : "<" + t.status().ToString() + ">");
    } else {
      line += " file " + std::to_string(a.mode & 07777) + " size " + std::to_string(a.size);
      if (with_content) {
        auto st = m.ns->GetFile(a.ino);
        std::string content;
        if (!st.ok()) {
          content = "<" + st.status().ToString() + ">";
        } else if (m.data->async() && m.data->Pending(a.ino)) {
          // Closed but not committed yet: the mount shows its local data.
          content = ReadThrough(m, a.ino, a.size);
        } else if (!st->blob_etag.empty()) {
          auto data = raw.ReadToString(kContainer, st->blob);
          content = data.ok() ? *data : "<" + data.status().ToString() + ">";
        }
        line += " " + Printable(content, 4096);
      }
    }
    (*lines)[p] = line;
  }
}

}  // namespace

std::string RenderMount(SimMount& m, BlobStore& raw, bool with_content) {
  std::map<std::string, std::string> lines;
  Walk(m, raw, kRootIno, "/", with_content, &lines);
  std::string out;
  for (const auto& [path, line] : lines) out += line + "\n";
  return out;
}

}  // namespace stampfs::sim
