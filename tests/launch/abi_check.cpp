// Compile-only: the PMIx and PMI2 ABIs that ucp_cpp/coll/launch declares for itself (so that
// applications need neither pmix.h nor slurm/pmi2.h) are the ones the installed headers declare.
// Built where libpmix-dev / libpmi2-0-dev are installed (CI installs both); nothing links it.
#include <ucp_cpp/coll/launch/pmi2.hpp>
#include <ucp_cpp/coll/launch/pmix.hpp>

#include <pmix.h>
#include <slurm/pmi2.h>

#include <cstddef>
#include <type_traits>

namespace abi  = ucp_cpp::coll::launch::pmix_abi;
namespace abi2 = ucp_cpp::coll::launch::pmi2_abi;

static_assert(abi::success == PMIX_SUCCESS);
static_assert(abi::type_bool == PMIX_BOOL);
static_assert(abi::type_uint32 == PMIX_UINT32);
static_assert(abi::type_byte_object == PMIX_BYTE_OBJECT);
static_assert(abi::scope_global == PMIX_GLOBAL);
static_assert(abi::rank_wildcard == PMIX_RANK_WILDCARD);
static_assert(abi::max_nslen == PMIX_MAX_NSLEN && abi::max_keylen == PMIX_MAX_KEYLEN);

static_assert(sizeof(abi::proc) == sizeof(pmix_proc_t));
static_assert(offsetof(abi::proc, rank) == offsetof(pmix_proc_t, rank));
static_assert(sizeof(abi::byte_object) == sizeof(pmix_byte_object_t));
static_assert(offsetof(abi::byte_object, size) == offsetof(pmix_byte_object_t, size));
static_assert(sizeof(abi::value) == sizeof(pmix_value_t));
static_assert(offsetof(abi::value, data) == offsetof(pmix_value_t, data));
static_assert(sizeof(abi::value::data) == sizeof(pmix_value_t::data));
static_assert(sizeof(abi::info) == sizeof(pmix_info_t));
static_assert(offsetof(abi::info, flags) == offsetof(pmix_info_t, flags));
static_assert(offsetof(abi::info, value) == offsetof(pmix_info_t, value));
static_assert(std::is_same_v<decltype(pmix_scope_t{}), uint8_t>);
static_assert(std::is_same_v<decltype(pmix_data_type_t{}), uint16_t>);
static_assert(std::is_same_v<decltype(pmix_rank_t{}), uint32_t>);

// The function types, as the headers declare them
static_assert(std::is_convertible_v<decltype(&PMIx_Commit), abi::commit_fn>);
static_assert(std::is_convertible_v<decltype(&PMIx_Value_destruct), void (*)(pmix_value_t *)>);
static_assert(std::is_convertible_v<decltype(&PMIx_Init),
                                    pmix_status_t (*)(pmix_proc_t *, pmix_info_t *, size_t)>);
static_assert(
    std::is_convertible_v<decltype(&PMIx_Fence), pmix_status_t (*)(const pmix_proc_t *, size_t,
                                                                   const pmix_info_t *, size_t)>);
static_assert(
    std::is_convertible_v<decltype(&PMIx_Get),
                          pmix_status_t (*)(const pmix_proc_t *, const char *, const pmix_info_t *,
                                            size_t, pmix_value_t **)>);
static_assert(std::is_convertible_v<decltype(&PMIx_Put),
                                    pmix_status_t (*)(pmix_scope_t, const char *, pmix_value_t *)>);

static_assert(abi2::success == PMI2_SUCCESS);
static_assert(abi2::max_key == PMI2_MAX_KEYLEN && abi2::max_value == PMI2_MAX_VALLEN);
static_assert(std::is_convertible_v<decltype(&PMI2_Init), abi2::init_fn>);
static_assert(std::is_convertible_v<decltype(&PMI2_Finalize), abi2::finalize_fn>);
static_assert(std::is_convertible_v<decltype(&PMI2_Job_GetId), abi2::job_id_fn>);
static_assert(std::is_convertible_v<decltype(&PMI2_KVS_Put), abi2::put_fn>);
static_assert(std::is_convertible_v<decltype(&PMI2_KVS_Fence), abi2::fence_fn>);
static_assert(std::is_convertible_v<decltype(&PMI2_KVS_Get), abi2::get_fn>);
