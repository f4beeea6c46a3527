/**
 * @file coll/gpu.hpp
 * @brief CUDA buffers for ucp_cpp::coll, without CUDA at build time: the CUDA driver
 *        (libcuda.so.1) and NVRTC are loaded with dlopen the first time they are needed, and the
 *        few prototypes and constants used are declared here.
 *
 * - Memory type: locate() asks cuPointerGetAttribute(MEMORY_TYPE) whether a pointer is device
 *   memory.  Without libcuda (or with cuInit failing, or UCP_CPP_COLL_GPU=off) every pointer is
 *   host memory and nothing else here is touched: the host path pays one flag test.
 * - Reductions: one kernel source (every datatype x sum/prod/min/max; float16/bfloat16 computed
 *   in float, rounded to nearest even) is compiled by NVRTC once per process per compute
 *   capability (sm_XY cubin, else compute_XY PTX for the driver to JIT), loaded once per CUDA
 *   context and launched with cuLaunchKernel on the collective's stream.  Custom (user)
 *   reductions on device buffers are staged: both operands are copied to the host, reduced by
 *   the user's function there and copied back (correct, slow: documented).
 * - lane: per engine (worker) and CUDA context, a stream for copies/kernels and H2D copies, a
 *   second stream for D2H copies (both directions overlap), a pinned host bounce-buffer pool
 *   (cuMemHostAlloc, segments of `segment_bytes`), a cache of device scratch blocks and of
 *   events.  engine.hpp stages transfers through it when UCX cannot move CUDA memory.
 *
 * Errors are ucx_error(UCS_ERR_UNSUPPORTED / UCS_ERR_IO_ERROR) naming the CUDA or NVRTC call.
 * Threading: lanes follow their engine (one thread at a time); the driver table and the
 * compiled images are process-wide and guarded.
 */
#pragma once

#include <ucp_cpp/coll/types.hpp>
#include <ucp_cpp/error.hpp>

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ucp_cpp::coll::detail {

/// Local actions on device memory (a gpu::lane for CUDA buffers): copies and reduction kernels
/// queued on the collective's stream.  Host collectives have none.
class device_actions {
public:
    virtual ~device_actions() = default;
    /// dst and src must not partially overlap.
    virtual void copy(void *dst, const void *src, size_t bytes) = 0;
    virtual void reduce(const reduction &op, datatype type, const void *in, void *inout, size_t count) = 0;
    virtual std::shared_ptr<std::byte> allocate(size_t bytes) = 0;
};

}  // namespace ucp_cpp::coll::detail

namespace ucp_cpp::coll::gpu {

// ---------------------------------------------------------------- the CUDA driver, by hand

using CUresult    = int;
using CUdevice    = int;
using CUdeviceptr = unsigned long long;
using CUcontext   = struct CUctx_st *;
using CUstream    = struct CUstream_st *;
using CUevent     = struct CUevent_st *;
using CUmodule    = struct CUmod_st *;
using CUfunction  = struct CUfunc_st *;

inline constexpr CUresult CUDA_SUCCESS_          = 0;
inline constexpr CUresult CUDA_ERROR_NOT_READY_  = 600;
inline constexpr int POINTER_ATTRIBUTE_CONTEXT   = 1;
inline constexpr int POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
inline constexpr int POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9;
inline constexpr unsigned MEMORYTYPE_HOST = 1, MEMORYTYPE_DEVICE = 2, MEMORYTYPE_ARRAY = 3, MEMORYTYPE_UNIFIED = 4;
inline constexpr int DEVICE_ATTRIBUTE_SM_COUNT = 16, DEVICE_ATTRIBUTE_CC_MAJOR = 75, DEVICE_ATTRIBUTE_CC_MINOR = 76;
inline constexpr unsigned STREAM_NON_BLOCKING = 1, EVENT_DISABLE_TIMING = 2, MEMHOSTALLOC_PORTABLE = 1;

struct driver {
    CUresult (*cuInit)(unsigned);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
    CUresult (*cuCtxGetCurrent)(CUcontext *);
    CUresult (*cuCtxPushCurrent)(CUcontext);
    CUresult (*cuCtxPopCurrent)(CUcontext *);
    CUresult (*cuCtxGetDevice)(CUdevice *);
    CUresult (*cuPointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamDestroy)(CUstream);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
    CUresult (*cuEventCreate)(CUevent *, unsigned);
    CUresult (*cuEventDestroy)(CUevent);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventQuery)(CUevent);
    CUresult (*cuEventSynchronize)(CUevent);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
    CUresult (*cuMemFreeHost)(void *);
    CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*cuModuleLoadData)(CUmodule *, const void *);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               CUstream, void **, void **);

    /// "cuFoo failed: CUDA_ERROR_... (text)" for a failed call.
    std::string describe(const char *call, CUresult rc) const
    {
        const char *text = nullptr;
        if (cuGetErrorString == nullptr || cuGetErrorString(rc, &text) != CUDA_SUCCESS_ || text == nullptr) {
            text = "unknown error";
        }
        return std::string("coll/gpu: ") + call + " failed: " + text + " (CUresult " + std::to_string(rc) + ")";
    }
    void check(CUresult rc, const char *call) const
    {
        if (rc != CUDA_SUCCESS_) throw ucx_error(UCS_ERR_IO_ERROR, describe(call, rc));
    }
};

namespace detail {

template <class F>
bool resolve(void *lib, F &fn, const char *name)
{
    fn = reinterpret_cast<F>(dlsym(lib, name));
    return fn != nullptr;
}

struct driver_state {
    driver table{};
    bool usable = false;
    std::string why;  ///< why not usable
};

inline bool gpu_disabled_by_environment()
{
    const char *v = std::getenv("UCP_CPP_COLL_GPU");
    return v != nullptr && (std::strcmp(v, "off") == 0 || std::strcmp(v, "no") == 0 || std::strcmp(v, "0") == 0);
}

inline const driver_state &load_driver()
{
    static const driver_state state = [] {
        driver_state s;
        if (gpu_disabled_by_environment()) {
            s.why = "UCP_CPP_COLL_GPU=off";
            return s;
        }
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
        if (lib == nullptr) {
            s.why = std::string("cannot load the CUDA driver libcuda.so.1: ") + dlerror();
            return s;
        }
        driver &d = s.table;
        const bool ok =
            resolve(lib, d.cuInit, "cuInit") && resolve(lib, d.cuGetErrorString, "cuGetErrorString") &&
            resolve(lib, d.cuDeviceGet, "cuDeviceGet") && resolve(lib, d.cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
            resolve(lib, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
            resolve(lib, d.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2") &&
            resolve(lib, d.cuCtxGetCurrent, "cuCtxGetCurrent") && resolve(lib, d.cuCtxPushCurrent, "cuCtxPushCurrent_v2") &&
            resolve(lib, d.cuCtxPopCurrent, "cuCtxPopCurrent_v2") && resolve(lib, d.cuCtxGetDevice, "cuCtxGetDevice") &&
            resolve(lib, d.cuPointerGetAttribute, "cuPointerGetAttribute") &&
            resolve(lib, d.cuStreamCreate, "cuStreamCreate") && resolve(lib, d.cuStreamDestroy, "cuStreamDestroy_v2") &&
            resolve(lib, d.cuStreamSynchronize, "cuStreamSynchronize") &&
            resolve(lib, d.cuStreamWaitEvent, "cuStreamWaitEvent") && resolve(lib, d.cuEventCreate, "cuEventCreate") &&
            resolve(lib, d.cuEventDestroy, "cuEventDestroy_v2") && resolve(lib, d.cuEventRecord, "cuEventRecord") &&
            resolve(lib, d.cuEventQuery, "cuEventQuery") && resolve(lib, d.cuEventSynchronize, "cuEventSynchronize") &&
            resolve(lib, d.cuMemAlloc, "cuMemAlloc_v2") && resolve(lib, d.cuMemFree, "cuMemFree_v2") &&
            resolve(lib, d.cuMemHostAlloc, "cuMemHostAlloc") && resolve(lib, d.cuMemFreeHost, "cuMemFreeHost") &&
            resolve(lib, d.cuMemcpyAsync, "cuMemcpyAsync") &&
            resolve(lib, d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2") &&
            resolve(lib, d.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2") &&
            resolve(lib, d.cuModuleLoadData, "cuModuleLoadData") &&
            resolve(lib, d.cuModuleGetFunction, "cuModuleGetFunction") &&
            resolve(lib, d.cuLaunchKernel, "cuLaunchKernel");
        if (!ok) {
            s.why = std::string("libcuda.so.1 lacks a driver-API entry point: ") + dlerror();
            return s;
        }
        const CUresult rc = d.cuInit(0);
        if (rc != CUDA_SUCCESS_) {
            s.why = d.describe("cuInit", rc) + " (no usable GPU)";
            return s;
        }
        s.usable = true;
        return s;
    }();
    return state;
}

}  // namespace detail

/// The CUDA driver, or nullptr when it cannot be used (see driver_problem()).
inline const driver *cuda() { return detail::load_driver().usable ? &detail::load_driver().table : nullptr; }
/// Why cuda() is nullptr ("" when it is usable).
inline const std::string &driver_problem() { return detail::load_driver().why; }

/// Where a buffer lives.
struct location {
    bool device = false;        ///< CUDA device (or managed) memory
    CUcontext context = nullptr;  ///< its context (null: the device's primary context)
    int ordinal = -1;           ///< its device
};

/// Host memory unless the CUDA driver is usable and says the pointer is device memory.
/// Pinned host memory (cuMemHostAlloc / registered) counts as host memory.
inline location locate(const void *p)
{
    location where;
    const driver *cu = p != nullptr ? cuda() : nullptr;
    if (cu == nullptr) return where;
    unsigned type = 0;
    const auto address = CUdeviceptr(reinterpret_cast<uintptr_t>(p));
    if (cu->cuPointerGetAttribute(&type, POINTER_ATTRIBUTE_MEMORY_TYPE, address) != CUDA_SUCCESS_) {
        return where;  // not known to CUDA: ordinary host memory
    }
    if (type != MEMORYTYPE_DEVICE && type != MEMORYTYPE_UNIFIED && type != MEMORYTYPE_ARRAY) return where;
    where.device = true;
    cu->cuPointerGetAttribute(&where.context, POINTER_ATTRIBUTE_CONTEXT, address);
    if (cu->cuPointerGetAttribute(&where.ordinal, POINTER_ATTRIBUTE_DEVICE_ORDINAL, address) != CUDA_SUCCESS_) {
        where.ordinal = 0;
    }
    return where;
}

// ---------------------------------------------------------------- NVRTC and the kernels

/// Kernel source: ucp_cpp_reduce_<type>_<op>(T *inout, const T *in, unsigned long long n).
inline const char *kernel_source()
{
    return R"CUDA(
struct f16 { unsigned short x; };
struct b16 { unsigned short x; };
__device__ __forceinline__ float as_float(f16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.x)); return f; }
__device__ __forceinline__ float as_float(b16 h) { return __uint_as_float(((unsigned)h.x) << 16); }
__device__ __forceinline__ f16 to_f16(float f) { f16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.x) : "f"(f)); return h; }
__device__ __forceinline__ b16 to_b16(float f)
{
    b16 h;
#if __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.x) : "f"(f));
#else
    unsigned x = __float_as_uint(f);
    h.x = (x & 0x7fffffffu) > 0x7f800000u ? (unsigned short)((x >> 16) | 0x40u)
                                           : (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
#endif
    return h;
}
/* Integer sum/prod wrap modulo 2^n: computed in an unsigned type of at least 32 bits. */
#define INT_OPS(T, U) \
    __device__ __forceinline__ T r_sum(T a, T b) { return (T)((U)a + (U)b); } \
    __device__ __forceinline__ T r_prod(T a, T b) { return (T)((U)a * (U)b); } \
    __device__ __forceinline__ T r_min(T a, T b) { return b < a ? b : a; } \
    __device__ __forceinline__ T r_max(T a, T b) { return a < b ? b : a; }
INT_OPS(signed char, unsigned) INT_OPS(short, unsigned) INT_OPS(int, unsigned) INT_OPS(long long, unsigned long long)
INT_OPS(unsigned char, unsigned) INT_OPS(unsigned short, unsigned) INT_OPS(unsigned, unsigned)
INT_OPS(unsigned long long, unsigned long long)
#define FLOAT_OPS(T) \
    __device__ __forceinline__ T r_sum(T a, T b) { return a + b; } \
    __device__ __forceinline__ T r_prod(T a, T b) { return a * b; } \
    __device__ __forceinline__ T r_min(T a, T b) { return b < a ? b : a; } \
    __device__ __forceinline__ T r_max(T a, T b) { return a < b ? b : a; }
FLOAT_OPS(float) FLOAT_OPS(double)
#define HALF_OPS(T, TO) \
    __device__ __forceinline__ T r_sum(T a, T b) { return TO(as_float(a) + as_float(b)); } \
    __device__ __forceinline__ T r_prod(T a, T b) { return TO(as_float(a) * as_float(b)); } \
    __device__ __forceinline__ T r_min(T a, T b) { return as_float(b) < as_float(a) ? b : a; } \
    __device__ __forceinline__ T r_max(T a, T b) { return as_float(a) < as_float(b) ? b : a; }
HALF_OPS(f16, to_f16) HALF_OPS(b16, to_b16)

template <class T, int OP>
__device__ __forceinline__ T combine(T a, T b)
{
    if (OP == 0) return r_sum(a, b);
    if (OP == 1) return r_prod(a, b);
    if (OP == 2) return r_min(a, b);
    return r_max(a, b);
}

/* inout[i] = op(inout[i], in[i]); 16-byte vectors when both are 16-byte aligned. */
template <class T, int OP>
__device__ __forceinline__ void reduce_body(T *__restrict__ inout, const T *__restrict__ in, unsigned long long n)
{
    const unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long start = 0;
    if ((((unsigned long long)inout | (unsigned long long)in) & 15ull) == 0) {
        const unsigned V = 16 / sizeof(T);
        const unsigned long long vectors = n / V;
        uint4 *dst = (uint4 *)inout;
        const uint4 *src = (const uint4 *)in;
        for (unsigned long long i = tid; i < vectors; i += stride) {
            union { uint4 v; T e[16 / sizeof(T)]; } a, b;
            a.v = dst[i];
            b.v = __ldg(src + i);
#pragma unroll
            for (unsigned k = 0; k < V; ++k) a.e[k] = combine<T, OP>(a.e[k], b.e[k]);
            dst[i] = a.v;
        }
        start = vectors * V;
    }
    for (unsigned long long i = start + tid; i < n; i += stride) inout[i] = combine<T, OP>(inout[i], in[i]);
}

#define KERNELS(NAME, T) \
    extern "C" __global__ void ucp_cpp_reduce_##NAME##_sum(T *io, const T *in, unsigned long long n) { reduce_body<T, 0>(io, in, n); } \
    extern "C" __global__ void ucp_cpp_reduce_##NAME##_prod(T *io, const T *in, unsigned long long n) { reduce_body<T, 1>(io, in, n); } \
    extern "C" __global__ void ucp_cpp_reduce_##NAME##_min(T *io, const T *in, unsigned long long n) { reduce_body<T, 2>(io, in, n); } \
    extern "C" __global__ void ucp_cpp_reduce_##NAME##_max(T *io, const T *in, unsigned long long n) { reduce_body<T, 3>(io, in, n); }
KERNELS(int8, signed char) KERNELS(int16, short) KERNELS(int32, int) KERNELS(int64, long long)
KERNELS(uint8, unsigned char) KERNELS(uint16, unsigned short) KERNELS(uint32, unsigned) KERNELS(uint64, unsigned long long)
KERNELS(float32, float) KERNELS(float64, double) KERNELS(float16, f16) KERNELS(bfloat16, b16)
)CUDA";
}

inline std::string kernel_name(datatype type, op_kind op)
{
    static const char *const ops[] = {"sum", "prod", "min", "max"};
    return std::string("ucp_cpp_reduce_") + name_of(type) + "_" + ops[int(op)];
}

namespace detail {

struct nvrtc_api {
    using program = struct _nvrtcProgram *;
    int (*create)(program *, const char *, const char *, int, const char *const *, const char *const *);
    int (*compile)(program, int, const char *const *);
    int (*log_size)(program, size_t *);
    int (*log)(program, char *);
    int (*cubin_size)(program, size_t *);
    int (*cubin)(program, char *);
    int (*ptx_size)(program, size_t *);
    int (*ptx)(program, char *);
    int (*destroy)(program *);
    int (*error_string_raw)(int);  // const char *(*)(nvrtcResult), cast at use
    int (*num_archs)(int *);       // nvrtcGetNumSupportedArchs (CUDA >= 11.2), may be null
    int (*archs)(int *);
    std::string loaded_from;
    std::string why;
};

inline const nvrtc_api &load_nvrtc()
{
    static const nvrtc_api api = [] {
        nvrtc_api a{};
        std::vector<std::string> names;
        if (const char *env = std::getenv("UCP_CPP_COLL_NVRTC")) names.emplace_back(env);
        for (const char *n : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11.1",
                              "libnvrtc.so.11.0", "/usr/local/cuda/lib64/libnvrtc.so",
                              "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12"}) {
            names.emplace_back(n);
        }
        void *lib = nullptr;
        for (const auto &n : names) {
            lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (lib != nullptr) {
                a.loaded_from = n;
                break;
            }
        }
        if (lib == nullptr) {
            a.why = "cannot load NVRTC (tried libnvrtc.so, .so.13, .so.12, .so.11.x and /usr/local/cuda/lib64; "
                    "set UCP_CPP_COLL_NVRTC=/path/libnvrtc.so): it compiles the reduction kernels for CUDA buffers";
            return a;
        }
        const bool ok = resolve(lib, a.create, "nvrtcCreateProgram") && resolve(lib, a.compile, "nvrtcCompileProgram") &&
                        resolve(lib, a.log_size, "nvrtcGetProgramLogSize") && resolve(lib, a.log, "nvrtcGetProgramLog") &&
                        resolve(lib, a.ptx_size, "nvrtcGetPTXSize") && resolve(lib, a.ptx, "nvrtcGetPTX") &&
                        resolve(lib, a.destroy, "nvrtcDestroyProgram");
        if (!ok) {
            a.why = a.loaded_from + " lacks an NVRTC entry point";
            a.create = nullptr;
            return a;
        }
        if (!resolve(lib, a.cubin_size, "nvrtcGetCUBINSize") || !resolve(lib, a.cubin, "nvrtcGetCUBIN")) {
            a.cubin_size = nullptr;
            a.cubin = nullptr;
        }
        if (!resolve(lib, a.num_archs, "nvrtcGetNumSupportedArchs") || !resolve(lib, a.archs, "nvrtcGetSupportedArchs")) {
            a.num_archs = nullptr;
        }
        return a;
    }();
    return api;
}

/// A compiled image (cubin or PTX) for compute capability cc (e.g. 90); process-wide cache.
inline std::shared_ptr<const std::string> kernel_image(int cc, std::string *how)
{
    static std::mutex lock;
    static std::map<int, std::pair<std::shared_ptr<const std::string>, std::string>> images;
    std::lock_guard<std::mutex> guard(lock);
    auto found = images.find(cc);
    if (found != images.end()) {
        *how = found->second.second;
        return found->second.first;
    }
    const nvrtc_api &nv = load_nvrtc();
    if (nv.create == nullptr) throw ucx_error(UCS_ERR_UNSUPPORTED, "coll/gpu: " + nv.why);

    // Attempts: native cubin, PTX for this architecture, PTX for the newest one NVRTC knows below it.
    std::vector<std::pair<std::string, bool>> attempts;  // (--gpu-architecture=..., cubin?)
    if (nv.cubin != nullptr) attempts.emplace_back("sm_" + std::to_string(cc), true);
    attempts.emplace_back("compute_" + std::to_string(cc), false);
    if (nv.num_archs != nullptr) {
        int n = 0;
        if (nv.num_archs(&n) == 0 && n > 0) {
            std::vector<int> archs(size_t(n), 0);
            nv.archs(archs.data());
            int best = 0;
            for (int a : archs) {
                if (a <= cc && a > best) best = a;
            }
            if (best != 0 && best != cc) attempts.emplace_back("compute_" + std::to_string(best), false);
        }
    }
    std::string errors;
    for (const auto &[arch, cubin] : attempts) {
        nvrtc_api::program prog = nullptr;
        if (nv.create(&prog, kernel_source(), "ucp_cpp_coll_reduce.cu", 0, nullptr, nullptr) != 0) {
            throw ucx_error(UCS_ERR_NO_MEMORY, "coll/gpu: nvrtcCreateProgram failed");
        }
        const std::string option = "--gpu-architecture=" + arch;
        const char *options[] = {option.c_str(), "--std=c++14", "-default-device"};
        const int rc = nv.compile(prog, 3, options);
        if (rc != 0) {
            size_t size = 0;
            nv.log_size(prog, &size);
            std::string log(size, '\0');
            if (size != 0) nv.log(prog, log.data());
            errors += "\n  " + option + ": nvrtcResult " + std::to_string(rc) + " " + log.c_str();
            nv.destroy(&prog);
            continue;
        }
        size_t size = 0;
        auto image = std::make_shared<std::string>();
        if (cubin) {
            nv.cubin_size(prog, &size);
            image->resize(size);
            nv.cubin(prog, image->data());
        } else {
            nv.ptx_size(prog, &size);
            image->resize(size);  // includes the terminating NUL cuModuleLoadData needs
            nv.ptx(prog, image->data());
        }
        nv.destroy(&prog);
        *how = (cubin ? "cubin " : "ptx ") + arch + " by " + nv.loaded_from;
        images[cc] = {image, *how};
        return image;
    }
    throw ucx_error(UCS_ERR_UNSUPPORTED,
                    "coll/gpu: NVRTC (" + nv.loaded_from + ") could not compile the reduction kernels for sm_" +
                        std::to_string(cc) + ":" + errors);
}

}  // namespace detail

/// "cubin sm_90 by libnvrtc.so.13" etc. for the last image built for @p cc (diagnostics).
inline std::string compile_kernels_for(int cc)
{
    std::string how;
    detail::kernel_image(cc, &how);
    return how;
}

// ---------------------------------------------------------------- lane

/// Makes a context current for the scope (and restores the previous one).
class context_scope {
public:
    context_scope(const driver &cu, CUcontext ctx) : cu_(cu)
    {
        CUcontext current = nullptr;
        cu_.cuCtxGetCurrent(&current);
        if (current != ctx) {
            cu_.check(cu_.cuCtxPushCurrent(ctx), "cuCtxPushCurrent");
            pushed_ = true;
        }
    }
    ~context_scope()
    {
        if (pushed_) {
            CUcontext popped = nullptr;
            cu_.cuCtxPopCurrent(&popped);
        }
    }
    context_scope(const context_scope &) = delete;
    context_scope &operator=(const context_scope &) = delete;

private:
    const driver &cu_;
    bool pushed_ = false;
};

/// One engine's GPU resources on one CUDA context (see the file comment).
class lane : public coll::detail::device_actions, public std::enable_shared_from_this<lane> {
public:
    /// @p where: a device buffer's location; @p segment_bytes: pinned bounce-buffer size.
    lane(const location &where, size_t segment_bytes) : cu_(require_driver()), segment_(segment_bytes)
    {
        cu_.check(cu_.cuDeviceGet(&device_, where.ordinal < 0 ? 0 : where.ordinal), "cuDeviceGet");
        if (where.context != nullptr) {
            context_ = where.context;
        } else {
            cu_.check(cu_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
            retained_ = true;
        }
        context_scope scope(cu_, context_);
        int major = 0, minor = 0;
        cu_.check(cu_.cuDeviceGetAttribute(&major, DEVICE_ATTRIBUTE_CC_MAJOR, device_), "cuDeviceGetAttribute");
        cu_.check(cu_.cuDeviceGetAttribute(&minor, DEVICE_ATTRIBUTE_CC_MINOR, device_), "cuDeviceGetAttribute");
        cu_.check(cu_.cuDeviceGetAttribute(&sm_count_, DEVICE_ATTRIBUTE_SM_COUNT, device_), "cuDeviceGetAttribute");
        cc_ = major * 10 + minor;
        cu_.check(cu_.cuStreamCreate(&stream_, STREAM_NON_BLOCKING), "cuStreamCreate");
        cu_.check(cu_.cuStreamCreate(&d2h_stream_, STREAM_NON_BLOCKING), "cuStreamCreate");
    }

    ~lane() override
    {
        context_scope scope(cu_, context_);
        cu_.cuStreamSynchronize(stream_);
        cu_.cuStreamSynchronize(d2h_stream_);
        for (void *block : pinned_all_) cu_.cuMemFreeHost(block);
        for (auto &[size, blocks] : device_free_) {
            for (CUdeviceptr p : blocks) cu_.cuMemFree(p);
        }
        for (CUevent e : events_all_) cu_.cuEventDestroy(e);
        cu_.cuStreamDestroy(stream_);
        cu_.cuStreamDestroy(d2h_stream_);
        if (retained_) cu_.cuDevicePrimaryCtxRelease(device_);
    }
    lane(const lane &) = delete;
    lane &operator=(const lane &) = delete;

    CUcontext context() const { return context_; }
    CUstream stream() const { return stream_; }
    int compute_capability() const { return cc_; }
    size_t segment_bytes() const { return segment_; }
    const driver &cu() const { return cu_; }

    // -------------------------------------------------- local actions (device_actions)

    void copy(void *dst, const void *src, size_t bytes) override
    {
        if (dst == src || bytes == 0) return;
        context_scope scope(cu_, context_);
        cu_.check(cu_.cuMemcpyAsync(address(dst), address(src), bytes, stream_), "cuMemcpyAsync");
    }

    void reduce(const reduction &op, datatype type, const void *in, void *inout, size_t count) override
    {
        if (count == 0) return;
        context_scope scope(cu_, context_);
        if (op.kind() == op_kind::custom) return reduce_on_host(op, type, in, inout, count);
        CUfunction f = function(type, op.kind());
        const size_t elem = size_of(type);
        const bool aligned = ((reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(inout)) & 15u) == 0;
        const size_t items = aligned ? (count * elem + 15) / 16 : count;
        const unsigned threads = 256;
        const size_t wanted = (items + threads - 1) / threads;
        const unsigned blocks = unsigned(std::max<size_t>(1, std::min<size_t>(wanted, size_t(sm_count_) * 8)));
        unsigned long long n = count;
        void *args[] = {&inout, &in, &n};
        cu_.check(cu_.cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, stream_, args, nullptr), "cuLaunchKernel");
    }

    /// Device scratch (cached by power-of-two size; freed when the lane goes).
    std::shared_ptr<std::byte> allocate(size_t bytes) override
    {
        size_t rounded = 256;
        while (rounded < bytes) rounded <<= 1;
        CUdeviceptr p = 0;
        auto &free_list = device_free_[rounded];
        if (!free_list.empty()) {
            p = free_list.back();
            free_list.pop_back();
        } else {
            context_scope scope(cu_, context_);
            cu_.check(cu_.cuMemAlloc(&p, rounded), "cuMemAlloc");
        }
        // Returned to the cache when the schedule drops it: the schedule is done with it then
        // (completed through a stream fence, or abandoned after synchronize()).  The block keeps
        // the lane alive (the lane frees the cache).
        return std::shared_ptr<std::byte>(reinterpret_cast<std::byte *>(uintptr_t(p)),
                                          [owner = shared_from_this(), rounded](std::byte *b) {
                                              owner->device_free_[rounded].push_back(CUdeviceptr(uintptr_t(b)));
                                          });
    }

    // -------------------------------------------------- staging support (engine.hpp)

    /// A pinned host block of segment_bytes().
    void *take_pinned()
    {
        if (pinned_free_.empty()) reclaim_pinned();
        if (!pinned_free_.empty()) {
            void *b = pinned_free_.back();
            pinned_free_.pop_back();
            return b;
        }
        context_scope scope(cu_, context_);
        void *b = nullptr;
        cu_.check(cu_.cuMemHostAlloc(&b, segment_, MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
        pinned_all_.push_back(b);
        return b;
    }
    void give_pinned(void *block) { pinned_free_.push_back(block); }
    /// Returns @p block to the pool once the work before @p e (an H2D copy still reading the
    /// block) has completed; the event goes back with it.
    void give_pinned_after(void *block, CUevent e) { pinned_busy_.emplace_back(e, block); }

    /// Device -> pinned host on the D2H stream, after everything queued so far on the main stream.
    void d2h_after_main(void *host, const void *device, size_t bytes, bool wait_main)
    {
        context_scope scope(cu_, context_);
        if (wait_main) {
            CUevent e = record(stream_);
            cu_.check(cu_.cuStreamWaitEvent(d2h_stream_, e, 0), "cuStreamWaitEvent");
            release(e);  // the wait is queued: the event may be re-recorded later
        }
        cu_.check(cu_.cuMemcpyDtoHAsync(host, address(device), bytes, d2h_stream_), "cuMemcpyDtoHAsync");
    }
    /// Pinned host -> device on the main stream.
    void h2d(void *device, const void *host, size_t bytes)
    {
        context_scope scope(cu_, context_);
        cu_.check(cu_.cuMemcpyHtoDAsync(address(device), host, bytes, stream_), "cuMemcpyHtoDAsync");
    }

    /// An event recorded now on the main stream (or the D2H stream).
    CUevent record(bool on_d2h_stream = false)
    {
        context_scope scope(cu_, context_);
        return record(on_d2h_stream ? d2h_stream_ : stream_);
    }
    /// true once the work before @p e has completed; throws on a CUDA error.
    bool passed(CUevent e)
    {
        context_scope scope(cu_, context_);
        const CUresult rc = cu_.cuEventQuery(e);
        if (rc == CUDA_SUCCESS_) return true;
        if (rc == CUDA_ERROR_NOT_READY_) return false;
        cu_.check(rc, "cuEventQuery");
        return false;
    }
    void release(CUevent e) { events_free_.push_back(e); }

    /// Waits for everything queued on both streams (errors ignored: used on failure paths).
    void synchronize() noexcept
    {
        CUcontext current = nullptr;
        cu_.cuCtxGetCurrent(&current);
        bool pushed = current != context_ && cu_.cuCtxPushCurrent(context_) == CUDA_SUCCESS_;
        cu_.cuStreamSynchronize(stream_);
        cu_.cuStreamSynchronize(d2h_stream_);
        if (pushed) cu_.cuCtxPopCurrent(&current);
    }

private:
    static const driver &require_driver()
    {
        const driver *cu = cuda();
        if (cu == nullptr) {
            throw ucx_error(UCS_ERR_UNSUPPORTED, "coll/gpu: a CUDA buffer needs the CUDA driver: " + driver_problem());
        }
        return *cu;
    }
    static CUdeviceptr address(const void *p) { return CUdeviceptr(reinterpret_cast<uintptr_t>(p)); }

    /// Moves the blocks of give_pinned_after() whose copies completed back to the pool.
    void reclaim_pinned()
    {
        context_scope scope(cu_, context_);
        for (size_t i = 0; i < pinned_busy_.size();) {
            if (!passed(pinned_busy_[i].first)) {
                ++i;
                continue;
            }
            release(pinned_busy_[i].first);
            pinned_free_.push_back(pinned_busy_[i].second);
            pinned_busy_[i] = pinned_busy_.back();
            pinned_busy_.pop_back();
        }
    }

    CUevent record(CUstream s)
    {
        CUevent e = nullptr;
        if (!events_free_.empty()) {
            e = events_free_.back();
            events_free_.pop_back();
        } else {
            cu_.check(cu_.cuEventCreate(&e, EVENT_DISABLE_TIMING), "cuEventCreate");
            events_all_.push_back(e);
        }
        cu_.check(cu_.cuEventRecord(e, s), "cuEventRecord");
        return e;
    }

    CUfunction function(datatype type, op_kind op)
    {
        const size_t index = size_t(type) * 4 + size_t(op);
        if (functions_.empty()) {
            // The module is per context; the compiled image per compute capability.
            std::string how;
            auto image = detail::kernel_image(cc_, &how);
            CUmodule module = nullptr;
            const CUresult rc = cu_.cuModuleLoadData(&module, image->data());
            if (rc != CUDA_SUCCESS_) {
                throw ucx_error(UCS_ERR_UNSUPPORTED, cu_.describe("cuModuleLoadData", rc) + " for the reduction kernels (" +
                                                         how + ")");
            }
            module_ = module;
            functions_.assign(size_t(datatype::bfloat16) * 4 + 4, nullptr);
        }
        if (functions_[index] == nullptr) {
            const std::string name = kernel_name(type, op);
            cu_.check(cu_.cuModuleGetFunction(&functions_[index], module_, name.c_str()), "cuModuleGetFunction");
        }
        return functions_[index];
    }

    /// Custom reductions: copy both operands to the host, reduce there, copy back (synchronous).
    void reduce_on_host(const reduction &op, datatype type, const void *in, void *inout, size_t count)
    {
        const size_t bytes = count * size_of(type);
        std::vector<std::byte> a(bytes), b(bytes);
        cu_.check(cu_.cuMemcpyDtoHAsync(a.data(), address(inout), bytes, stream_), "cuMemcpyDtoHAsync");
        cu_.check(cu_.cuMemcpyDtoHAsync(b.data(), address(in), bytes, stream_), "cuMemcpyDtoHAsync");
        cu_.check(cu_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
        op.apply(type, b.data(), a.data(), count);
        cu_.check(cu_.cuMemcpyHtoDAsync(address(inout), a.data(), bytes, stream_), "cuMemcpyHtoDAsync");
        cu_.check(cu_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
    }

    const driver &cu_;
    size_t segment_;
    CUdevice device_ = 0;
    CUcontext context_ = nullptr;
    bool retained_ = false;
    int cc_ = 0, sm_count_ = 1;
    CUstream stream_ = nullptr, d2h_stream_ = nullptr;
    CUmodule module_ = nullptr;
    std::vector<CUfunction> functions_;
    std::vector<void *> pinned_all_, pinned_free_;
    std::vector<std::pair<CUevent, void *>> pinned_busy_;  ///< give_pinned_after(): (copy, block)
    std::map<size_t, std::vector<CUdeviceptr>> device_free_;
    std::vector<CUevent> events_all_, events_free_;
};

/// How transfers of CUDA buffers travel.
enum class staging { automatic, always, never };

/// UCP_CPP_COLL_GPU_STAGING=auto|yes|no overrides @p configured when set.
inline staging staging_from_environment(staging configured)
{
    const char *v = std::getenv("UCP_CPP_COLL_GPU_STAGING");
    if (v == nullptr || *v == '\0') return configured;
    const std::string s(v);
    if (s == "auto") return staging::automatic;
    if (s == "yes" || s == "1" || s == "on") return staging::always;
    if (s == "no" || s == "0" || s == "off") return staging::never;
    throw ucx_error(UCS_ERR_INVALID_PARAM, "UCP_CPP_COLL_GPU_STAGING=" + s + ": expected auto, yes or no");
}

/// UCP_CPP_COLL_GPU_SEGMENT (bytes, >= 4096) overrides @p configured when set.
inline size_t segment_from_environment(size_t configured)
{
    const char *v = std::getenv("UCP_CPP_COLL_GPU_SEGMENT");
    if (v == nullptr || *v == '\0') return configured;
    char *end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*end != '\0' || n < 4096) {
        throw ucx_error(UCS_ERR_INVALID_PARAM, std::string("UCP_CPP_COLL_GPU_SEGMENT=") + v + ": expected bytes >= 4096");
    }
    return size_t(n);
}

}  // namespace ucp_cpp::coll::gpu
