/**
 * @file coll/types.hpp
 * @brief The vocabulary of ucp_cpp::coll: element types, reduction operations, and the ids of
 *        the collectives and of their algorithms.
 *
 * A reduction combines an incoming vector into an accumulator: inout[i] = op(inout[i], in[i]).
 * The built-in operations (sum, prod, min, max) are commutative and associative for integers;
 * for floating point they are commutative (IEEE), so every rank of an allreduce gets bit-identical
 * results, but the association order depends on the algorithm (compare with a tolerance).
 * A user reduction (reduction::custom) must be associative and commutative: the algorithms
 * combine partial results in an order that depends on the rank layout.
 *
 * Threading: reductions are immutable values; a custom function runs on the thread that
 * progresses the collective.
 */
#pragma once

#include <ucp_cpp/error.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

/// @brief Collectives over ucp_cpp: communicators, their algorithms and their configuration.
namespace ucp_cpp::coll {

/// Element types.  float16 (IEEE binary16) and bfloat16 are stored as half_t / bfloat16_t
/// below and reduced in float (each result rounded to nearest even), on the host and on the GPU.
enum class datatype : uint8_t {
    int8,  ///< int8_t
    int16,  ///< int16_t
    int32,  ///< int32_t
    int64,  ///< int64_t
    uint8,  ///< uint8_t
    uint16,  ///< uint16_t
    uint32,  ///< uint32_t
    uint64,  ///< uint64_t
    float32,  ///< float
    float64,  ///< double
    float16,  ///< half_t (IEEE binary16)
    bfloat16  ///< bfloat16_t
};

/**
 * @brief The size of one element.
 * @param type an element type
 * @return its size in bytes (1, 2, 4 or 8)
 */
[[nodiscard]] inline size_t size_of(datatype type)
{
    switch (type) {
    case datatype::int8:
    case datatype::uint8:
        return 1;
    case datatype::int16:
    case datatype::uint16:
    case datatype::float16:
    case datatype::bfloat16:
        return 2;
    case datatype::int32:
    case datatype::uint32:
    case datatype::float32:
        return 4;
    default:
        return 8;
    }
}

/**
 * @brief The name of an element type, as messages and the GPU kernels spell it.
 * @param type an element type
 * @return "int8" ... "uint64", "float32", "float64", "float16" or "bfloat16"
 */
[[nodiscard]] inline const char *name_of(datatype type)
{
    static const char *const names[] = {"int8",    "int16",   "int32",   "int64",
                                        "uint8",   "uint16",  "uint32",  "uint64",
                                        "float32", "float64", "float16", "bfloat16"};
    return names[static_cast<int>(type)];
}

namespace detail {
inline uint32_t float_bits(float f)
{
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    return x;
}
inline float bits_float(uint32_t x)
{
    float f;
    std::memcpy(&f, &x, sizeof f);
    return f;
}
}  // namespace detail

/**
 * @brief IEEE 754 binary16 storage (bit-compatible with CUDA's __half: pass a __half* as
 *        half_t* with reinterpret_cast).
 *
 * Converts to/from float; float -> half rounds to nearest, ties to even (overflow gives
 * infinity, NaN stays NaN).  No arithmetic of its own: compute in float.
 */
struct half_t {
    uint16_t bits = 0;  ///< the binary16 encoding

    /// Positive zero.
    half_t() = default;
    /// @brief The nearest binary16 value (ties to even). @param f any float
    half_t(float f) : bits(from_float(f)) {}  // NOLINT(google-explicit-constructor): like a float
    /// @brief The exact float value. @return the value as float
    operator float() const { return to_float(bits); }  // NOLINT
    /**
     * @brief A half_t with the given encoding.
     * @param b binary16 bits
     * @return the value whose encoding is @p b
     */
    [[nodiscard]] static half_t from_bits(uint16_t b)
    {
        half_t h;
        h.bits = b;
        return h;
    }

    /**
     * @brief float to binary16, rounding to nearest, ties to even.
     * @param f any float
     * @return the binary16 encoding
     */
    [[nodiscard]] static uint16_t from_float(float f)
    {
        const uint32_t x = detail::float_bits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
        if (ax > 0x7f800000u)
            return uint16_t(sign | 0x7e00u);  // NaN (quiet)
        if (ax >= 0x47800000u)
            return uint16_t(sign | 0x7c00u);  // >= 65536 (or inf): inf
        if (ax < 0x33000000u)
            return uint16_t(sign);  // < 2^-25: +-0
        if (ax < 0x38800000u) {  // half subnormal
            const uint32_t mant = (ax & 0x7fffffu) | 0x800000u, shift = 126u - (ax >> 23);
            uint32_t h          = mant >> shift;
            const uint32_t rest = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
            if (rest > halfway || (rest == halfway && (h & 1u)))
                ++h;
            return uint16_t(sign | h);
        }
        uint32_t h          = (ax - 0x38000000u) >> 13;  // rebias 127 -> 15, drop 13 mantissa bits
        const uint32_t rest = ax & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
            ++h;  // may carry into inf: correct
        return uint16_t(sign | h);
    }
    /**
     * @brief binary16 to float (exact).
     * @param h a binary16 encoding
     * @return its value
     */
    [[nodiscard]] static float to_float(uint16_t h)
    {
        const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu;
        uint32_t mant = h & 0x3ffu;
        if (exp == 0x1fu)
            return detail::bits_float(sign | 0x7f800000u | (mant << 13));
        if (exp != 0)
            return detail::bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
        if (mant == 0)
            return detail::bits_float(sign);
        int e = 1;  // subnormal: normalise
        while ((mant & 0x400u) == 0) {
            mant <<= 1;
            --e;
        }
        return detail::bits_float(sign | (uint32_t(e + 112) << 23) | ((mant & 0x3ffu) << 13));
    }
};

/**
 * @brief bfloat16 storage (the upper half of a float; bit-compatible with CUDA's __nv_bfloat16).
 *
 * float -> bfloat16 rounds to nearest, ties to even; NaN stays NaN.
 */
struct bfloat16_t {
    uint16_t bits = 0;  ///< the upper 16 bits of a float

    /// Positive zero.
    bfloat16_t() = default;
    /// @brief The nearest bfloat16 value (ties to even). @param f any float
    bfloat16_t(float f) : bits(from_float(f)) {}  // NOLINT(google-explicit-constructor)
    /// @brief The exact float value. @return the value as float
    operator float() const { return to_float(bits); }  // NOLINT
    /**
     * @brief A bfloat16_t with the given encoding.
     * @param b bfloat16 bits
     * @return the value whose encoding is @p b
     */
    [[nodiscard]] static bfloat16_t from_bits(uint16_t b)
    {
        bfloat16_t h;
        h.bits = b;
        return h;
    }

    /**
     * @brief float to bfloat16, rounding to nearest, ties to even.
     * @param f any float
     * @return the bfloat16 encoding
     */
    [[nodiscard]] static uint16_t from_float(float f)
    {
        const uint32_t x = detail::float_bits(f);
        if ((x & 0x7fffffffu) > 0x7f800000u)
            return uint16_t((x >> 16) | 0x40u);  // NaN (quiet)
        return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
    }
    /**
     * @brief bfloat16 to float (exact).
     * @param b a bfloat16 encoding
     * @return its value
     */
    [[nodiscard]] static float to_float(uint16_t b)
    {
        return detail::bits_float(uint32_t(b) << 16);
    }
};

/**
 * @brief The datatype of a C++ element type; other types do not compile.
 * @tparam T a fixed-width integer, float, double, half_t or bfloat16_t (cv-qualified or not)
 * @return its datatype
 */
template <class T> [[nodiscard]] constexpr datatype datatype_of()
{
    using U = std::remove_cv_t<T>;
    if constexpr (std::is_same_v<U, float>)
        return datatype::float32;
    else if constexpr (std::is_same_v<U, double>)
        return datatype::float64;
    else if constexpr (std::is_same_v<U, half_t>)
        return datatype::float16;
    else if constexpr (std::is_same_v<U, bfloat16_t>)
        return datatype::bfloat16;
    else {
        static_assert(std::is_integral_v<U> && !std::is_same_v<U, bool> &&
                          (sizeof(U) == 1 || sizeof(U) == 2 || sizeof(U) == 4 || sizeof(U) == 8),
                      "ucp_cpp::coll supports int8..int64, uint8..uint64, float, double, "
                      "half_t and bfloat16_t");
        constexpr int log_size = sizeof(U) == 1 ? 0 : sizeof(U) == 2 ? 1 : sizeof(U) == 4 ? 2 : 3;
        return static_cast<datatype>((std::is_signed_v<U> ? 0 : 4) + log_size);
    }
}

/// What a reduction computes.
enum class op_kind : uint8_t {
    sum,  ///< a + b (integers wrap modulo 2^n)
    prod,  ///< a * b (integers wrap modulo 2^n)
    min,  ///< std::min(a, b)
    max,  ///< std::max(a, b)
    custom  ///< a user function (reduction::custom)
};

/**
 * @brief A reduction operation: one of the built-ins (coll::sum, prod, min, max) or a user
 *        function for one element type.
 *
 * Lifetime: a value; collectives keep their own copy until they complete.
 */
class reduction {
public:
    /// inout[i] = op(inout[i], in[i]) for i < count, on elements of the op's datatype.
    using vector_function = std::function<void(const void *in, void *inout, size_t count)>;

    /// @brief A built-in reduction. @param kind sum, prod, min or max
    explicit reduction(op_kind kind) : kind_(kind) {}

    /**
     * @brief A user reduction on elements of type T.
     *
     * It must be associative and commutative (see the file comment); on CUDA buffers it runs
     * on the host, staged.
     * @tparam T the element type it accepts (datatype_of<T>())
     * @param combine callable T(T accumulated, T incoming)
     * @return the reduction
     */
    template <class T, class F> [[nodiscard]] static reduction custom(F combine)
    {
        reduction op(op_kind::custom);
        op.type_     = datatype_of<T>();
        op.function_ = [combine](const void *in, void *inout, size_t count) {
            const T *src = static_cast<const T *>(in);
            T *dst       = static_cast<T *>(inout);
            for (size_t i = 0; i < count; ++i) {
                dst[i] = combine(dst[i], src[i]);
            }
        };
        return op;
    }

    /// @brief What it computes. @return the kind
    [[nodiscard]] op_kind kind() const noexcept { return kind_; }

    /**
     * @brief Checks that this reduction accepts elements of @p type.
     * @param type the element type of a collective call
     * @throws ucx_error UCS_ERR_INVALID_PARAM: a custom reduction of another element type
     */
    void check(datatype type) const
    {
        if (kind_ == op_kind::custom && type != type_) {
            throw ucx_error(UCS_ERR_INVALID_PARAM,
                            std::string("coll: custom reduction defined for ") + name_of(type_) +
                                " used on " + name_of(type));
        }
    }

    /**
     * @brief inout = op(inout, in), element by element, on the host.
     * @param type the element type (check()ed by the caller)
     * @param in @p count incoming elements
     * @param inout @p count accumulated elements, overwritten with the result
     * @param count number of elements
     */
    void apply(datatype type, const void *in, void *inout, size_t count) const
    {
        switch (type) {
        case datatype::int8:
            return apply_typed<int8_t>(in, inout, count);
        case datatype::int16:
            return apply_typed<int16_t>(in, inout, count);
        case datatype::int32:
            return apply_typed<int32_t>(in, inout, count);
        case datatype::int64:
            return apply_typed<int64_t>(in, inout, count);
        case datatype::uint8:
            return apply_typed<uint8_t>(in, inout, count);
        case datatype::uint16:
            return apply_typed<uint16_t>(in, inout, count);
        case datatype::uint32:
            return apply_typed<uint32_t>(in, inout, count);
        case datatype::uint64:
            return apply_typed<uint64_t>(in, inout, count);
        case datatype::float32:
            return apply_typed<float>(in, inout, count);
        case datatype::float64:
            return apply_typed<double>(in, inout, count);
        case datatype::float16:
            return apply_16<half_t>(in, inout, count);
        case datatype::bfloat16:
            return apply_16<bfloat16_t>(in, inout, count);
        }
    }

private:
    /// dst[i] = f(dst[i], src[i]) in blocks of 64 bytes whose fixed-length inner loop the
    /// compiler vectorises also at -O2 (GCC's cheap cost model leaves a loop of unknown length
    /// scalar); the buffers never overlap (an incoming block and the accumulator).
    template <class T, class F>
    static void each(const T *__restrict src, T *__restrict dst, size_t count, F f)
    {
        constexpr size_t lanes = 64 / sizeof(T);
        size_t i               = 0;
        for (; i + lanes <= count; i += lanes) {
            for (size_t j = 0; j < lanes; ++j)
                dst[i + j] = f(dst[i + j], src[i + j]);
        }
        for (; i < count; ++i)
            dst[i] = f(dst[i], src[i]);
    }

    template <class T> void apply_typed(const void *in, void *inout, size_t count) const
    {
        const T *src = static_cast<const T *>(in);
        T *dst       = static_cast<T *>(inout);
        switch (kind_) {
        // Integer sum/prod wrap modulo 2^n (computed unsigned: no signed-overflow UB).
        case op_kind::sum:
            return each(src, dst, count, [](T a, T b) { return wrap_add(a, b); });
        case op_kind::prod:
            return each(src, dst, count, [](T a, T b) { return wrap_mul(a, b); });
        case op_kind::min:
            return each(src, dst, count, [](T a, T b) { return std::min(a, b); });
        case op_kind::max:
            return each(src, dst, count, [](T a, T b) { return std::max(a, b); });
        case op_kind::custom:
            function_(in, inout, count);
            return;
        }
    }

    /// float16 / bfloat16: computed in float, each result rounded back (as the GPU kernels do).
    template <class H> void apply_16(const void *in, void *inout, size_t count) const
    {
        if (kind_ == op_kind::custom)
            return function_(in, inout, count);
        const H *src = static_cast<const H *>(in);
        H *dst       = static_cast<H *>(inout);
        for (size_t i = 0; i < count; ++i) {
            const float a = H::to_float(dst[i].bits), b = H::to_float(src[i].bits);
            switch (kind_) {
            case op_kind::sum:
                dst[i].bits = H::from_float(a + b);
                break;
            case op_kind::prod:
                dst[i].bits = H::from_float(a * b);
                break;
            // std::min / std::max semantics (the first argument wins ties and NaN comparisons)
            case op_kind::min:
                if (b < a)
                    dst[i] = src[i];
                break;
            case op_kind::max:
                if (a < b)
                    dst[i] = src[i];
                break;
            default:
                break;
            }
        }
    }

    template <class T> static T wrap_add(T a, T b)
    {
        if constexpr (std::is_integral_v<T>) {
            using U = std::make_unsigned_t<T>;
            return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
        } else {
            return a + b;
        }
    }
    template <class T> static T wrap_mul(T a, T b)
    {
        if constexpr (std::is_integral_v<T>) {
            // uint16 * uint16 promotes to int and may overflow it: multiply in 64 bits.
            using U             = std::make_unsigned_t<T>;
            const uint64_t wide = uint64_t(static_cast<U>(a)) * uint64_t(static_cast<U>(b));
            return static_cast<T>(static_cast<U>(wide));
        } else {
            return a * b;
        }
    }

    op_kind kind_;
    datatype type_ = datatype::int8;
    vector_function function_;
};

inline const reduction sum{op_kind::sum};  ///< sum (integers wrap modulo 2^n)
inline const reduction prod{op_kind::prod};  ///< product (integers wrap modulo 2^n)
inline const reduction min{op_kind::min};  ///< minimum
inline const reduction max{op_kind::max};  ///< maximum

/**
 * @brief The collectives of a communicator.
 *
 * What an algorithm implements (coll/algorithms.hpp) and what the variables
 * UCP_CPP_COLL_<COLLECTIVE>_ALGORITHM name (coll/config.hpp).
 */
enum class collective : uint8_t {
    barrier,  ///< communicator::barrier
    bcast,  ///< communicator::bcast
    reduce,  ///< communicator::reduce
    allreduce,  ///< communicator::allreduce
    allgather,  ///< communicator::allgather
    reduce_scatter,  ///< communicator::reduce_scatter (block variant)
    alltoall,  ///< communicator::alltoall
    gather,  ///< communicator::gather
    scatter,  ///< communicator::scatter
    allgatherv,  ///< communicator::allgatherv (per-rank counts and displacements)
    alltoallv,  ///< communicator::alltoallv
    gatherv,  ///< communicator::gatherv
    scatterv,  ///< communicator::scatterv
    reduce_scatterv  ///< communicator::reduce_scatter with per-rank counts (MPI_Reduce_scatter)
};

/**
 * @brief Counts or displacements of a v-variant collective (allgatherv, alltoallv, gatherv,
 *        scatterv, reduce_scatter with counts): one entry per rank, in elements.
 *
 * A read-only view of @p size() values: of a std::vector<size_t>, a std::array, a braced list
 * (`{3, 0, 5}`) or a pointer and a length.  The call copies the values when it is issued, so
 * the view, and what it views, need to live only as long as the call itself (also for the
 * nonblocking and persistent forms, unlike MPI's arrays).  An empty view where displacements
 * are asked for means "packed": the exclusive prefix sum of the counts.
 */
class counts_view {
public:
    /// No values (displacements: packed).
    counts_view() = default;
    /// @brief @p size values at @p data. @param data the first @param size how many
    counts_view(const size_t *data, size_t size) : data_(data), size_(size) {}
    /// @brief The values of a vector. @param values one per rank
    counts_view(const std::vector<size_t> &values) : data_(values.data()), size_(values.size()) {}
    /// @brief The values of an array. @param values one per rank
    template <size_t N>
    counts_view(const std::array<size_t, N> &values) : data_(values.data()), size_(N)
    {}
    /// @brief A braced list, valid until the end of the call's full expression.
    /// @param values one per rank
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
// The list's array lives until the end of the caller's full expression, as documented.
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
    counts_view(std::initializer_list<size_t> values) : data_(values.begin()), size_(values.size())
    {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

    /// @brief How many values. @return the count
    [[nodiscard]] size_t size() const noexcept { return size_; }
    /// @brief Whether there are none. @return true for an empty view
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    /// @brief Value @p i (unchecked). @param i in [0, size()) @return the value
    [[nodiscard]] size_t operator[](size_t i) const noexcept { return data_[i]; }
    /// @brief The values as a vector. @return a copy
    [[nodiscard]] std::vector<size_t> copy() const
    {
        return std::vector<size_t>(data_, data_ + size_);
    }

private:
    const size_t *data_ = nullptr;
    size_t size_        = 0;
};

/**
 * @brief Algorithm ids.
 *
 * Everything else about an algorithm (its name, the collectives it implements and how) is its
 * row of detail::algorithm_table in coll/algorithms.hpp: a new algorithm is an id here and a
 * row there.
 */
enum class algorithm : uint8_t {
    automatic,  ///< not an algorithm: chosen per call by message and rank count
    recursive_doubling,  ///< log2 p rounds of exchanges with rank r xor 2^k
    ring,  ///< p - 1 (or 2 (p - 1)) rounds between ring neighbours
    binomial,  ///< a binomial tree rooted at the root
    scatter_allgather,  ///< van de Geijn: binomial scatter, then ring allgather
    reduce_scatter_gather,  ///< ring reduce-scatter, then every block to the root
    bruck,  ///< Bruck: ceil(log2 p) rounds for any p, rotated scratch
    pairwise,  ///< round i: send to r + i, receive from r - i
    dissemination,  ///< round k: signal r + 2^k, wait for r - 2^k
    knomial,  ///< recursive k-ing (UCC's knomial), radix config::knomial_radix
    rabenseifner,  ///< recursive-halving reduce-scatter + recursive-doubling allgather
    linear  ///< one round: the root with every rank, or every rank with every other
};

}  // namespace ucp_cpp::coll
