// host label: gdr_perftest end to end (2-3 local ranks over UCX tcp): output format, CSV/JSON,
// the byte accounting, the verification and failure paths, flag errors, launch from the
// environment (mpirun style).  PERFTEST_TEST_TLS overrides the transports (default tcp,self:
// the host transport that detects dead peers).
#include "perftest_run.hpp"

#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <future>
#include "../common/loopback_port.hpp"

namespace perftest_test {
namespace {

using nlohmann::json;
using strings = std::vector<std::string>;

std::string tls()
{
    const char *value = std::getenv("PERFTEST_TEST_TLS");
    return value != nullptr ? value : "tcp,self";
}

/// gdr_perftest -x TLS ARGS...
outcome perftest(strings args, const std::map<std::string, std::string> &env = {})
{
    args.insert(args.begin(), {"-x", tls()});
    return run_tool(args, env);
}

bool contains(const std::string &text, const std::string &part)
{
    return text.find(part) != std::string::npos;
}

strings header_of(const std::string &out)
{
    std::istringstream lines(out);
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        strings row;
        std::string w;
        while (words >> w)
            row.push_back(w);
        if (!row.empty() && row[0] == "size")
            return row;
    }
    return {};
}

TEST(Perftest, LatencyTableStatesUnitsAndHasOneRowPerSize)
{
    auto r = perftest({"-t", "tag_lat", "-b", "8", "-e", "1K", "-f", "4", "-n", "50", "-w", "5"});
    ASSERT_EQ(r.status, 0) << r.describe();
    EXPECT_TRUE(contains(r.out, "times in us")) << r.out;
    EXPECT_TRUE(contains(r.out, "1 GB = 10^9 B")) << r.out;
    EXPECT_TRUE(contains(r.out, "half round trip")) << r.out;
    EXPECT_EQ(header_of(r.out), (strings{"size", "iters", "avg_us", "p50_us", "p90_us", "p99_us",
                                         "bytes_verified", "check"}));
    auto rows = table_rows(r.out);
    ASSERT_EQ(rows.size(), 4u) << r.out;  // 8, 32, 128, 512 (2048 > 1K)
    const size_t sizes[] = {8, 32, 128, 512};
    for (size_t i = 0; i < rows.size(); ++i) {
        ASSERT_EQ(rows[i].size(), 8u) << r.out;
        EXPECT_EQ(std::stoul(rows[i][0]), sizes[i]);
        EXPECT_EQ(rows[i][1], "50");
        EXPECT_LE(std::stod(rows[i][3]), std::stod(rows[i][4]));  // p50 <= p90 <= p99
        EXPECT_LE(std::stod(rows[i][4]), std::stod(rows[i][5]));
        EXPECT_EQ(std::stoull(rows[i][6]), 2 * 50 * sizes[i])
            << "ping and pong, every timed iteration";
        EXPECT_EQ(rows[i][7], "ok");
    }
}

TEST(Perftest, BandwidthTableHasBandwidthAndMessageRate)
{
    auto r = perftest({"-t", "tag_bw", "-s", "1,4K,64K", "-n", "40", "-w", "4", "-O", "8"});
    ASSERT_EQ(r.status, 0) << r.describe();
    EXPECT_EQ(header_of(r.out), (strings{"size", "iters", "avg_us", "bw_GBps", "msg_per_s",
                                         "bytes_verified", "check"}));
    auto rows = table_rows(r.out);
    ASSERT_EQ(rows.size(), 3u) << r.out;
    const size_t sizes[] = {1, 4096, 65536};
    for (size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(std::stoul(rows[i][0]), sizes[i]);
        EXPECT_GT(std::stod(rows[i][4]), 0);
        EXPECT_EQ(std::stoull(rows[i][5]), 40 * sizes[i]);
        EXPECT_EQ(rows[i][6], "ok");
    }
}

// --bw-timing sender: rank 0 times from its first send until its endpoint is flushed, as
// ucx_perftest times tag_bw (perf/compare's wrapper section compares the two); the bytes are still
// counted where they arrive.
TEST(Perftest, SenderTimedBandwidthSaysSoAndCountsDeliveredBytes)
{
    scratch tmp;
    auto r = perftest({"-t", "tag_bw,am_bw", "-s", "1,64K", "-n", "40", "-w", "4", "-O", "8",
                       "--bw-timing", "sender", "--json", tmp.path("r.json")});
    ASSERT_EQ(r.status, 0) << r.describe();
    EXPECT_TRUE(contains(r.out, "at rank 0 (the sender) from its first send until the flush "
                                "completed"))
        << r.out;
    EXPECT_FALSE(contains(r.out, "at rank 1 (the receiver)")) << r.out;
    json doc = load_json(tmp.path("r.json"));
    EXPECT_EQ(doc["bw_timing"], "sender");
    ASSERT_EQ(doc["results"].size(), 4u);
    for (const json &row : doc["results"]) {
        SCOPED_TRACE(row.dump());
        EXPECT_EQ(row["bytes_verified"].get<uint64_t>(), 40 * row["size"].get<uint64_t>());
        EXPECT_GT(row["bw_GBps"].get<double>(), 0);
        EXPECT_EQ(row["check"], "ok");
    }
    auto bad = run_tool({"-t", "tag_bw", "--bw-timing", "both"});
    EXPECT_EQ(bad.status, 2) << bad.describe();
    EXPECT_TRUE(contains(bad.err, "--bw-timing: 'both' is not receiver or sender")) << bad.err;
}

const strings fields = {"test",       "size",           "count",          "dtype",    "iters",
                        "warmup",     "ranks",          "memory",         "avg_us",   "p50_us",
                        "p90_us",     "p99_us",         "bw_GBps",        "msg_rate", "algbw_GBps",
                        "busbw_GBps", "bytes_expected", "bytes_verified", "data_ok",  "check",
                        "library"};  // library: the collectives' (ucp_cpp or nccl), empty for p2p

TEST(Perftest, JsonAndCsvOfEveryPointToPointTestCountTheBytes)
{
    scratch tmp;
    const strings tests = {"tag_lat", "tag_bw", "put_lat", "put_bw", "get_bw", "am_lat", "am_bw"};
    auto r = perftest({"-t", "tag_lat,tag_bw,put_lat,put_bw,get_bw,am_lat,am_bw", "-s", "64,8K",
                       "-n", "30", "-w", "3", "-c", "1", "-q", "--json", tmp.path("r.json"),
                       "--csv", tmp.path("r.csv")});
    ASSERT_EQ(r.status, 0) << r.describe();
    EXPECT_TRUE(table_rows(r.out).empty()) << "-q: no table\n" << r.out;

    json doc = load_json(tmp.path("r.json"));
    EXPECT_EQ(doc["tool"], "gdr_perftest");
    EXPECT_EQ(doc["units"]["time"], "us");
    EXPECT_TRUE(contains(doc["units"]["bandwidth"].get<std::string>(), "1e9"));
    EXPECT_EQ(doc["ranks"], 2);
    EXPECT_EQ(doc["passed"], true);
    ASSERT_EQ(doc["results"].size(), 2 * tests.size());
    for (size_t i = 0; i < doc["results"].size(); ++i) {
        const json &row = doc["results"][i];
        for (const auto &f : fields)
            EXPECT_TRUE(row.contains(f)) << f;
        const std::string test = tests[i / 2];
        const uint64_t size    = i % 2 == 0 ? 64 : 8192;
        const bool lat         = contains(test, "_lat");
        SCOPED_TRACE(test + " " + std::to_string(size));
        EXPECT_EQ(row["test"], test);
        EXPECT_EQ(row["size"], size);
        EXPECT_EQ(row["iters"], 30);
        EXPECT_EQ(row["bytes_expected"].get<uint64_t>(), (lat ? 2 : 1) * 30 * size);
        EXPECT_EQ(row["bytes_verified"].get<uint64_t>(), (lat ? 2 : 1) * 30 * size);
        EXPECT_EQ(row["data_ok"], true);
        EXPECT_EQ(row["check"], "ok");
        EXPECT_TRUE(row["avg_us"].is_number());
        EXPECT_EQ(row["p99_us"].is_number(), lat);
        EXPECT_EQ(row["bw_GBps"].is_number(), !lat);
        EXPECT_EQ(row["msg_rate"].is_number(), !lat);
        EXPECT_TRUE(row["busbw_GBps"].is_null());
        EXPECT_EQ(row["library"], "");
    }

    std::istringstream csv(slurp(tmp.path("r.csv")));
    std::string line;
    ASSERT_TRUE(std::getline(csv, line));
    std::string expected_header;
    for (const auto &f : fields)
        expected_header += (expected_header.empty() ? "" : ",") + f;
    EXPECT_EQ(line, expected_header);
    size_t n = 0;
    while (std::getline(csv, line)) {
        strings cells;
        std::stringstream in(line);
        std::string cell;
        while (std::getline(in, cell, ','))
            cells.push_back(cell);
        if (!line.empty() && line.back() == ',')
            cells.push_back("");
        ASSERT_EQ(cells.size(), fields.size()) << line;
        EXPECT_EQ(cells[17], std::to_string(doc["results"][n]["bytes_verified"].get<uint64_t>()));
        ++n;
    }
    EXPECT_EQ(n, 2 * tests.size());
}

TEST(Perftest, CollectivesUseNcclTestsBusBandwidthFactorsAndCountResultBytes)
{
    scratch tmp;
    auto r = perftest(
        {"-N", "3", "-t", "allreduce,allgather,bcast,reduce,reduce_scatter,alltoall,barrier", "-b",
         "96", "-e", "6K", "-f", "8", "-n", "10", "-w", "2", "--json", tmp.path("c.json")});
    ASSERT_EQ(r.status, 0) << r.describe();
    EXPECT_EQ(header_of(r.out),
              (strings{"size", "count", "type", "iters", "time_us", "p50_us", "p90_us", "p99_us",
                       "algbw_GBps", "busbw_GBps", "bytes_verified", "check"}));
    json doc = load_json(tmp.path("c.json"));
    EXPECT_EQ(doc["ranks"], 3);
    EXPECT_EQ(doc["passed"], true);
    const double p                             = 3;
    const std::map<std::string, double> factor = {{"allreduce", 2 * (p - 1) / p},
                                                  {"allgather", (p - 1) / p},
                                                  {"reduce_scatter", (p - 1) / p},
                                                  {"alltoall", (p - 1) / p},
                                                  {"bcast", 1},
                                                  {"reduce", 1}};
    // result bytes of all ranks per checked call: every rank holds `size` except reduce (the
    // root only) and reduce_scatter (size / p each)
    const std::map<std::string, double> result_share = {{"allreduce", 3}, {"allgather", 3},
                                                        {"bcast", 3},     {"alltoall", 3},
                                                        {"reduce", 1},    {"reduce_scatter", 1}};
    std::map<std::string, int> rows_of;
    for (const json &row : doc["results"]) {
        const std::string test = row["test"];
        SCOPED_TRACE(test + " " + row["size"].dump());
        ++rows_of[test];
        EXPECT_EQ(row["library"], "ucp_cpp");
        EXPECT_EQ(row["check"], "ok");
        EXPECT_GT(row["avg_us"].get<double>(), 0);
        if (test == "barrier") {
            EXPECT_TRUE(row["busbw_GBps"].is_null());
            EXPECT_EQ(row["bytes_expected"], 0);
            continue;
        }
        const double size = row["size"].get<double>(), avg_us = row["avg_us"].get<double>();
        const double algbw = row["algbw_GBps"].get<double>(),
                     busbw = row["busbw_GBps"].get<double>();
        EXPECT_NEAR(algbw, size / (avg_us * 1e-6) / 1e9, algbw * 1e-4);
        EXPECT_NEAR(busbw, algbw * factor.at(test), busbw * 1e-4);
        EXPECT_EQ(row["bytes_expected"].get<double>(), size * result_share.at(test));
        EXPECT_EQ(row["bytes_verified"], row["bytes_expected"]);
        EXPECT_EQ(row["count"].get<double>(),
                  test == "allreduce" || test == "bcast" || test == "reduce" ? size / 4
                                                                             : size / 4 / p);
    }
    EXPECT_EQ(rows_of, (std::map<std::string, int>{{"allreduce", 3},
                                                   {"allgather", 3},
                                                   {"bcast", 3},
                                                   {"reduce", 3},
                                                   {"reduce_scatter", 3},
                                                   {"alltoall", 3},
                                                   {"barrier", 1}}));
}

TEST(Perftest, CorruptedDataFailsTheRun)
{
    for (const std::string test : {"tag_lat", "tag_bw", "put_bw", "get_bw", "am_bw", "allreduce"}) {
        SCOPED_TRACE(test);
        scratch tmp;
        auto r = perftest({"-t", test, "-s", "256", "-n", "20", "-w", "2", "--inject", "corrupt",
                           "--json", tmp.path("r.json")});
        EXPECT_EQ(r.status, 3) << r.describe();
        EXPECT_TRUE(contains(r.err, "FAILED verification: " + test)) << r.err;
        EXPECT_TRUE(contains(r.out, "WRONG")) << r.out;
        json doc = load_json(tmp.path("r.json"));
        EXPECT_EQ(doc["passed"], false);
        EXPECT_EQ(doc["results"][0]["data_ok"], false);
        EXPECT_EQ(doc["results"][0]["check"], "FAILED");
    }
}

// -d bfloat16, the type of the GPU collective runs (those need a GPU: label gpu, tests/perf/CMakeLists.txt),
// on host buffers: every result checked, and a wrong one names the rank and the element.
TEST(Perftest, Bfloat16CollectivesAreCheckedAndAWrongResultNamesItsRank)
{
    auto ok = perftest({"-N", "3", "-d", "bfloat16", "-t",
                        "allreduce,allgather,reduce_scatter,bcast", "-s", "96,6K", "-n", "3", "-w",
                        "1", "-c", "1"});
    ASSERT_EQ(ok.status, 0) << ok.describe();
    EXPECT_TRUE(contains(ok.out, " bfloat16 ")) << ok.out;
    auto bad = perftest({"-N", "3", "-d", "bfloat16", "-t", "allreduce", "-s", "96", "-n", "3",
                         "-w", "1", "--inject", "corrupt"});
    EXPECT_EQ(bad.status, 3) << bad.describe();
    // Rank 0's element 0 is off by 100, so is the sum (1 + 2 + 3) on every rank.
    EXPECT_TRUE(contains(bad.err, "rank 2: allreduce of 96 bytes: element 0 is 106, expected 6"))
        << bad.err;
}

TEST(Perftest, ShortMessageFailsTheByteCount)
{
    for (const std::string test : {"tag_bw", "am_bw", "get_bw"}) {
        SCOPED_TRACE(test);
        scratch tmp;
        auto r = perftest({"-t", test, "-s", "100", "-n", "20", "-w", "2", "--inject", "short",
                           "--json", tmp.path("r.json")});
        EXPECT_EQ(r.status, 3) << r.describe();
        EXPECT_TRUE(contains(r.err, "bytes verified 1999, expected 2000")) << r.err;
        json doc = load_json(tmp.path("r.json"));
        EXPECT_EQ(doc["results"][0]["bytes_verified"], 1999);
        EXPECT_EQ(doc["results"][0]["bytes_expected"], 2000);
    }
}

TEST(Perftest, BadFlagsAreClearErrors)
{
    const std::vector<std::pair<strings, std::string>> cases = {
        {{"-t", "foo"}, "unknown test 'foo'"},
        {{"-b", "1X"}, "unknown suffix"},
        {{"-n", "0"}, "-n: '0'"},
        {{"-m", "gpu"}, "'gpu' is not a memory type"},
        {{"-s", "1K", "-b", "8"}, "alternatives"},
        {{"-c", "7"}, "-c: '7'"},
        {{"--nope"}, "unknown option '--nope'"},
        {{"-n"}, "needs a value"},
        {{"-b", "1M", "-e", "1K"}, "larger than"},
        {{"-N", "1", "-t", "tag_lat"}, "need 2 ranks"},
        {{"-t", "allreduce", "-m", "host,cuda"}, "one memory type"},
        {{"--library", "mpi"}, "--library: 'mpi' is not ucp, nccl or both"},
        {{"--library", "nccl", "-t", "allreduce"}, "NCCL's buffers are device memory: -m cuda"},
        {{"--library", "both", "-t", "barrier", "-m", "cuda"}, "barrier is not one of NCCL's"},
        {{"--library", "nccl", "-t", "tag_lat", "-m", "cuda"}, "tag_lat is not one of NCCL's"},
    };
    for (const auto &[args, message] : cases) {
        auto r = run_tool(args);
        EXPECT_EQ(r.status, 2) << r.describe();
        EXPECT_TRUE(contains(r.err, message)) << "expected '" << message << "' in: " << r.err;
        EXPECT_TRUE(contains(r.err, "--help")) << r.err;
    }
    auto help = run_tool({"--help"});
    EXPECT_EQ(help.status, 0);
    EXPECT_TRUE(contains(help.out, "1 GB = 10^9 bytes")) << help.out;
}

TEST(Perftest, DeadRankFailsTheOthersWithoutHanging)
{
    // tcp on bcopy: UCX 1.13.1's tcp zcopy can abort the survivor when the peer dies mid-send
    // (see tests/collectives/test_processes.cpp); the survivors must fail by themselves.
    for (const strings &job : {strings{"-t", "tag_lat"}, strings{"-t", "tag_bw"},
                               strings{"-N", "3", "-t", "allreduce"}}) {
        SCOPED_TRACE(job.back());
        strings args = job;
        args.insert(args.end(), {"-s", "64", "-n", "20000", "-w", "10", "--timeout", "20",
                                 "--inject", "kill:1"});
        auto r = perftest(args, {{"UCX_ZCOPY_THRESH", "inf"}});
        EXPECT_FALSE(r.timed_out) << r.describe();
        EXPECT_NE(r.status, 0) << r.describe();
        EXPECT_TRUE(contains(r.err, "rank 1 was killed by signal 9")) << r.err;
        EXPECT_TRUE(contains(r.err, "rank 0: error:")) << r.err;
        EXPECT_TRUE(contains(r.err, "rank 0 exited with status 1")) << r.err;
        if (job.front() == "-N")
            EXPECT_TRUE(contains(r.err, "rank 2 exited with status 1")) << r.err;
        EXPECT_FALSE(contains(r.err, "killing it")) << "a survivor had to be killed:\n" << r.err;
        EXPECT_TRUE(contains(r.err, "FAILED")) << r.err;
    }
}

using gdr_test::free_loopback_port;

TEST(Perftest, RanksFromTheEnvironmentLikeMpirun)
{
    const std::string port = std::to_string(free_loopback_port());
    const strings args     = {"-x", tls(), "-t", "tag_lat,allreduce", "-s", "64", "-n",
                              "20", "-w",  "2"};
    // rank 1 as OpenMPI starts it, rank 0 torchrun style
    auto rank1 = std::async(std::launch::async, [&] {
        return run_tool(args, {{"RANK", ""},
                               {"WORLD_SIZE", ""},
                               {"OMPI_COMM_WORLD_RANK", "1"},
                               {"OMPI_COMM_WORLD_SIZE", "2"},
                               {"MASTER_ADDR", "127.0.0.1"},
                               {"MASTER_PORT", port}});
    });
    auto rank0 = run_tool(args, {{"RANK", "0"},
                                 {"WORLD_SIZE", "2"},
                                 {"OMPI_COMM_WORLD_RANK", ""},
                                 {"MASTER_ADDR", "127.0.0.1"},
                                 {"MASTER_PORT", port}});
    auto r1    = rank1.get();
    ASSERT_EQ(rank0.status, 0) << rank0.describe();
    ASSERT_EQ(r1.status, 0) << r1.describe();
    EXPECT_TRUE(contains(rank0.out, "2 ranks (environment on")) << rank0.out;
    EXPECT_EQ(table_rows(rank0.out).size(), 2u) << rank0.out;
    EXPECT_TRUE(r1.out.empty()) << "only rank 0 prints:\n" << r1.out;
}

TEST(Perftest, CudaMemoryWithoutAGpuIsAClearError)
{
    if (void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
        cuda != nullptr || (cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) != nullptr) {
        GTEST_SKIP() << "libcuda.so.1 is present: covered by the gpu label";
    }
    auto r = perftest({"-t", "tag_lat", "-m", "cuda", "-s", "8", "-n", "5"});
    EXPECT_EQ(r.status, 1) << r.describe();
    EXPECT_TRUE(contains(r.err, "-m cuda: cannot load libcuda.so.1")) << r.err;
}

}  // namespace
}  // namespace perftest_test
