// json.hpp - the little JSON the doctor writes: an ordered tree and a serializer.
// Output only (the tests parse it with nlohmann::json); no dependency.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace gdr::doctor {

class Json {
public:
    using Array  = std::vector<Json>;
    using Object = std::vector<std::pair<std::string, Json>>;  // keeps insertion order

    Json() = default;  // null
    Json(std::nullptr_t) {}
    Json(bool b) : value_(b) {}
    Json(int v) : value_(static_cast<int64_t>(v)) {}
    Json(unsigned v) : value_(static_cast<int64_t>(v)) {}
    Json(long v) : value_(static_cast<int64_t>(v)) {}
    Json(long long v) : value_(static_cast<int64_t>(v)) {}
    Json(unsigned long v) : value_(static_cast<int64_t>(v)) {}
    Json(unsigned long long v) : value_(static_cast<int64_t>(v)) {}
    Json(double v) : value_(v) {}
    Json(const char *s) : value_(std::string(s)) {}
    Json(std::string s) : value_(std::move(s)) {}
    Json(Array a) : value_(std::move(a)) {}
    Json(Object o) : value_(std::move(o)) {}

    static Json array() { return Json(Array{}); }
    static Json object() { return Json(Object{}); }

    /// Object member (appended when missing); the value must be an object.
    Json &operator[](const std::string &key);
    /// Appends to an array.
    Json &push(Json item);
    bool is_null() const { return std::holds_alternative<std::monostate>(value_); }

    std::string dump(int indent = 2) const;

private:
    void write(std::string &out, int indent, int depth) const;

    std::variant<std::monostate, bool, int64_t, double, std::string, Array, Object> value_;
};

}  // namespace gdr::doctor
