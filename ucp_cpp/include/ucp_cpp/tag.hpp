/**
 * @file tag.hpp
 * @brief The tag-space convention shared by applications and ucp_cpp's own layers.
 *
 * UCP tags are 64 bits.  The top 8 bits name a tag space; applications own space 0 (tags
 * below 2^56) and pass plain tags.  Libraries built on ucp_cpp (collectives: space 1) put their
 * space id in the top bits, so a user receive with a full mask can never match their traffic,
 * and their receives (full mask over the space bits) never match user messages.  A user receive
 * with a wildcard mask should keep the space bits in the mask: use tag_space::user_mask(m).
 *
 * Layer: bottom (constants and constexpr functions only; usable from any thread).
 */
#pragma once

#include <ucp/api/ucp_def.h>

#include <cstdint>

/// @brief The tag-space convention: which bits of a UCP tag say who owns the message.
namespace ucp_cpp::tag_space {

/// Position of the space id in a tag: the top 8 bits.
inline constexpr unsigned space_shift = 56;
/// The bits of a tag that hold the space id.
inline constexpr ucp_tag_t space_bits = ucp_tag_t(0xff) << space_shift;
/// The bits of a tag that a space's owner is free to use.
inline constexpr ucp_tag_t value_bits = ~space_bits;
/// A receive mask that matches every bit of the tag.
inline constexpr ucp_tag_t full_mask = ~ucp_tag_t(0);

/// The applications' space (tags below 2^56).
inline constexpr uint8_t user = 0;
/// ucp_cpp's collectives.  New layers take the next free number.
inline constexpr uint8_t collectives = 1;

/**
 * @brief Builds a tag in a space.
 * @param space the space id (tag_space::user, tag_space::collectives, ...).
 * @param value the tag within the space; bits above the low 56 are dropped.
 * @return @p space in the top 8 bits, the low 56 bits of @p value below.
 */
constexpr ucp_tag_t make(uint8_t space, uint64_t value)
{
    return (ucp_tag_t(space) << space_shift) | (value & value_bits);
}

/**
 * @brief The space a tag belongs to.
 * @param tag a tag built by make() (or a plain user tag: space 0).
 * @return the top 8 bits of @p tag.
 */
constexpr uint8_t space_of(ucp_tag_t tag)
{
    return uint8_t(tag >> space_shift);
}

/**
 * @brief The tag without its space.
 * @param tag a tag built by make().
 * @return the low 56 bits of @p tag.
 */
constexpr uint64_t value_of(ucp_tag_t tag)
{
    return tag & value_bits;
}

/**
 * @brief A receive mask that wildcards value bits as @p mask says but always matches the space.
 * @param mask the application's mask over the value bits.
 * @return @p mask with every space bit set.
 */
constexpr ucp_tag_t user_mask(ucp_tag_t mask)
{
    return mask | space_bits;
}

}  // namespace ucp_cpp::tag_space
