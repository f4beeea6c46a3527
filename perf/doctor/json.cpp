#include "json.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace gdr::doctor {
namespace {

void write_string(std::string &out, const std::string &s)
{
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\t':
            out += "\\t";
            break;
        case '\r':
            out += "\\r";
            break;
        default:
            if (c < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof(buf), "\\u%04x", c);
                out += buf;
            } else {
                out += static_cast<char>(c);  // UTF-8 passes through
            }
        }
    }
    out += '"';
}

void newline(std::string &out, int indent, int depth)
{
    if (indent > 0) {
        out += '\n';
        out.append(static_cast<size_t>(indent * depth), ' ');
    }
}

}  // namespace

Json &Json::operator[](const std::string &key)
{
    if (is_null()) {
        value_ = Object{};
    }
    auto *object = std::get_if<Object>(&value_);
    if (object == nullptr) {
        throw std::logic_error("Json: member '" + key + "' of a non-object");
    }
    for (auto &[name, value] : *object) {
        if (name == key) {
            return value;
        }
    }
    object->emplace_back(key, Json());
    return object->back().second;
}

Json &Json::push(Json item)
{
    if (is_null()) {
        value_ = Array{};
    }
    auto *array = std::get_if<Array>(&value_);
    if (array == nullptr) {
        throw std::logic_error("Json: push to a non-array");
    }
    array->push_back(std::move(item));
    return array->back();
}

std::string Json::dump(int indent) const
{
    std::string out;
    write(out, indent, 0);
    if (indent > 0) {
        out += '\n';
    }
    return out;
}

void Json::write(std::string &out, int indent, int depth) const
{
    std::visit(
        [&](const auto &v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                out += "null";
            } else if constexpr (std::is_same_v<T, bool>) {
                out += v ? "true" : "false";
            } else if constexpr (std::is_same_v<T, int64_t>) {
                out += std::to_string(v);
            } else if constexpr (std::is_same_v<T, double>) {
                char buf[32];
                std::snprintf(buf, sizeof(buf), "%.17g", std::isfinite(v) ? v : 0.0);
                out += buf;
            } else if constexpr (std::is_same_v<T, std::string>) {
                write_string(out, v);
            } else if constexpr (std::is_same_v<T, Array>) {
                out += '[';
                for (size_t i = 0; i < v.size(); ++i) {
                    out += i ? "," : "";
                    newline(out, indent, depth + 1);
                    v[i].write(out, indent, depth + 1);
                }
                if (!v.empty()) {
                    newline(out, indent, depth);
                }
                out += ']';
            } else {
                out += '{';
                for (size_t i = 0; i < v.size(); ++i) {
                    out += i ? "," : "";
                    newline(out, indent, depth + 1);
                    write_string(out, v[i].first);
                    out += indent > 0 ? ": " : ":";
                    v[i].second.write(out, indent, depth + 1);
                }
                if (!v.empty()) {
                    newline(out, indent, depth);
                }
                out += '}';
            }
        },
        value_);
}

}  // namespace gdr::doctor
