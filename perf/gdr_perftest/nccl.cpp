// gdr_perftest --library nccl|both: the same collectives through NCCL, for the side-by-side
// comparison with ucp_cpp::coll (docs/gdr_perftest.md, "NCCL").
//
// NCCL is loaded at run time (dlopen of $GDR_PERFTEST_NCCL, else libnccl.so.2): the tool has no
// build dependency on it and runs where it is absent (a clear error for --library nccl only).
// The few types and entry points called are declared here as nccl.h declares them; their ABI has
// been stable since NCCL 2.7 (ncclSend/ncclRecv), the oldest release this accepts.
//
// Timing is the ucp_cpp side's: a call is enqueued on this rank's stream and waited for (an
// event polled), so that each timed call is complete when the next starts, as a blocking
// ucp_cpp::coll call is. (nccl-tests' default enqueues the whole loop and waits once; at small
// sizes that hides the launch and wait of each call, which a blocking API cannot.)
#include "perftest.hpp"

#include "cuda.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <thread>

namespace gdr_perftest {

namespace cu = gdr::cuda_driver;

// ---- nccl.h, the part this file uses (values as defined since NCCL 2.7). A named namespace,
// not an anonymous one: nccl_library::state holds these types (-Wsubobject-linkage).
namespace nccl_abi {

using nccl_result_t                      = int;  // ncclResult_t: ncclSuccess = 0
using nccl_comm_t                        = struct nccl_comm_opaque *;  // ncclComm_t
constexpr nccl_result_t nccl_success     = 0;
constexpr nccl_result_t nccl_in_progress = 7;  // ncclInProgress (2.14+, non-blocking comms only)
struct nccl_unique_id {
    char internal[128];  // NCCL_UNIQUE_ID_BYTES
};
enum nccl_data_type : int {  // ncclDataType_t
    nccl_int32    = 2,
    nccl_int64    = 4,
    nccl_float32  = 7,
    nccl_float64  = 8,
    nccl_bfloat16 = 9  // since 2.10
};
constexpr int nccl_sum = 0;  // ncclRedOp_t ncclSum

struct nccl_api {
    nccl_result_t (*ncclGetVersion)(int *version);
    const char *(*ncclGetErrorString)(nccl_result_t result);
    nccl_result_t (*ncclGetUniqueId)(nccl_unique_id *id);
    nccl_result_t (*ncclCommInitRank)(nccl_comm_t *comm, int nranks, nccl_unique_id id, int rank);
    nccl_result_t (*ncclCommDestroy)(nccl_comm_t comm);
    nccl_result_t (*ncclCommAbort)(nccl_comm_t comm);
    nccl_result_t (*ncclCommGetAsyncError)(nccl_comm_t comm, nccl_result_t *async_error);
    nccl_result_t (*ncclAllReduce)(const void *send, void *recv, size_t count, int type, int op,
                                   nccl_comm_t comm, cu::CUstream stream);
    nccl_result_t (*ncclAllGather)(const void *send, void *recv, size_t send_count, int type,
                                   nccl_comm_t comm, cu::CUstream stream);
    nccl_result_t (*ncclReduceScatter)(const void *send, void *recv, size_t recv_count, int type,
                                       int op, nccl_comm_t comm, cu::CUstream stream);
    nccl_result_t (*ncclBroadcast)(const void *send, void *recv, size_t count, int type, int root,
                                   nccl_comm_t comm, cu::CUstream stream);
    nccl_result_t (*ncclReduce)(const void *send, void *recv, size_t count, int type, int op,
                                int root, nccl_comm_t comm, cu::CUstream stream);
    nccl_result_t (*ncclSend)(const void *send, size_t count, int type, int peer, nccl_comm_t comm,
                              cu::CUstream stream);
    nccl_result_t (*ncclRecv)(void *recv, size_t count, int type, int peer, nccl_comm_t comm,
                              cu::CUstream stream);
    nccl_result_t (*ncclGroupStart)();
    nccl_result_t (*ncclGroupEnd)();
};

#define GDR_NCCL_ENTRY(name) {#name, offsetof(nccl_api, name)}
struct nccl_entry {
    const char *symbol;
    size_t offset;
};
constexpr nccl_entry nccl_entries[] = {
    GDR_NCCL_ENTRY(ncclGetVersion),
    GDR_NCCL_ENTRY(ncclGetErrorString),
    GDR_NCCL_ENTRY(ncclGetUniqueId),
    GDR_NCCL_ENTRY(ncclCommInitRank),
    GDR_NCCL_ENTRY(ncclCommDestroy),
    GDR_NCCL_ENTRY(ncclCommAbort),
    GDR_NCCL_ENTRY(ncclCommGetAsyncError),
    GDR_NCCL_ENTRY(ncclAllReduce),
    GDR_NCCL_ENTRY(ncclAllGather),
    GDR_NCCL_ENTRY(ncclReduceScatter),
    GDR_NCCL_ENTRY(ncclBroadcast),
    GDR_NCCL_ENTRY(ncclReduce),
    GDR_NCCL_ENTRY(ncclSend),
    GDR_NCCL_ENTRY(ncclRecv),
    GDR_NCCL_ENTRY(ncclGroupStart),
    GDR_NCCL_ENTRY(ncclGroupEnd),
};
#undef GDR_NCCL_ENTRY

}  // namespace nccl_abi

namespace {

using namespace nccl_abi;

int nccl_type_of(const std::string &dtype)
{
    if (dtype == "float")
        return nccl_float32;
    if (dtype == "double")
        return nccl_float64;
    if (dtype == "int32")
        return nccl_int32;
    if (dtype == "int64")
        return nccl_int64;
    if (dtype == "bfloat16")
        return nccl_bfloat16;
    throw usage_error("--library nccl: no NCCL type for -d " + dtype);
}

}  // namespace

struct nccl_library::state {
    void *handle = nullptr;
    std::string path;
    int version = 0;
    nccl_api api{};
    nccl_comm_t comm    = nullptr;
    cu::CUstream stream = nullptr;
    cu::CUevent done    = nullptr;
    bool usable         = false;  // false after an abort: nothing more may be enqueued
    std::chrono::nanoseconds timeout{};
    int rank = 0, size = 1;

    void check(nccl_result_t rc, const char *what) const
    {
        if (rc != nccl_success && rc != nccl_in_progress) {
            throw std::runtime_error(std::string("NCCL ") + what + ": " +
                                     api.ncclGetErrorString(rc));
        }
    }
};

std::string nccl_library::soname()
{
    const char *path = std::getenv("GDR_PERFTEST_NCCL");
    return path != nullptr && *path != '\0' ? path : "libnccl.so.2";
}

nccl_library::nccl_library(const session &s) : st_(std::make_unique<state>())
{
    state &st = *st_;
    st.path   = soname();
    st.handle = ::dlopen(st.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (st.handle == nullptr) {
        const char *why = ::dlerror();
        throw std::runtime_error("--library nccl: cannot load " + st.path + " (" +
                                 (why != nullptr ? why : "?") +
                                 "); set GDR_PERFTEST_NCCL to libnccl.so.2's path, or "
                                 "LD_LIBRARY_PATH (tests/device/build-nccl builds one)");
    }
    for (const nccl_entry &e : nccl_entries) {
        void *symbol = ::dlsym(st.handle, e.symbol);
        if (symbol == nullptr) {
            throw std::runtime_error("--library nccl: " + st.path + " lacks " + e.symbol +
                                     " (NCCL 2.7 or later needed)");
        }
        std::memcpy(reinterpret_cast<char *>(&st.api) + e.offset, &symbol, sizeof(symbol));
    }
    st.check(st.api.ncclGetVersion(&st.version), "ncclGetVersion");
    st.rank    = s.rank;
    st.size    = s.size;
    st.timeout = s.timeout;

    // cuda() makes this rank's device current on this thread (memory.cpp): NCCL's runtime
    // attaches to that context. Rank 0's id reaches the others over the bootstrap communicator,
    // as nccl-tests passes it over MPI.
    const cu::driver_api &api = cuda();
    nccl_unique_id id{};
    if (s.rank == 0)
        st.check(st.api.ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::vector<uint8_t> mine(s.rank == 0 ? sizeof(id) : 0);
    std::memcpy(mine.data(), &id, mine.size());
    const auto all = s.exchange(mine);
    if (all[0].size() != sizeof(id))
        throw std::runtime_error("--library nccl: rank 0's NCCL id did not arrive");
    std::memcpy(&id, all[0].data(), sizeof(id));
    // Blocking: a rank that never joins holds the others here; the launcher (-N, mpirun, srun)
    // ends the job when a rank dies (NCCL's non-blocking init needs ncclConfig_t, whose layout
    // has changed between releases).
    st.check(st.api.ncclCommInitRank(&st.comm, s.size, id, s.rank), "ncclCommInitRank");
    cuda_check(api.cuStreamCreate(&st.stream, cu::CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    cuda_check(api.cuEventCreate(&st.done, cu::CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    st.usable = true;
}

nccl_library::~nccl_library()
{
    state &st                 = *st_;
    const cu::driver_api &api = cuda();
    if (st.comm != nullptr)
        (st.usable ? st.api.ncclCommDestroy : st.api.ncclCommAbort)(st.comm);
    if (st.done != nullptr)
        api.cuEventDestroy_v2(st.done);
    if (st.stream != nullptr)
        api.cuStreamDestroy_v2(st.stream);
    // libnccl stays loaded: its threads may outlive the communicator by a little
}

std::string nccl_library::description() const
{
    const int v = st_->version;
    // 2.9 and later: major*10000 + minor*100 + patch; before: major*1000 + minor*100 + patch
    const int major = v >= 10000 ? v / 10000 : v / 1000;
    const int minor = v >= 10000 ? v / 100 % 100 : v / 100 % 10;
    return "NCCL " + std::to_string(major) + "." + std::to_string(minor) + "." +
           std::to_string(v % 100) + " (" + st_->path + ")";
}

void nccl_library::call(const std::string &op, const void *send, void *recv, size_t count,
                        size_t element_size, const std::string &dtype, int root)
{
    state &st = *st_;
    if (!st.usable)
        throw std::runtime_error("NCCL: the communicator was aborted after an earlier failure");
    const int type = nccl_type_of(dtype);
    const auto &a  = st.api;
    if (op == "allreduce") {
        st.check(a.ncclAllReduce(send, recv, count, type, nccl_sum, st.comm, st.stream),
                 "ncclAllReduce");
    } else if (op == "allgather") {
        st.check(a.ncclAllGather(send, recv, count, type, st.comm, st.stream), "ncclAllGather");
    } else if (op == "reduce_scatter") {
        st.check(a.ncclReduceScatter(send, recv, count, type, nccl_sum, st.comm, st.stream),
                 "ncclReduceScatter");
    } else if (op == "bcast") {
        st.check(a.ncclBroadcast(recv, recv, count, type, root, st.comm, st.stream),
                 "ncclBroadcast");
    } else if (op == "reduce") {
        st.check(a.ncclReduce(send, recv, count, type, nccl_sum, root, st.comm, st.stream),
                 "ncclReduce");
    } else if (op == "alltoall") {
        // NCCL has no alltoall: nccl-tests' one, a group of sends and receives to every rank
        const size_t block = count * element_size;
        st.check(a.ncclGroupStart(), "ncclGroupStart");
        for (int q = 0; q < st.size; ++q) {
            st.check(a.ncclSend(static_cast<const char *>(send) + size_t(q) * block, count, type, q,
                                st.comm, st.stream),
                     "ncclSend");
            st.check(a.ncclRecv(static_cast<char *>(recv) + size_t(q) * block, count, type, q,
                                st.comm, st.stream),
                     "ncclRecv");
        }
        st.check(a.ncclGroupEnd(), "ncclGroupEnd");
    } else {
        throw usage_error("--library nccl: NCCL has no " + op);
    }
    wait(op.c_str());
}

void nccl_library::wait(const char *what)
{
    state &st                 = *st_;
    const cu::driver_api &api = cuda();
    cuda_check(api.cuEventRecord(st.done, st.stream), "cuEventRecord");
    const auto deadline = std::chrono::steady_clock::now() + st.timeout;
    for (unsigned spin = 0;; ++spin) {
        const cu::CUresult rc = api.cuEventQuery(st.done);
        if (rc == cu::CUDA_SUCCESS)
            return;
        if (rc != cu::CUDA_ERROR_NOT_READY)
            cuda_check(rc, "cuEventQuery");
        if ((spin & 1023) == 1023) {
            // A peer that died leaves the kernel waiting forever: NCCL reports it here (its
            // proxy thread sees the broken connection), or the bound ends the wait.
            nccl_result_t async = nccl_success;
            st.api.ncclCommGetAsyncError(st.comm, &async);
            const bool late = std::chrono::steady_clock::now() > deadline;
            if ((async != nccl_success && async != nccl_in_progress) || late) {
                st.usable = false;
                st.api.ncclCommAbort(st.comm);  // also ends the kernel in flight
                st.comm = nullptr;
                throw std::runtime_error(
                    std::string("NCCL ") + what + ": " +
                    (late ? "not complete within --timeout " +
                                std::to_string(std::chrono::duration<double>(st.timeout).count()) +
                                " s"
                          : std::string(st.api.ncclGetErrorString(async))) +
                    " (rank " + std::to_string(st.rank) + "; communicator aborted)");
            }
        }
    }
}

}  // namespace gdr_perftest
