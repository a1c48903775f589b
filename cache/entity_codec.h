// Entity properties <-> a compact self-describing blob for SQLite (types
// kept): the form in which the metadata cache (meta_cache.h) stores them.
//
// Layout (fixed-width integers little-endian):
//   u8 format (kFormat) | varint count | count x property
//   property = varint name_len | name | u8 tag | value
//   value    = string/binary: varint len | bytes; int64, double: 8 bytes;
//              int32: 4 bytes; bool: 1 byte (0 or 1)
// Names appear in strictly increasing order (std::map order), so an Entity
// has exactly one encoding and a decoder can reject duplicates.
#pragma once

#include <string>

#include "storage/status.h"
#include "storage/table_store.h"

namespace stampfs {

std::string EncodeProperties(const Entity& entity);
// kCorruption when `bytes` is not exactly one encoding; `entity` unchanged then.
Status DecodeProperties(const std::string& bytes, Entity* entity);

}  // namespace stampfs
