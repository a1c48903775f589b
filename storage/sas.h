// What a shared access signature grants, read from its own fields (the
// service checks the signature; this only reads what the token claims).
// Used to mount read-only when the token cannot write, rather than failing
// each write with 403.
#pragma once

#include <string>

namespace stampfs {

struct SasGrant {
  std::string permissions;  // sp: r, w, d, l, a, c, u, ...
  std::string services;     // ss of an account SAS (b, t, ...); empty for a service SAS
  std::string resource;     // sr of a service SAS (c = container, b = blob); tn for a table
  std::string expiry;       // se
  bool account_sas() const { return !services.empty(); }
  // None of the permissions that change anything: w, a, c, d, u, x (write,
  // add, create, delete, update, delete version), p (permanent delete).
  bool read_only() const;
  // 'd': blobs and table rows can be deleted (unlink, rmdir, rename need it).
  bool can_delete() const { return permissions.find('d') != std::string::npos; }
};

// Reads the fields of a token ("sv=...&sp=rl&sig=..."), with or without a
// leading '?'. Unknown fields are ignored.
SasGrant ParseSas(const std::string& token);

// "sp=rl, ss=bt, se=2026-12-31T00:00:00Z": the token's claims for messages.
// Never contains the signature.
std::string DescribeSas(const std::string& token);

}  // namespace stampfs
