// SysRoot: every sysfs/procfs read of the library goes through here, below a root prefix,
// so that the synthetic trees of tests/fixtures exercise exactly the code of a live run.
#include "gdr_topo.hpp"

#include <dirent.h>
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <sys/stat.h>

namespace gdr::topo {

SysRoot::SysRoot(std::string root) : root_(std::move(root))
{
    if (root_.empty()) {
        root_ = "/";
    }
    while (root_.size() > 1 && root_.back() == '/') {
        root_.pop_back();
    }
    char buf[PATH_MAX];
    real_root_ = ::realpath(root_.c_str(), buf) ? std::string(buf) : root_;
}

std::string SysRoot::path(std::string_view abs) const
{
    if (root_ == "/") {
        return std::string(abs);
    }
    std::string p = root_;
    if (abs.empty() || abs.front() != '/') {
        p += '/';
    }
    p += abs;
    return p;
}

bool SysRoot::exists(std::string_view abs) const
{
    struct stat st;
    return ::stat(path(abs).c_str(), &st) == 0;
}

std::optional<std::string> SysRoot::read_text(std::string_view abs) const
{
    std::ifstream in(path(abs), std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) {
        return std::nullopt;  // e.g. EINVAL from gid_attrs/types/N of an empty GID slot
    }
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\t' ||
                             text.back() == '\r' || text.back() == '\0')) {
        text.pop_back();
    }
    return text;
}

std::optional<long long> SysRoot::read_int(std::string_view abs) const
{
    auto text = read_text(abs);
    if (!text || text->empty()) {
        return std::nullopt;
    }
    errno           = 0;
    char *end       = nullptr;
    long long value = std::strtoll(text->c_str(), &end, 0);
    if (errno != 0 || end == text->c_str()) {
        return std::nullopt;
    }
    return value;
}

std::optional<std::vector<uint8_t>> SysRoot::read_binary(std::string_view abs,
                                                         size_t max_bytes) const
{
    std::ifstream in(path(abs), std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::vector<uint8_t> data(max_bytes);
    in.read(reinterpret_cast<char *>(data.data()), static_cast<std::streamsize>(max_bytes));
    data.resize(static_cast<size_t>(in.gcount()));
    return data;
}

std::vector<std::string> SysRoot::list_dir(std::string_view abs) const
{
    std::vector<std::string> names;
    // owned: a bad_alloc from the strings or the vector must not leak the DIR (LeakSanitizer
    // saw it under CApiGuard's allocation failures)
    std::unique_ptr<DIR, int (*)(DIR *)> dir(::opendir(path(abs).c_str()), ::closedir);
    if (dir == nullptr) {
        return names;
    }
    while (struct dirent *entry = ::readdir(dir.get())) {
        std::string name = entry->d_name;
        if (name != "." && name != "..") {
            names.push_back(std::move(name));
        }
    }
    dir.reset();
    std::sort(names.begin(), names.end());
    return names;
}

std::optional<std::string> SysRoot::resolve(std::string_view abs) const
{
    char buf[PATH_MAX];
    if (::realpath(path(abs).c_str(), buf) == nullptr) {
        return std::nullopt;
    }
    std::string resolved(buf);
    if (real_root_ == "/") {
        return resolved;
    }
    // A link of a fixture that escapes the tree would make us read the host's files.
    if (resolved.compare(0, real_root_.size(), real_root_) != 0 ||
        (resolved.size() > real_root_.size() && resolved[real_root_.size()] != '/')) {
        return std::nullopt;
    }
    resolved.erase(0, real_root_.size());
    return resolved.empty() ? std::string("/") : resolved;
}

}  // namespace gdr::topo
