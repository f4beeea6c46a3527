// gdr_perftest: collectives of ucp_cpp::coll, timed like perf/coll_bench times MPI's:
// warm-up calls, a barrier, N calls back to back, time per call = loop time / N, max over ranks.
// Sizes follow nccl-tests: allreduce/bcast/reduce: the buffer; allgather: the gathered buffer;
// reduce_scatter: the input of a rank; alltoall: a rank's send buffer (p blocks).
#include "perftest.hpp"

#include <signal.h>

#include <cstdio>

namespace gdr_perftest {

namespace coll = ucp_cpp::coll;

namespace {

using clock_type = std::chrono::steady_clock;

/// Input element k of rank r (small integers: exact sums in every element type).
template <class T> T input(int r, size_t k)
{
    return T((r + 1) + int(k % 5));
}

template <class T> class coll_case {
public:
    /// @p nccl: NCCL runs the call (--library), on the same buffers and sizes
    coll_case(session &s, const std::string &name, size_t size, bool nccl = false)
        : s_(s), name_(name), p_(size_t(s.size)), nccl_(nccl)
    {
        const size_t esz = sizeof(T);
        if (name == "allreduce" || name == "bcast" || name == "reduce") {
            count_ = size / esz;
            bytes_ = count_ * esz;
            send_.resize(count_);
            recv_.resize(count_);
        } else if (name == "allgather") {
            count_ = size / (esz * p_);  // per rank
            bytes_ = count_ * esz * p_;
            send_.resize(count_);
            recv_.resize(count_ * p_);
        } else if (name == "reduce_scatter") {
            count_ = size / (esz * p_);  // the result block
            bytes_ = count_ * esz * p_;
            send_.resize(count_ * p_);
            recv_.resize(count_);
        } else if (name == "alltoall") {
            count_ = size / (esz * p_);  // per peer
            bytes_ = count_ * esz * p_;
            send_.resize(count_ * p_);
            recv_.resize(count_ * p_);
        }
        fill_input();
        if (s.opt.inject == injection::corrupt && s.rank == 0) {  // rank 0's input is off by 100
            if (name == "bcast") {
                if (s.opt.root == 0 && !recv_.empty())
                    recv_[0] = T(recv_[0] + T(100));
            } else if (!send_.empty()) {
                send_[0] = T(send_[0] + T(100));
            }
        }
        if (s.opt.memory_of(s.rank) == mem_kind::cuda) {
            // The collective works on device copies; send_/recv_ stay the host images of the
            // inputs (written once) and of the results (read back by verify()).
            dsend_ = std::make_unique<buffer>(mem_kind::cuda, send_.size() * sizeof(T));
            drecv_ = std::make_unique<buffer>(mem_kind::cuda, recv_.size() * sizeof(T));
            dsend_->write(0, send_.data(), send_.size() * sizeof(T));
            drecv_->write(0, recv_.data(), recv_.size() * sizeof(T));
        }
        opts_.timeout = s.timeout;
    }

    size_t count() const { return count_; }
    size_t bytes() const { return bytes_; }
    bool empty() const { return name_ != "barrier" && count_ == 0; }

    /// Bytes of results this rank holds after one call (what the check looks at).
    size_t result_bytes() const
    {
        if (name_ == "barrier")
            return 0;
        if (name_ == "reduce")
            return s_.rank == s_.opt.root ? bytes_ : 0;
        return recv_.size() * sizeof(T);
    }

    void call()
    {
        const auto &w  = s_.world;
        const int root = s_.opt.root;
        const T *send  = dsend_ ? static_cast<const T *>(dsend_->data()) : send_.data();
        T *recv        = drecv_ ? static_cast<T *>(drecv_->data()) : recv_.data();
        if (nccl_)
            s_.nccl->call(name_, send, recv, count_, sizeof(T), s_.opt.dtype, root);
        else if (name_ == "allreduce")
            w.allreduce(send, recv, count_, coll::sum, opts_);
        else if (name_ == "allgather")
            w.allgather(send, recv, count_, opts_);
        else if (name_ == "reduce_scatter")
            w.reduce_scatter(send, recv, count_, coll::sum, opts_);
        else if (name_ == "alltoall")
            w.alltoall(send, recv, count_, opts_);
        else if (name_ == "bcast")
            w.bcast(recv, count_, root, opts_);
        else if (name_ == "reduce")
            w.reduce(send, recv, count_, coll::sum, root, opts_);
        else
            w.barrier(opts_);
    }

    /// Clears what the call writes (bcast: the non-roots' buffer; the root's holds the input).
    void clear_output()
    {
        if (name_ == "bcast" && s_.rank == s_.opt.root)
            return;
        if (drecv_)
            drecv_->clear(0, recv_.size() * sizeof(T));
        else
            std::fill(recv_.begin(), recv_.end(), T(0));
    }

    /// Bytes of correct results on this rank (device results are read back first).
    size_t verify()
    {
        if (drecv_)
            drecv_->read(0, recv_.data(), recv_.size() * sizeof(T));
        const int p = int(p_), r = s_.rank;
        size_t good = 0;
        auto expect = [&](size_t at, T value) {
            if (recv_[at] == value) {
                good += sizeof(T);
            } else if (!reported_) {
                // Once per size and rank: which rank went wrong, and where, is what a reader
                // of a failed run needs first (the table has only the sum over ranks).
                reported_ = true;
                std::fprintf(stderr,
                             "gdr_perftest: rank %d: %s of %zu bytes: element %zu is %g, "
                             "expected %g\n",
                             r, name_.c_str(), bytes_, at, double(recv_[at]), double(value));
            }
        };
        if (name_ == "allreduce" || (name_ == "reduce" && r == s_.opt.root)) {
            for (size_t k = 0; k < count_; ++k)
                expect(k, sum_of_inputs(k));
        } else if (name_ == "allgather") {
            for (int q = 0; q < p; ++q) {
                for (size_t k = 0; k < count_; ++k)
                    expect(size_t(q) * count_ + k, input<T>(q, k));
            }
        } else if (name_ == "reduce_scatter") {
            for (size_t k = 0; k < count_; ++k)
                expect(k, sum_of_inputs(size_t(r) * count_ + k));
        } else if (name_ == "alltoall") {
            // block q = rank q's block r
            for (int q = 0; q < p; ++q) {
                for (size_t k = 0; k < count_; ++k)
                    expect(size_t(q) * count_ + k, input<T>(q, size_t(r) * count_ + k));
            }
        } else if (name_ == "bcast") {
            for (size_t k = 0; k < count_; ++k)
                expect(k, input<T>(s_.opt.root, k));
        }
        return good;
    }

private:
    T sum_of_inputs(size_t k) const
    {
        T total = 0;
        for (int q = 0; q < int(p_); ++q)
            total = T(total + input<T>(q, k));
        return total;
    }

    void fill_input()
    {
        for (size_t k = 0; k < send_.size(); ++k)
            send_[k] = input<T>(s_.rank, k);
        if (name_ == "bcast" && s_.rank == s_.opt.root) {
            for (size_t k = 0; k < recv_.size(); ++k)
                recv_[k] = input<T>(s_.rank, k);
        }
    }

    session &s_;
    std::string name_;
    size_t p_;
    bool nccl_;
    size_t count_ = 0, bytes_ = 0;
    std::vector<T> send_, recv_;
    std::unique_ptr<buffer> dsend_, drecv_;  // -m cuda: the buffers the collective works on
    bool reported_ = false;  // a wrong element was printed
    coll::call_options opts_;
};

double bus_factor(const std::string &name, double p)
{
    if (name == "allreduce")
        return 2 * (p - 1) / p;
    if (name == "allgather" || name == "reduce_scatter" || name == "alltoall")
        return (p - 1) / p;
    return 1;
}

/// One size of one collective: warm-up, the timed loop, the check, the row (valid on rank 0).
template <class T>
result_row measure(session &s, const test_info &test, coll_case<T> &c, size_t iters, size_t warmup,
                   size_t index)
{
    const std::string name = test.name;
    for (size_t i = 0; i < warmup; ++i)
        c.call();
    s.sync();
    std::vector<double> samples(iters);
    uint64_t good = 0, expected = 0;
    const auto start = clock_type::now();
    for (size_t i = 0; i < iters; ++i) {
        if (s.opt.inject == injection::kill && s.opt.inject_rank == s.rank && index == 0 &&
            i == iters / 2) {
            std::fprintf(stderr, "gdr_perftest: rank %d: --inject kill: killing myself (SIGKILL)\n",
                         s.rank);
            std::fflush(nullptr);
            ::raise(SIGKILL);
        }
        if (s.opt.check)
            c.clear_output();
        const auto t0 = clock_type::now();
        c.call();
        samples[i] = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
        if (s.opt.check) {
            good += c.verify();
            expected += c.result_bytes();
        }
    }
    const double local_us =
        std::chrono::duration<double, std::micro>(clock_type::now() - start).count() /
        double(iters);
    if (!s.opt.check) {  // one more call, outside the timing, with its result checked
        c.clear_output();
        c.call();
        good += c.verify();
        expected += c.result_bytes();
    }
    coll::call_options bounded;
    bounded.timeout = s.sync_timeout;
    s.world.allreduce(samples.data(), samples.size(), coll::max,
                      bounded);  // per call: the slowest rank
    std::sort(samples.begin(), samples.end());

    result_row r;
    r.test   = name;
    r.size   = c.bytes();
    r.count  = c.count();
    r.dtype  = s.opt.dtype;
    r.iters  = iters;
    r.warmup = warmup;
    r.ranks  = s.size;
    r.memory = name_of(s.opt.memory_of(0));
    r.avg_us = s.max_over_ranks(local_us);
    r.p50_us = percentile(samples, 50);
    r.p90_us = percentile(samples, 90);
    r.p99_us = percentile(samples, 99);
    if (name != "barrier" && *r.avg_us > 0) {
        r.algbw_GBps = double(c.bytes()) / (*r.avg_us * 1e-6) / 1e9;
        r.busbw_GBps = *r.algbw_GBps * bus_factor(name, double(s.size));
    }
    r.bytes_verified = s.sum_over_ranks(good);
    r.bytes_expected = s.sum_over_ranks(expected);
    r.data_ok        = r.bytes_verified == r.bytes_expected;
    return r;
}

template <class T>
std::vector<result_row> run_typed(session &s, const test_info &test,
                                  const std::vector<size_t> &sizes, size_t iters, size_t warmup,
                                  table_printer *table)
{
    const std::string name   = test.name;
    std::vector<size_t> plan = name == "barrier" ? std::vector<size_t>{0} : sizes;
    if (table != nullptr)
        table->begin(test, iters, warmup);
    if (s.opt.memory_of(s.rank) == mem_kind::cuda && table != nullptr && !s.opt.quiet) {
        // The yardstick, measured in this run (the other ranks wait for rank 0 in the first
        // warm-up call): what one device-to-device copy of the largest size achieves here.
        const size_t bytes = std::max<size_t>(size_t(64) << 20, plan.back());
        std::printf("# device copy rate (cuMemcpyAsync DtoD, %s, rank %d alone): %.1f GB/s\n",
                    size_text(bytes).c_str(), s.rank, device_copy_GBps(bytes));
        std::fflush(stdout);
    }
    std::vector<result_row> rows;
    const coll_library lib = s.opt.library;
    for (size_t index = 0; index < plan.size(); ++index) {
        // --library both: ucp_cpp::coll, then NCCL, size by size (what drifts in the machine
        // during the run touches both sides alike)
        std::optional<size_t> ours;  // index of this size's ucp_cpp row
        for (bool nccl : {false, true}) {
            if ((nccl && lib == coll_library::ucp) || (!nccl && lib == coll_library::nccl))
                continue;
            coll_case<T> c(s, name, plan[index], nccl);
            if (c.empty()) {
                if (s.rank == 0) {
                    std::fprintf(stderr,
                                 "gdr_perftest: %s: size %zu is less than one %s per rank: "
                                 "skipped\n",
                                 name.c_str(), plan[index], s.opt.dtype.c_str());
                }
                break;
            }
            s.progress_line(name, c.bytes(), index, plan.size());
            rows.push_back(measure(s, test, c, iters, warmup, index));
            rows.back().library = nccl ? "nccl" : "ucp_cpp";
            s.progress_done();
            if (table != nullptr) {
                table->row(test, rows.back());
                if (nccl && ours)
                    table->ratio(rows[*ours], rows.back());
            }
            if (!nccl)
                ours = rows.size() - 1;
        }
    }
    return rows;
}

}  // namespace

std::vector<result_row> run_coll(session &s, const test_info &test,
                                 const std::vector<size_t> &sizes, size_t iters, size_t warmup,
                                 table_printer *table)
{
    if (s.opt.root >= s.size) {
        throw usage_error("-r " + std::to_string(s.opt.root) + ": not a rank of " +
                          std::to_string(s.size));
    }
    if (s.opt.inject == injection::short_message)
        throw usage_error("--inject short: p2p tests only");
    if (s.opt.dtype == "double")
        return run_typed<double>(s, test, sizes, iters, warmup, table);
    if (s.opt.dtype == "int32")
        return run_typed<int32_t>(s, test, sizes, iters, warmup, table);
    if (s.opt.dtype == "int64")
        return run_typed<int64_t>(s, test, sizes, iters, warmup, table);
    if (s.opt.dtype == "bfloat16")
        return run_typed<coll::bfloat16_t>(s, test, sizes, iters, warmup, table);
    return run_typed<float>(s, test, sizes, iters, warmup, table);
}

}  // namespace gdr_perftest
