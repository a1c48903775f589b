// Typed JSON for Table entities (AZURE-PROTOCOL.md §5), as sent and read with
// Accept: application/json;odata=minimalmetadata.
//
// Writing: Int64 as a decimal string annotated Edm.Int64, Double annotated
// Edm.Double (NaN/Infinity/-Infinity as strings), Binary as base64 annotated
// Edm.Binary, Int32/Boolean/String plain. Always one line (required in $batch).
//
// Reading: an "@odata.type" annotation decides; without one a string is
// Edm.String, an integer literal Int32 (Int64 if it does not fit), a literal
// with '.', 'e' or 'E' Double. Integers never pass through a double.
// "odata.*" members and Timestamp are skipped; "odata.etag" becomes the ETag.
// Edm.DateTime and Edm.Guid values (never written by stampfs) read as strings.
#pragma once

#include <string>
#include <vector>

#include "storage/status.h"
#include "storage/table_store.h"

namespace stampfs {

// The entity as a single-line JSON object, with PartitionKey and RowKey when
// `include_keys`. kInvalidArgument if a string is not valid UTF-8.
Result<std::string> EntityToJson(const Entity& entity, bool include_keys = true);

// One entity object (Get Entity). kCorruption on anything unparseable.
Result<Entity> ParseEntityJson(const std::string& body);

// {"value":[...]} (Query Entities). kCorruption on anything unparseable.
Result<std::vector<Entity>> ParseEntityListJson(const std::string& body);

}  // namespace stampfs
