// launch_kvs_exchange pmix|pmi2 — one rank of a job started by srun (tests/slurm/run): puts a
// value of 1500 + rank bytes through the job's key-value store, fences, reads every rank's value
// back and checks each byte (the chunking of PMI2 and the byte objects of PMIx both cross a
// 1000-character boundary).  Exit status: the number of ranks whose value came back wrong.
#include <ucp_cpp/coll/launch/pmi2.hpp>
#include <ucp_cpp/coll/launch/pmix.hpp>

#include <cstdio>
#include <memory>
#include <string>

namespace launch = ucp_cpp::coll::launch;

static uint8_t byte_of(int rank, size_t i)
{
    return uint8_t(i * 7 + size_t(rank));
}

int main(int argc, char **argv)
{
    const std::string which = argc > 1 ? argv[1] : "";
    std::unique_ptr<launch::kvs> store;
    try {
        if (which == "pmix") {
            store = std::make_unique<launch::pmix>();
        } else if (which == "pmi2") {
            store = std::make_unique<launch::pmi2>();
        } else {
            std::fprintf(stderr, "usage: launch_kvs_exchange pmix|pmi2\n");
            return 2;
        }
        std::vector<uint8_t> mine(1500 + size_t(store->rank()));
        for (size_t i = 0; i < mine.size(); ++i)
            mine[i] = byte_of(store->rank(), i);
        store->put("ucpcpp.test", mine);
        store->fence();
        int wrong = 0;
        for (int rank = 0; rank < store->size(); ++rank) {
            const std::vector<uint8_t> value = store->get(rank, "ucpcpp.test");
            bool same                        = value.size() == 1500 + size_t(rank);
            for (size_t i = 0; same && i < value.size(); ++i)
                same = value[i] == byte_of(rank, i);
            wrong += same ? 0 : 1;
        }
        std::printf("%s: rank %d of %d read %d values, %d wrong\n", store->name(), store->rank(),
                    store->size(), store->size(), wrong);
        return wrong;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "launch_kvs_exchange %s: %s\n", which.c_str(), e.what());
        return 1;
    }
}
