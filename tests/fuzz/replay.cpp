// The gtest driver of a fuzz harness (fuzz_check.h): every input of the kept corpus, then
// GDR_FUZZ_RUNS (default 20000) inputs made from them by seeded random mutations, the kinds
// libFuzzer starts with (bit flips, bytes and words set to boundary values, insertions,
// deletions, truncation, splices).  Runs anywhere, with any compiler; tests/fuzz/libfuzzer runs
// the same harness under libFuzzer where clang is installed.
//
// The seed is printed; GDR_FUZZ_SEED=N repeats a run.  An input that breaks a property (abort)
// or crashes the harness is printed in hex before the process dies, and written to
// $GDR_FUZZ_ARTIFACTS/crash-<target> when that is set: add it to the corpus once fixed.
// The address space is capped (kAddressSpaceLimit), as libFuzzer's -malloc_limit_mb does: a
// length taken on trust from the input throws std::bad_alloc, which escapes the harness and
// aborts, instead of a 4 GiB allocation that the host happens to grant.
#include "fuzz_check.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/resource.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

using Bytes = std::vector<uint8_t>;

namespace {

constexpr size_t kMaxLen = 4096;  // libFuzzer's default -max_len, which the harnesses assume
constexpr rlim_t kAddressSpaceLimit = rlim_t(2) << 30;

const Bytes *g_current = nullptr;  // the input under test, for the crash report

void report_crash(int sig)
{
    if (g_current != nullptr) {
        std::fprintf(stderr, "\nfuzz replay (%s): signal %d on this %zu-byte input:\n",
                     GDR_FUZZ_TARGET, sig, g_current->size());
        for (uint8_t b : *g_current)
            std::fprintf(stderr, "%02x", b);
        std::fprintf(stderr, "\n");
        if (const char *dir = std::getenv("GDR_FUZZ_ARTIFACTS")) {
            std::ofstream out(std::string(dir) + "/crash-" + GDR_FUZZ_TARGET, std::ios::binary);
            out.write(reinterpret_cast<const char *>(g_current->data()),
                      std::streamsize(g_current->size()));
        }
    }
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

void run(const Bytes &input)
{
    g_current = &input;
    LLVMFuzzerTestOneInput(input.data(), input.size());
    g_current = nullptr;
}

std::vector<Bytes> corpus()
{
    std::vector<Bytes> inputs;
    DIR *dir = opendir(GDR_FUZZ_CORPUS);
    if (dir == nullptr)
        return inputs;
    while (dirent *entry = readdir(dir)) {
        if (entry->d_name[0] == '.')
            continue;
        std::ifstream in(std::string(GDR_FUZZ_CORPUS) + "/" + entry->d_name, std::ios::binary);
        inputs.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    closedir(dir);
    return inputs;
}

class Mutator {
public:
    explicit Mutator(uint64_t seed) : rng_(seed) {}

    Bytes mutate(const Bytes &seed_input, const Bytes &other)
    {
        Bytes b          = seed_input;
        const int rounds = 1 + int(below(4));
        for (int i = 0; i < rounds; ++i)
            once(b, other);
        if (b.size() > kMaxLen)
            b.resize(kMaxLen);
        return b;
    }

private:
    uint64_t below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }

    void once(Bytes &b, const Bytes &other)
    {
        // lengths and counts on the wire are 1, 2 and 4-byte fields: their edges first
        static const uint32_t words[] = {0,          1,          0x7f,       0x80,      0xff,
                                         0x100,      0xffff,     0x10000,    0x100000,  0x100001,
                                         0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff};
        const size_t pos              = below(b.size() + 1);
        switch (below(8)) {
        case 0:  // flip a bit
            if (!b.empty())
                b[pos % b.size()] ^= uint8_t(1u << below(8));
            break;
        case 1:  // a random byte
            if (!b.empty())
                b[pos % b.size()] = uint8_t(rng_());
            break;
        case 2: {  // a boundary word, little-endian, wherever it fits
            const uint32_t w   = words[below(std::size(words))];
            const size_t width = size_t(1) << below(3);
            for (size_t i = 0; i < width && pos + i < b.size(); ++i)
                b[pos + i] = uint8_t(w >> (8 * i));
            break;
        }
        case 3:  // insert random bytes
            b.insert(b.begin() + long(pos), below(8) + 1, uint8_t(rng_()));
            break;
        case 4:  // erase a run
            if (pos < b.size())
                b.erase(b.begin() + long(pos), b.begin() + long(pos + 1 + below(b.size() - pos)));
            break;
        case 5:  // truncate
            b.resize(pos);
            break;
        case 6:  // splice the tail of another input
            if (!other.empty()) {
                const size_t from = below(other.size());
                b.resize(pos);
                b.insert(b.end(), other.begin() + long(from), other.end());
            }
            break;
        default:  // append random bytes
            for (uint64_t n = below(32) + 1; n > 0; --n)
                b.push_back(uint8_t(rng_()));
        }
    }

    std::mt19937_64 rng_;
};

uint64_t env_number(const char *name, uint64_t fallback)
{
    const char *v = std::getenv(name);
    return (v != nullptr && *v != '\0') ? std::strtoull(v, nullptr, 0) : fallback;
}

class Fuzz : public ::testing::Test {
protected:
    void SetUp() override
    {
        for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL})
            std::signal(sig, report_crash);
        rlimit limit{};
        ASSERT_EQ(0, getrlimit(RLIMIT_AS, &limit));
        if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > kAddressSpaceLimit) {
            limit.rlim_cur = kAddressSpaceLimit;
            ASSERT_EQ(0, setrlimit(RLIMIT_AS, &limit));
        }
        inputs_ = corpus();
        // an empty corpus would make both tests pass without running the harness
        ASSERT_FALSE(inputs_.empty()) << "no input in " << GDR_FUZZ_CORPUS;
    }
    std::vector<Bytes> inputs_;
};

TEST_F(Fuzz, Corpus)
{
    for (const Bytes &input : inputs_)
        run(input);
    std::printf("[   INFO   ] %s: %zu corpus inputs\n", GDR_FUZZ_TARGET, inputs_.size());
}

TEST_F(Fuzz, SeededMutations)
{
    const uint64_t seed = env_number("GDR_FUZZ_SEED", std::random_device{}());
    const uint64_t runs = env_number("GDR_FUZZ_RUNS", 20000);
    std::printf("[   INFO   ] %s: %llu mutated inputs, GDR_FUZZ_SEED=%llu\n", GDR_FUZZ_TARGET,
                (unsigned long long)runs, (unsigned long long)seed);
    Mutator mutator(seed);
    std::mt19937_64 pick(seed ^ 0x9e3779b97f4a7c15ull);
    for (uint64_t i = 0; i < runs; ++i) {
        const Bytes &a = inputs_[pick() % inputs_.size()];
        const Bytes &b = inputs_[pick() % inputs_.size()];
        run(mutator.mutate(a, b));
    }
}

}  // namespace
