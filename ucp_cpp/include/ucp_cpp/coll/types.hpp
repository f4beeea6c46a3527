/**
 * @file coll/types.hpp
 * @brief Element types and reduction operations of ucp_cpp::coll.
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
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>

namespace ucp_cpp::coll {

enum class datatype : uint8_t { int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64 };

inline size_t size_of(datatype type)
{
    switch (type) {
    case datatype::int8: case datatype::uint8: return 1;
    case datatype::int16: case datatype::uint16: return 2;
    case datatype::int32: case datatype::uint32: case datatype::float32: return 4;
    default: return 8;
    }
}

inline const char *name_of(datatype type)
{
    static const char *const names[] = {"int8",   "int16",  "int32",  "int64",   "uint8",
                                        "uint16", "uint32", "uint64", "float32", "float64"};
    return names[static_cast<int>(type)];
}

/// The datatype of a C++ element type (fixed-width integers, float, double).
template <class T>
constexpr datatype datatype_of()
{
    using U = std::remove_cv_t<T>;
    if constexpr (std::is_same_v<U, float>) return datatype::float32;
    else if constexpr (std::is_same_v<U, double>) return datatype::float64;
    else {
        static_assert(std::is_integral_v<U> && !std::is_same_v<U, bool> &&
                          (sizeof(U) == 1 || sizeof(U) == 2 || sizeof(U) == 4 || sizeof(U) == 8),
                      "ucp_cpp::coll supports int8..int64, uint8..uint64, float and double");
        constexpr int log_size = sizeof(U) == 1 ? 0 : sizeof(U) == 2 ? 1 : sizeof(U) == 4 ? 2 : 3;
        return static_cast<datatype>((std::is_signed_v<U> ? 0 : 4) + log_size);
    }
}

enum class op_kind : uint8_t { sum, prod, min, max, custom };

/// A reduction operation: one of the built-ins or a user function for one element type.
class reduction {
public:
    /// inout[i] = op(inout[i], in[i]) for i < count, on elements of the op's datatype.
    using vector_function = std::function<void(const void *in, void *inout, size_t count)>;

    explicit reduction(op_kind kind) : kind_(kind) {}

    /// A user reduction on elements of type T: @p combine(T accumulated, T incoming) -> T.
    /// It must be associative and commutative (see the file comment).
    template <class T, class F>
    static reduction custom(F combine)
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

    op_kind kind() const noexcept { return kind_; }

    /// Throws ucx_error(UCS_ERR_INVALID_PARAM) if a custom op is used with another element type.
    void check(datatype type) const
    {
        if (kind_ == op_kind::custom && type != type_) {
            throw ucx_error(UCS_ERR_INVALID_PARAM,
                            std::string("coll: custom reduction defined for ") + name_of(type_) +
                                " used on " + name_of(type));
        }
    }

    /// inout = op(inout, in) over @p count elements of @p type.
    void apply(datatype type, const void *in, void *inout, size_t count) const
    {
        switch (type) {
        case datatype::int8: return apply_typed<int8_t>(in, inout, count);
        case datatype::int16: return apply_typed<int16_t>(in, inout, count);
        case datatype::int32: return apply_typed<int32_t>(in, inout, count);
        case datatype::int64: return apply_typed<int64_t>(in, inout, count);
        case datatype::uint8: return apply_typed<uint8_t>(in, inout, count);
        case datatype::uint16: return apply_typed<uint16_t>(in, inout, count);
        case datatype::uint32: return apply_typed<uint32_t>(in, inout, count);
        case datatype::uint64: return apply_typed<uint64_t>(in, inout, count);
        case datatype::float32: return apply_typed<float>(in, inout, count);
        case datatype::float64: return apply_typed<double>(in, inout, count);
        }
    }

private:
    template <class T>
    void apply_typed(const void *in, void *inout, size_t count) const
    {
        const T *src = static_cast<const T *>(in);
        T *dst       = static_cast<T *>(inout);
        switch (kind_) {
        // Integer sum/prod wrap modulo 2^n (computed unsigned: no signed-overflow UB).
        case op_kind::sum:
            for (size_t i = 0; i < count; ++i) dst[i] = wrap_add(dst[i], src[i]);
            return;
        case op_kind::prod:
            for (size_t i = 0; i < count; ++i) dst[i] = wrap_mul(dst[i], src[i]);
            return;
        case op_kind::min:
            for (size_t i = 0; i < count; ++i) dst[i] = std::min(dst[i], src[i]);
            return;
        case op_kind::max:
            for (size_t i = 0; i < count; ++i) dst[i] = std::max(dst[i], src[i]);
            return;
        case op_kind::custom: function_(in, inout, count); return;
        }
    }

    template <class T>
    static T wrap_add(T a, T b)
    {
        if constexpr (std::is_integral_v<T>) {
            using U = std::make_unsigned_t<T>;
            return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
        } else {
            return a + b;
        }
    }
    template <class T>
    static T wrap_mul(T a, T b)
    {
        if constexpr (std::is_integral_v<T>) {
            // uint16 * uint16 promotes to int and may overflow it: multiply in 64 bits.
            using U = std::make_unsigned_t<T>;
            return static_cast<T>(static_cast<U>(uint64_t(static_cast<U>(a)) * uint64_t(static_cast<U>(b))));
        } else {
            return a * b;
        }
    }

    op_kind kind_;
    datatype type_ = datatype::int8;
    vector_function function_;
};

inline const reduction sum{op_kind::sum};
inline const reduction prod{op_kind::prod};
inline const reduction min{op_kind::min};
inline const reduction max{op_kind::max};

}  // namespace ucp_cpp::coll
