/**
 * @file tag.hpp
 * @brief The tag-space convention shared by applications and ucp_cpp's own layers.
 *
 * UCP tags are 64 bits.  The top 8 bits name a tag space; applications own space 0 (tags
 * below 2^56) and pass plain tags.  Libraries built on ucp_cpp (collectives: space 1) put their
 * space id in the top bits, so a user receive with a full mask can never match their traffic,
 * and their receives (full mask over the space bits) never match user messages.  A user receive
 * with a wildcard mask should keep the space bits in the mask: use tag_space::user_mask(m).
 */
#pragma once

#include <ucp/api/ucp_def.h>

#include <cstdint>

namespace ucp_cpp::tag_space {

inline constexpr unsigned space_shift      = 56;
inline constexpr ucp_tag_t space_bits      = ucp_tag_t(0xff) << space_shift;
inline constexpr ucp_tag_t value_bits      = ~space_bits;
inline constexpr ucp_tag_t full_mask       = ~ucp_tag_t(0);

/// Registered spaces.  New layers take the next free number.
inline constexpr uint8_t user        = 0;
inline constexpr uint8_t collectives = 1;

/// A tag in @p space with the low 56 bits @p value (higher bits of value are dropped).
constexpr ucp_tag_t make(uint8_t space, uint64_t value)
{
    return (ucp_tag_t(space) << space_shift) | (value & value_bits);
}

constexpr uint8_t space_of(ucp_tag_t tag) { return uint8_t(tag >> space_shift); }
constexpr uint64_t value_of(ucp_tag_t tag) { return tag & value_bits; }

/// A receive mask that wildcards value bits as @p mask says but always matches the space.
constexpr ucp_tag_t user_mask(ucp_tag_t mask) { return mask | space_bits; }

}  // namespace ucp_cpp::tag_space
