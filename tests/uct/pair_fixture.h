// Two interfaces of the transport under test in one process, connected to each other.
#pragma once

#include "uct_ops.h"

#include <memory>

namespace uctest {

class PairTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        UCTEST_REQUIRE_TARGET(res_);
        a_    = std::make_unique<Entity>(res_, default_iface_overrides(), md_overrides());
        b_    = std::make_unique<Entity>(res_, default_iface_overrides(), md_overrides());
        pair_ = connect_pair(*a_, *b_);
    }
    void TearDown() override
    {
        b_.reset();
        a_.reset();
    }
    /// Overridden by fixtures that need a particular md setting.
    virtual std::vector<ConfigOverride> md_overrides() const { return {}; }

    ucs_status_t flush(uct_ep_h ep, unsigned flags = 0)
    {
        return flush_and_wait(ep == pair_.ab ? *a_ : *b_, ep, {a_.get(), b_.get()}, flags);
    }
    ::testing::AssertionResult wait(const std::function<bool()> &done, const std::string &what,
                                    Seconds deadline = kDefaultDeadline)
    {
        return progress_until(done, {a_.get(), b_.get()}, what, deadline);
    }

    TlResource res_;
    std::unique_ptr<Entity> a_, b_;
    EpPair pair_;
};

#define UCTEST_REQUIRE_CAP(flag) UCTEST_SKIP_UNLESS_CAP(*a_, flag)

}  // namespace uctest
