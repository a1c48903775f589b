#include "storage/table_json.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "storage/auth.h"

namespace stampfs {
namespace {

using nlohmann::json;

constexpr char kTypeSuffix[] = "@odata.type";

Status Corrupt(const std::string& what) {
  return Status(Code::kCorruption, "table entity JSON: " + what);
}

// Double specials travel as annotated strings.
json DoubleToJson(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return d;
}

void PutProperty(const std::string& name, const PropertyValue& value, json* obj) {
  json& out = *obj;
  if (const auto* s = std::get_if<std::string>(&value)) {
    out[name] = *s;
  } else if (const auto* i64 = std::get_if<int64_t>(&value)) {
    out[name + kTypeSuffix] = "Edm.Int64";
    out[name] = std::to_string(*i64);
  } else if (const auto* i32 = std::get_if<int32_t>(&value)) {
    out[name] = *i32;
  } else if (const auto* b = std::get_if<bool>(&value)) {
    out[name] = *b;
  } else if (const auto* d = std::get_if<double>(&value)) {
    out[name + kTypeSuffix] = "Edm.Double";
    out[name] = DoubleToJson(*d);
  } else if (const auto* bin = std::get_if<Binary>(&value)) {
    out[name + kTypeSuffix] = "Edm.Binary";
    out[name] = Base64Encode(bin->bytes);
  }
}

Result<int64_t> ParseInt64Text(const std::string& text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || text.empty()) return Corrupt("bad Int64 \"" + text + "\"");
  return v;
}

Result<PropertyValue> ReadInt64(const json& v) {
  if (v.is_string()) {
    auto parsed = ParseInt64Text(v.get<std::string>());
    if (!parsed.ok()) return parsed.status();
    return PropertyValue(*parsed);
  }
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Corrupt("Int64 out of range");
    }
    return PropertyValue(static_cast<int64_t>(u));
  }
  if (v.is_number_integer()) return PropertyValue(v.get<int64_t>());
  return Corrupt("Int64 is neither a string nor an integer");
}

Result<PropertyValue> ReadDouble(const json& v) {
  if (v.is_number()) return PropertyValue(v.get<double>());
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "NaN") return PropertyValue(std::numeric_limits<double>::quiet_NaN());
    if (s == "Infinity") return PropertyValue(std::numeric_limits<double>::infinity());
    if (s == "-Infinity") return PropertyValue(-std::numeric_limits<double>::infinity());
  }
  return Corrupt("bad Edm.Double value");
}

// An integer literal without annotation: Int32 when it fits, else Int64.
Result<PropertyValue> ReadPlainInteger(const json& v) {
  auto wide = ReadInt64(v);
  if (!wide.ok()) return wide.status();
  const int64_t n = std::get<int64_t>(*wide);
  if (n >= std::numeric_limits<int32_t>::min() && n <= std::numeric_limits<int32_t>::max()) {
    return PropertyValue(static_cast<int32_t>(n));
  }
  return wide;
}

Result<PropertyValue> ReadUnannotated(const json& v) {
  if (v.is_string()) return PropertyValue(v.get<std::string>());
  if (v.is_boolean()) return PropertyValue(v.get<bool>());
  if (v.is_number_float()) return PropertyValue(v.get<double>());
  if (v.is_number_integer()) return ReadPlainInteger(v);
  return Corrupt("unsupported JSON value type");
}

Result<PropertyValue> ReadTyped(const std::string& type, const json& v) {
  if (type == "Edm.Int64") return ReadInt64(v);
  if (type == "Edm.Double") return ReadDouble(v);
  if (type == "Edm.Binary") {
    if (!v.is_string()) return Corrupt("Edm.Binary is not a string");
    auto bytes = Base64Decode(v.get<std::string>());
    if (!bytes.ok()) return Corrupt("Edm.Binary is not valid base64");
    return PropertyValue(Binary{std::move(*bytes)});
  }
  if (type == "Edm.Int32") {
    if (!v.is_number_integer()) return Corrupt("Edm.Int32 is not an integer");
    auto n = ReadPlainInteger(v);
    if (n.ok() && !std::holds_alternative<int32_t>(*n)) return Corrupt("Edm.Int32 out of range");
    return n;
  }
  if (type == "Edm.Boolean") {
    if (!v.is_boolean()) return Corrupt("Edm.Boolean is not a boolean");
    return PropertyValue(v.get<bool>());
  }
  // Edm.String, Edm.DateTime, Edm.Guid: kept as text.
  if (!v.is_string()) return Corrupt(type + " is not a string");
  return PropertyValue(v.get<std::string>());
}

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

Result<Entity> EntityFromObject(const json& obj) {
  if (!obj.is_object()) return Corrupt("entity is not an object");
  Entity entity;
  for (const auto& [name, value] : obj.items()) {
    if (name == "odata.etag") {
      if (value.is_string()) entity.etag = value.get<std::string>();
      continue;
    }
    if (StartsWith(name, "odata.") || name == "Timestamp" || name.find('@') != std::string::npos ||
        value.is_null()) {
      continue;  // metadata, annotations (read with their property), server time
    }
    if (name == "PartitionKey" || name == "RowKey") {
      if (!value.is_string()) return Corrupt(name + " is not a string");
      (name == "PartitionKey" ? entity.partition_key : entity.row_key) = value.get<std::string>();
      continue;
    }
    const auto annotation = obj.find(name + kTypeSuffix);
    Result<PropertyValue> parsed = annotation != obj.end() && annotation->is_string()
                                       ? ReadTyped(annotation->get<std::string>(), value)
                                       : ReadUnannotated(value);
    if (!parsed.ok()) return parsed.status().WithContext("property " + name);
    entity.properties.emplace(name, std::move(*parsed));
  }
  return entity;
}

Status ParseJson(const std::string& body, json* doc) {
  *doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc->is_discarded()) return Corrupt("malformed JSON");
  return Status::Ok();
}

}  // namespace

Result<std::string> EntityToJson(const Entity& entity, bool include_keys) {
  json obj = json::object();
  if (include_keys) {
    obj["PartitionKey"] = entity.partition_key;
    obj["RowKey"] = entity.row_key;
  }
  for (const auto& [name, value] : entity.properties) PutProperty(name, value, &obj);
  try {
    return obj.dump();  // compact: one line
  } catch (const json::exception&) {
    return Status(Code::kInvalidArgument, "entity holds a string that is not valid UTF-8");
  }
}

Result<Entity> ParseEntityJson(const std::string& body) {
  try {
    json doc;
    STAMPFS_RETURN_IF_ERROR(ParseJson(body, &doc));
    return EntityFromObject(doc);
  } catch (const json::exception& e) {
    return Corrupt(e.what());
  }
}

Result<std::vector<Entity>> ParseEntityListJson(const std::string& body) {
  try {
    json doc;
    STAMPFS_RETURN_IF_ERROR(ParseJson(body, &doc));
    if (!doc.is_object()) return Corrupt("query result is not an object");
    const auto value = doc.find("value");
    if (value == doc.end() || !value->is_array()) return Corrupt("query result has no value array");
    std::vector<Entity> entities;
    entities.reserve(value->size());
    for (const auto& item : *value) {
      auto entity = EntityFromObject(item);
      if (!entity.ok()) return entity.status();
      entities.push_back(std::move(*entity));
    }
    return entities;
  } catch (const json::exception& e) {
    return Corrupt(e.what());
  }
}

}  // namespace stampfs
