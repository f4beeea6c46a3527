/**
 * @file coll/gpu/kernels.hpp
 * @brief The reduction kernels: one CUDA source (every datatype x sum/prod/min/max;
 *        float16/bfloat16 computed in float, rounded to nearest even), compiled by NVRTC once per
 *        process per compute capability, loaded once per CUDA context and launched on the
 *        collective's stream.
 *
 * Threading: the compiled images are process-wide and guarded; a reduction_kernels object
 * belongs to one lane (one thread at a time).
 */
#pragma once

#include <ucp_cpp/coll/gpu/driver.hpp>
#include <ucp_cpp/coll/gpu/nvrtc.hpp>
#include <ucp_cpp/coll/types.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ucp_cpp::coll::gpu {

/// @brief The CUDA C++ source of every reduction kernel, given to NVRTC at run time (so the
///        library needs no CUDA toolkit to build).
/// @return kernel source: ucp_cpp_reduce_<type>_<op>(T *inout, const T *in, unsigned long long n)
///         and ucp_cpp_reduce_many_<type>_<op>(many_outputs out, unsigned m, many_inputs in,
///         unsigned k, unsigned long long n) (m <= 16 outputs = op over k <= 8 inputs).
inline const char *kernel_source()
{
    return R"CUDA(
struct f16 { unsigned short x; };
struct b16 { unsigned short x; };
__device__ __forceinline__ float as_float(f16 h)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.x));
    return f;
}
__device__ __forceinline__ float as_float(b16 h) { return __uint_as_float(((unsigned)h.x) << 16); }
__device__ __forceinline__ f16 to_f16(float f)
{
    f16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.x) : "f"(f));
    return h;
}
__device__ __forceinline__ b16 to_b16(float f)
{
    b16 h;
#if __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.x) : "f"(f));
#else
    unsigned x = __float_as_uint(f);
    h.x = (x & 0x7fffffffu) > 0x7f800000u
              ? (unsigned short)((x >> 16) | 0x40u)
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
INT_OPS(signed char, unsigned) INT_OPS(short, unsigned) INT_OPS(int, unsigned)
INT_OPS(long long, unsigned long long)
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
__device__ __forceinline__ void reduce_body(T *__restrict__ inout, const T *__restrict__ in,
                                            unsigned long long n)
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
    for (unsigned long long i = start + tid; i < n; i += stride)
        inout[i] = combine<T, OP>(inout[i], in[i]);
}

/* out.p[0..m)[i] = op over in.p[0..k)[i] (k <= 8, m <= 16), the inputs in that order; 16-byte
   vectors when every pointer is 16-byte aligned.  Outputs may be inputs (in place: a thread
   reads all inputs of an element before it writes it); the pointers may be other processes'
   buffers (the direct allreduce), so no read goes through the non-coherent cache. */
struct many_inputs { const void *p[8]; };
struct many_outputs { void *p[16]; };
template <class T, int OP>
__device__ __forceinline__ void reduce_many_body(many_outputs out, unsigned m, many_inputs in,
                                                 unsigned k, unsigned long long n)
{
    const unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long start = 0, bits = 0;
    for (unsigned j = 0; j < k; ++j) bits |= (unsigned long long)in.p[j];
    for (unsigned o = 0; o < m; ++o) bits |= (unsigned long long)out.p[o];
    if ((bits & 15ull) == 0) {
        const unsigned V = 16 / sizeof(T);
        const unsigned long long vectors = n / V;
        for (unsigned long long i = tid; i < vectors; i += stride) {
            union { uint4 v; T e[16 / sizeof(T)]; } a, b;
            a.v = ((const uint4 *)in.p[0])[i];
            for (unsigned j = 1; j < k; ++j) {
                b.v = ((const uint4 *)in.p[j])[i];
#pragma unroll
                for (unsigned e = 0; e < V; ++e) a.e[e] = combine<T, OP>(a.e[e], b.e[e]);
            }
            for (unsigned o = 0; o < m; ++o) ((uint4 *)out.p[o])[i] = a.v;
        }
        start = vectors * V;
    }
    for (unsigned long long i = start + tid; i < n; i += stride) {
        T a = ((const T *)in.p[0])[i];
        for (unsigned j = 1; j < k; ++j) a = combine<T, OP>(a, ((const T *)in.p[j])[i]);
        for (unsigned o = 0; o < m; ++o) ((T *)out.p[o])[i] = a;
    }
}

#define KERNEL(NAME, T, OP, ID) \
    extern "C" __global__ void ucp_cpp_reduce_##NAME##_##OP(T *io, const T *in, \
                                                            unsigned long long n) \
    { \
        reduce_body<T, ID>(io, in, n); \
    } \
    extern "C" __global__ void ucp_cpp_reduce_many_##NAME##_##OP( \
        many_outputs out, unsigned m, many_inputs in, unsigned k, unsigned long long n) \
    { \
        reduce_many_body<T, ID>(out, m, in, k, n); \
    }
#define KERNELS(NAME, T) \
    KERNEL(NAME, T, sum, 0) KERNEL(NAME, T, prod, 1) KERNEL(NAME, T, min, 2) KERNEL(NAME, T, max, 3)
KERNELS(int8, signed char) KERNELS(int16, short) KERNELS(int32, int) KERNELS(int64, long long)
KERNELS(uint8, unsigned char) KERNELS(uint16, unsigned short) KERNELS(uint32, unsigned)
KERNELS(uint64, unsigned long long)
KERNELS(float32, float) KERNELS(float64, double) KERNELS(float16, f16) KERNELS(bfloat16, b16)
)CUDA";
}


/// @brief The kernel of @p type and @p op in kernel_source().
/// @param type the elements' datatype.
/// @param op   the reduction (sum, prod, min or max; not custom).
/// @param many  the kernel of many inputs (ucp_cpp_reduce_many_...) instead of two.
/// @return its name, for cuModuleGetFunction (e.g. "ucp_cpp_reduce_float32_sum").
inline std::string kernel_name(datatype type, op_kind op, bool many = false)
{
    static const char *const ops[] = {"sum", "prod", "min", "max"};
    return std::string(many ? "ucp_cpp_reduce_many_" : "ucp_cpp_reduce_") + name_of(type) + "_" +
           ops[int(op)];
}

/// The most inputs one launch of the many-input kernel reduces (its parameter struct's size).
inline constexpr size_t max_kernel_inputs = 8;
/// The most outputs one launch of the many-input kernel writes (its parameter struct's size).
inline constexpr size_t max_kernel_outputs = 16;

namespace detail {

/// The compiled image (cubin or PTX) for compute capability @p cc (e.g. 90), built once per
/// process; @p how is set to what was built (see compile()).
inline std::shared_ptr<const std::string> kernel_image(int cc, std::string *how)
{
    static std::mutex lock;
    static std::map<int, std::pair<std::shared_ptr<const std::string>, std::string>> images;
    std::lock_guard<std::mutex> guard(lock);
    auto found = images.find(cc);
    if (found == images.end()) {
        std::string built;
        auto image = compile(kernel_source(), "ucp_cpp_coll_reduce.cu", cc, &built);
        found      = images.emplace(cc, std::make_pair(image, built)).first;
    }
    *how = found->second.second;
    return found->second.first;
}

}  // namespace detail

/// @brief How the reduction kernels are built for a device, for diagnostics (gpu_coll_bench
///        prints it); builds them when not yet built (the image is kept for the process).
/// @param cc a compute capability, e.g. 90.
/// @return "cubin sm_90 by libnvrtc.so.13" etc. for the image built for @p cc.
/// @throws ucx_error(UCS_ERR_UNSUPPORTED) without NVRTC or when it cannot compile for @p cc.
inline std::string compile_kernels_for(int cc)
{
    std::string how;
    detail::kernel_image(cc, &how);
    return how;
}

/**
 * @brief The reduction kernels in one CUDA context: the module is loaded on the first reduction,
 *        each function looked up on its first use.  Calls need the context current.
 */
class reduction_kernels {
public:
    /// @brief Nothing is compiled or loaded until the first launch().
    /// @param cu       the driver (cuda()).
    /// @param cc       the device's compute capability (e.g. 90), which picks the image.
    /// @param sm_count its multiprocessors, which bound the grid.
    reduction_kernels(const driver &cu, int cc, int sm_count)
        : cu_(cu), cc_(cc), sm_count_(sm_count)
    {}
    reduction_kernels(const reduction_kernels &)            = delete;
    reduction_kernels &operator=(const reduction_kernels &) = delete;

    /// @brief Queues inout[i] = op(inout[i], in[i]) for @p count elements on @p stream.
    /// @param type  the elements' datatype.
    /// @param op    the reduction (not op_kind::custom: those are reduced on the host).
    /// @param in    device operand, read.
    /// @param inout device operand and result.
    /// @param count the number of elements.
    /// @param stream the stream to queue on (the lane's main stream).
    /// @throws ucx_error(UCS_ERR_UNSUPPORTED) when the kernels cannot be built or loaded for this
    ///         device; ucx_error(UCS_ERR_IO_ERROR) when the launch fails.
    void launch(datatype type, op_kind op, const void *in, void *inout, size_t count,
                CUstream stream)
    {
        CUfunction f      = function(type, op);
        const size_t elem = size_of(type);
        const bool aligned =
            ((reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(inout)) & 15u) == 0;
        const size_t items   = aligned ? (count * elem + 15) / 16 : count;
        unsigned long long n = count;
        void *args[]         = {&inout, &in, &n};
        check(cu_.cuLaunchKernel(f, grid(items), 1, 1, block_threads, 1, 1, 0, stream, args,
                                 nullptr),
              "cuLaunchKernel");
    }

    /// @brief Queues outputs[o][i] = op(inputs[0][i], ..., inputs[k-1][i]) for @p count
    ///        elements and every output on @p stream: one launch per max_kernel_inputs inputs
    ///        (the earlier ones write outputs[0] only, which the next folds in as its first
    ///        operand).
    /// @param type    the elements' datatype.
    /// @param op      the reduction (not op_kind::custom).
    /// @param inputs  @p k device operands, read (outputs may be inputs: in place).
    /// @param k       how many, >= 1.
    /// @param outputs @p m device results.
    /// @param m       how many, 1 to max_kernel_outputs.
    /// @param count   the number of elements.
    /// @param stream  the stream to queue on.
    /// @throws ucx_error as launch().
    void launch_many(datatype type, op_kind op, const void *const *inputs, size_t k,
                     void *const *outputs, size_t m, size_t count, CUstream stream)
    {
        CUfunction f = function(type, op, /*many=*/true);
        struct {
            const void *p[max_kernel_inputs];
        } operands{};
        struct {
            void *p[max_kernel_outputs];
        } results{};
        std::copy(outputs, outputs + std::min(m, max_kernel_outputs), results.p);
        const size_t items = (count * size_of(type) + 15) / 16;
        for (size_t first = 0; first < k;) {
            // After the first launch, outputs[0] holds the reduction so far: the first operand.
            size_t used = 0;
            if (first > 0)
                operands.p[used++] = outputs[0];
            while (used < max_kernel_inputs && first < k)
                operands.p[used++] = inputs[first++];
            unsigned used_inputs = unsigned(used);
            unsigned written     = first == k ? unsigned(std::min(m, max_kernel_outputs)) : 1u;
            unsigned long long n = count;
            void *args[]         = {&results, &written, &operands, &used_inputs, &n};
            check(cu_.cuLaunchKernel(f, grid(items), 1, 1, block_threads, 1, 1, 0, stream, args,
                                     nullptr),
                  "cuLaunchKernel");
        }
    }

private:
    static constexpr unsigned block_threads = 256;

    /// Blocks of a grid-stride launch over @p items work items: at most 8 per multiprocessor.
    unsigned grid(size_t items) const
    {
        const size_t wanted = (items + block_threads - 1) / block_threads;
        return unsigned(std::max<size_t>(1, std::min<size_t>(wanted, size_t(sm_count_) * 8)));
    }

    CUfunction function(datatype type, op_kind op, bool many = false)
    {
        const size_t kinds = size_t(datatype::bfloat16) * 4 + 4;
        const size_t index = size_t(type) * 4 + size_t(op) + (many ? kinds : 0);
        if (functions_.empty()) {
            std::string how;
            auto image        = detail::kernel_image(cc_, &how);
            CUmodule module   = nullptr;
            const CUresult rc = cu_.cuModuleLoadData(&module, image->data());
            if (rc != gdr::cuda_driver::CUDA_SUCCESS) {
                throw ucx_error(UCS_ERR_UNSUPPORTED,
                                "coll/gpu: " +
                                    gdr::cuda_driver::driver::instance().failure("cuModuleLoadData",
                                                                                 rc) +
                                    " for the reduction kernels (" + how + ")");
            }
            module_ = module;
            functions_.assign(2 * kinds, nullptr);
        }
        if (functions_[index] == nullptr) {
            const std::string name = kernel_name(type, op, many);
            check(cu_.cuModuleGetFunction(&functions_[index], module_, name.c_str()),
                  "cuModuleGetFunction");
        }
        return functions_[index];
    }

    const driver &cu_;
    int cc_;
    int sm_count_;
    CUmodule module_ = nullptr;
    std::vector<CUfunction> functions_;
};

}  // namespace ucp_cpp::coll::gpu
