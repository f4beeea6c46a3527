/**
 * @file coll/launch/pmi2.hpp
 * @brief launch::pmi2: the job's PMI2 store (srun --mpi=pmi2, through Slurm's libpmi2.so.0).
 *
 * PMI2's values are strings of at most 1024 characters and its keys are job-wide, so a value
 * is stored hex-encoded in chunks under keys that carry the putting rank:
 * "<key>.<rank>" holds the chunk count, "<key>.<rank>.<i>" the chunks.  The ABI (plain C, ints
 * and strings) is declared here and checked against <slurm/pmi2.h> where libpmi2-0-dev is
 * installed (tests/ucp_cpp/pmix_abi_check.cpp).
 */
#pragma once

#include <ucp_cpp/coll/launch/kvs.hpp>

#include <string>
#include <vector>

namespace ucp_cpp::coll::launch {

namespace pmi2_abi {

constexpr int success   = 0;  // PMI2_SUCCESS
constexpr int max_key   = 64;  // PMI2_MAX_KEYLEN
constexpr int max_value = 1024;  // PMI2_MAX_VALLEN
constexpr int max_jobid = 64;

using init_fn     = int (*)(int *spawned, int *size, int *rank, int *appnum);
using finalize_fn = int (*)();
using job_id_fn   = int (*)(char *jobid, int jobid_size);
using put_fn      = int (*)(const char *key, const char *value);
using fence_fn    = int (*)();
using get_fn      = int (*)(const char *jobid, int src_pmi_id, const char *key, char *value,
                       int max_value, int *value_length);

}  // namespace pmi2_abi

/// The job's PMI2 store.  Construct it only where a PMI2 server runs (PMI_FD is set).
class pmi2 final : public kvs {
public:
    /// Hex characters per stored chunk (a PMI2 value holds at most 1024 characters).
    static constexpr size_t chunk_chars = 1000;

    /// @brief Loads libpmi2 and initializes this process as a PMI2 client.
    /// @throws ucx_error(UCS_ERR_UNSUPPORTED) when libpmi2 cannot be loaded or PMI2_Init fails.
    pmi2()
    {
        std::string why;
        if (!lib_.open({"libpmi2.so.0", "libpmi2.so"}, &why)) {
            throw ucx_error(UCS_ERR_UNSUPPORTED, "coll::launch::pmi2: cannot load libpmi2 (" + why +
                                                     "; Debian: apt-get install libpmi2-0)");
        }
        finalize_   = lib_.symbol<pmi2_abi::finalize_fn>("PMI2_Finalize");
        put_        = lib_.symbol<pmi2_abi::put_fn>("PMI2_KVS_Put");
        fence_      = lib_.symbol<pmi2_abi::fence_fn>("PMI2_KVS_Fence");
        get_        = lib_.symbol<pmi2_abi::get_fn>("PMI2_KVS_Get");
        int spawned = 0, appnum = 0;
        check(lib_.symbol<pmi2_abi::init_fn>("PMI2_Init")(&spawned, &size_, &rank_, &appnum),
              "PMI2_Init");
        char jobid[pmi2_abi::max_jobid] = {};
        if (lib_.symbol<pmi2_abi::job_id_fn>("PMI2_Job_GetId")(jobid, sizeof(jobid)) !=
            pmi2_abi::success) {
            finalize_();
            throw ucx_error(UCS_ERR_IO_ERROR, "coll::launch::pmi2: PMI2_Job_GetId failed");
        }
        jobid_ = jobid;
    }
    ~pmi2() override { finalize_(); }
    pmi2(const pmi2 &)            = delete;
    pmi2 &operator=(const pmi2 &) = delete;

    [[nodiscard]] int rank() const override { return rank_; }
    [[nodiscard]] int size() const override { return size_; }
    [[nodiscard]] const char *name() const override { return "pmi2"; }

    void put(const std::string &key, const std::vector<uint8_t> &bytes) override
    {
        static const char digits[] = "0123456789abcdef";
        std::string hex;
        hex.reserve(bytes.size() * 2);
        for (uint8_t b : bytes) {
            hex += digits[b >> 4];
            hex += digits[b & 0xf];
        }
        const size_t chunks    = (hex.size() + chunk_chars - 1) / chunk_chars;
        const std::string base = key_of(key, rank_);
        check(put_(base.c_str(), std::to_string(chunks).c_str()), "PMI2_KVS_Put(" + base + ")");
        for (size_t i = 0; i < chunks; ++i) {
            const std::string name = base + "." + std::to_string(i);
            check(put_(name.c_str(), hex.substr(i * chunk_chars, chunk_chars).c_str()),
                  "PMI2_KVS_Put(" + name + ")");
        }
    }

    void fence() override { check(fence_(), "PMI2_KVS_Fence"); }

    [[nodiscard]] std::vector<uint8_t> get(int rank, const std::string &key) override
    {
        const std::string base     = key_of(key, rank);
        const std::string count    = get_string(rank, base);
        char *end                  = nullptr;
        const unsigned long chunks = std::strtoul(count.c_str(), &end, 10);
        if (count.empty() || *end != '\0') {
            throw ucx_error(UCS_ERR_INVALID_PARAM,
                            "coll::launch::pmi2: " + base + " is no chunk count: '" + count + "'");
        }
        std::string hex;
        for (unsigned long i = 0; i < chunks; ++i) {
            hex += get_string(rank, base + "." + std::to_string(i));
        }
        std::vector<uint8_t> bytes(hex.size() / 2);
        for (size_t i = 0; i < bytes.size(); ++i) {
            const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
            if (hi < 0 || lo < 0 || hex.size() % 2 != 0) {
                throw ucx_error(UCS_ERR_INVALID_PARAM,
                                "coll::launch::pmi2: " + base + " holds no hex string");
            }
            bytes[i] = uint8_t(hi << 4 | lo);
        }
        return bytes;
    }

private:
    static std::string key_of(const std::string &key, int rank)
    {
        std::string name = key + "." + std::to_string(rank);
        if (name.size() + 8 >= size_t(pmi2_abi::max_key)) {
            throw ucx_error(UCS_ERR_INVALID_PARAM, "coll::launch::pmi2: key too long: " + name);
        }
        return name;
    }
    static int nibble(char c)
    {
        if (c >= '0' && c <= '9')
            return c - '0';
        if (c >= 'a' && c <= 'f')
            return c - 'a' + 10;
        return -1;
    }
    std::string get_string(int rank, const std::string &key)
    {
        char value[pmi2_abi::max_value + 1] = {};
        int length                          = 0;
        check(get_(jobid_.c_str(), rank, key.c_str(), value, sizeof(value) - 1, &length),
              "PMI2_KVS_Get(rank " + std::to_string(rank) + ", " + key + ")");
        return std::string(value);
    }
    void check(int rc, const std::string &what) const
    {
        if (rc != pmi2_abi::success) {
            throw ucx_error(UCS_ERR_IO_ERROR, "coll::launch::pmi2: " + what + " failed (PMI2 " +
                                                  std::to_string(rc) + ")");
        }
    }

    detail::shared_library lib_;
    pmi2_abi::finalize_fn finalize_ = nullptr;
    pmi2_abi::put_fn put_           = nullptr;
    pmi2_abi::fence_fn fence_       = nullptr;
    pmi2_abi::get_fn get_           = nullptr;
    std::string jobid_;
    int rank_ = 0;
    int size_ = 0;
};

}  // namespace ucp_cpp::coll::launch
