// Test-only crash points for the e2e crash tests (tests/e2e/coherence.sh).
//
// Code that must survive a crash at a given step calls FaultPoint("name")
// there. In a build configured with -DSTAMPFS_FAULT_POINTS=ON, the
// environment variable STAMPFS_FAULT=NAME:kill[:N] makes the Nth (default
// first) passage through point NAME kill the process with SIGKILL, as a
// power cut would. Other builds ignore the variable (and log that once), so
// a production daemon can never be made to crash by its environment.
//
// Points: rename.after_intent, rename.after_close (a directory's old "." row
// deleted), rename.after_copy, rename.after_partition, rename.after_insert,
// rename.after_table (fs/namespace/namespace_rename.cc); link.after_record,
// link.after_mark, link.after_blob_copy, link.after_blob_record,
// link.after_unlink_name, link.after_last_count (fs/namespace/namespace_links.cc);
// exchange.after_intent,
// exchange.after_swap, exchange.after_copy, exchange.after_repoint
// (fs/namespace/namespace_exchange.cc); exchange.after_claim,
// exchange.after_first_swap, exchange.after_second_swap (across
// directories, fs/namespace/namespace_xexchange.cc).
#pragma once

namespace stampfs {

void FaultPoint(const char* name);

// True when this build honours STAMPFS_FAULT.
bool FaultPointsEnabled();

}  // namespace stampfs
