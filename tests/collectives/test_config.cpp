// coll::config: what a communicator's collectives do, read once from the environment
// (UCP_CPP_COLL_*) or given in code, and the algorithm table every choice goes through: valid
// values select what they say, malformed ones are errors that name the variable, unknown names
// warn once, code overrides the environment, and every row of the table runs every collective
// it claims (real collectives over the test transports, results against references).
#include "coll_vchecks.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace coll_test {
namespace {

namespace detail = ucp_cpp::coll::detail;
using coll::algorithm;
using coll::collective;

using variables = std::map<std::string, std::string>;

/// Unsets every UCP_CPP_COLL_* variable and sets @p values (any names) for its lifetime; puts
/// back what it found.
class scoped_environment {
public:
    explicit scoped_environment(const variables &values = {})
        : saved_(detail::environment_with_prefix("UCP_CPP_COLL_"))
    {
        for (const auto &[name, value] : saved_)
            ::unsetenv(name.c_str());
        for (const auto &[name, value] : values)
            set(name, value);
    }
    ~scoped_environment()
    {
        for (const auto &[name, value] : detail::environment_with_prefix("UCP_CPP_COLL_")) {
            ::unsetenv(name.c_str());
        }
        for (const auto &[name, value] : others_) {
            if (value) {
                ::setenv(name.c_str(), value->c_str(), 1);
            } else {
                ::unsetenv(name.c_str());
            }
        }
        for (const auto &[name, value] : saved_)
            ::setenv(name.c_str(), value.c_str(), 1);
    }
    scoped_environment(const scoped_environment &) = delete;

    void set(const std::string &name, const std::string &value)
    {
        if (name.rfind("UCP_CPP_COLL_", 0) != 0 && others_.count(name) == 0) {
            const char *before = std::getenv(name.c_str());
            others_[name]      = before ? std::optional<std::string>(before) : std::nullopt;
        }
        ::setenv(name.c_str(), value.c_str(), 1);
    }

private:
    std::vector<std::pair<std::string, std::string>> saved_;
    std::map<std::string, std::optional<std::string>> others_;  ///< non-coll names we set
};

/// The message of the UCS_ERR_INVALID_PARAM error @p call throws ("" and a failure if none).
template <class F> std::string invalid_param_message(F &&call)
{
    try {
        call();
    } catch (const ucp_cpp::ucx_error &e) {
        EXPECT_EQ(e.status(), UCS_ERR_INVALID_PARAM) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "accepted";
    return "";
}

::testing::AssertionResult contains(const std::string &text, const std::string &part)
{
    if (text.find(part) != std::string::npos)
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "\"" << text << "\" lacks \"" << part << "\"";
}

std::string accepted_list(collective which)
{
    std::string names = "automatic";
    for (algorithm a : coll::algorithms_of(which))
        names += std::string(", ") + name_of(a);
    return names;
}

TEST(CollConfig, DefaultsWithoutVariables)
{
    scoped_environment clean;
    const coll::config read = coll::config::from_environment(), defaults;
    for (const auto &row : detail::collective_table) {
        EXPECT_EQ(read.algorithm_for(row.id), algorithm::automatic) << row.name;
    }
    EXPECT_EQ(read.knomial_radix(), 4);
    EXPECT_EQ(read.timeout(), std::chrono::nanoseconds::max());
    EXPECT_EQ(read.gpu_staging(), coll::gpu::staging::automatic);
    EXPECT_EQ(read.gpu_segment_bytes(), size_t(1) << 20);
    EXPECT_EQ(read.thresholds().allreduce_ring(8), defaults.thresholds().allreduce_ring(8));
    EXPECT_EQ(read.thresholds().allgather_ring, defaults.thresholds().allgather_ring);
}

TEST(CollConfig, EveryAlgorithmVariableSelectsWhatItsCollectiveAccepts)
{
    EXPECT_EQ(detail::algorithm_variable(collective::reduce_scatter),
              "UCP_CPP_COLL_REDUCE_SCATTER_ALGORITHM");
    scoped_environment env;
    for (const auto &row : detail::collective_table) {
        std::vector<algorithm> accepted = coll::algorithms_of(row.id);
        ASSERT_FALSE(accepted.empty()) << row.name << ": no algorithm implements it";
        accepted.push_back(algorithm::automatic);
        for (algorithm a : accepted) {
            env.set(detail::algorithm_variable(row.id), name_of(a));
            EXPECT_EQ(coll::config::from_environment().algorithm_for(row.id), a)
                << row.name << " " << name_of(a);
        }
    }
}

TEST(CollConfig, TypoInAnAlgorithmNamesTheVariableValueAndAcceptedValues)
{
    scoped_environment env(variables{{"UCP_CPP_COLL_ALLREDUCE_ALGORITHM", "rign"}});
    const std::string message = invalid_param_message(
        [] { (void)coll::config::from_environment(); });
    EXPECT_TRUE(contains(message, "UCP_CPP_COLL_ALLREDUCE_ALGORITHM=rign: unknown algorithm"));
    EXPECT_TRUE(contains(message, "(accepted: automatic, recursive_doubling, ring, knomial, "
                                  "rabenseifner)"));
    // The communicator's constructor reads the environment and fails alike, before any
    // connection; so does the bootstrap, before its rendezvous.
    EXPECT_TRUE(contains(invalid_param_message([] { local_world world(2); }),
                         "UCP_CPP_COLL_ALLREDUCE_ALGORITHM=rign"));
    EXPECT_TRUE(contains(invalid_param_message([] {
                             auto worker = ucp_cpp::worker::create(make_context());
                             (void)coll::communicator::bootstrap(worker, coll::bootstrap_params{});
                         }),
                         "UCP_CPP_COLL_ALLREDUCE_ALGORITHM=rign"));
}

TEST(CollConfig, AlgorithmOfAnotherCollectiveIsRejected)
{
    scoped_environment env;
    for (const auto &row : detail::algorithm_table) {
        for (const auto &target : detail::collective_table) {
            if (coll::implements(row.id, target.id))
                continue;
            const std::string variable = detail::algorithm_variable(target.id);
            env.set(variable, row.name);
            const std::string message = invalid_param_message(
                [] { (void)coll::config::from_environment(); });
            EXPECT_TRUE(contains(message, variable + "=" + row.name + ": " + row.name +
                                              " does not implement " + target.name));
            EXPECT_TRUE(contains(message, "(accepted: " + accepted_list(target.id) + ")"));
            env.set(variable, "automatic");
        }
    }
}

/// A valid value of each variable and what it must set (the test fails for a variable that
/// has none here, so a new variable comes with its case).
struct accepted_case {
    std::string value;
    std::function<bool(const coll::config &)> took_effect;
};

std::map<std::string, accepted_case> accepted_cases()
{
    using namespace std::chrono_literals;
    return {
        {"UCP_CPP_COLL_ALLREDUCE_KNOMIAL_RADIX",
         {"3", [](const coll::config &c) { return c.knomial_radix() == 3; }}},
        {"UCP_CPP_COLL_TIMEOUT",
         {"2.5", [](const coll::config &c) { return c.timeout() == 2500ms; }}},
        {"UCP_CPP_COLL_GPU_STAGING",
         {"off",
          [](const coll::config &c) { return c.gpu_staging() == coll::gpu::staging::never; }}},
        {"UCP_CPP_COLL_GPU_SEGMENT",
         {"64K", [](const coll::config &c) { return c.gpu_segment_bytes() == 65536; }}},
        {"UCP_CPP_COLL_GPU_DIRECT",
         {"yes",
          [](const coll::config &c) { return c.gpu_direct() == coll::gpu::direct::always; }}},
        {"UCP_CPP_COLL_ALLREDUCE_RABENSEIFNER_THRESH",
         {"1M",
          [](const coll::config &c) { return c.thresholds().allreduce_rabenseifner == 1u << 20; }}},
        {"UCP_CPP_COLL_ALLREDUCE_KNOMIAL_RANKS",
         {"8", [](const coll::config &c) { return c.thresholds().allreduce_knomial_ranks == 8; }}},
        {"UCP_CPP_COLL_ALLREDUCE_ALPHA_BETA",
         {"4k", [](const coll::config &c) { return c.thresholds().allreduce_alpha_beta == 4096; }}},
        {"UCP_CPP_COLL_BCAST_SCATTER_ALLGATHER_THRESH",
         {"0", [](const coll::config &c) { return c.thresholds().bcast_scatter_allgather == 0; }}},
        {"UCP_CPP_COLL_REDUCE_SCATTER_GATHER_THRESH",
         {"2G",
          [](const coll::config &c) {
              return c.thresholds().reduce_scatter_gather == size_t(2) << 30;
          }}},
        {"UCP_CPP_COLL_ALLGATHER_RING_THRESH",
         {"100", [](const coll::config &c) { return c.thresholds().allgather_ring == 100; }}},
        {"UCP_CPP_COLL_REDUCE_SCATTER_RING_THRESH",
         {"3K", [](const coll::config &c) { return c.thresholds().reduce_scatter_ring == 3072; }}},
        {"UCP_CPP_COLL_ALLTOALL_PAIRWISE_THRESH",
         {"1", [](const coll::config &c) { return c.thresholds().alltoall_pairwise == 1; }}},
        {"UCP_CPP_COLL_GATHER_LINEAR_THRESH",
         {"0", [](const coll::config &c) { return c.thresholds().gather_linear == 0; }}},
        {"UCP_CPP_COLL_SCATTER_LINEAR_THRESH",
         {"1G",
          [](const coll::config &c) { return c.thresholds().scatter_linear == size_t(1) << 30; }}},
        {"UCP_CPP_COLL_PLAN_CACHE",
         {"0", [](const coll::config &c) { return c.plan_cache() == 0; }}},
        // process-wide: only checked by the config
        {"UCP_CPP_COLL_GPU", {"off", [](const coll::config &) { return true; }}},
        {"UCP_CPP_COLL_NVRTC", {"/opt/nvrtc.so", [](const coll::config &) { return true; }}},
        {"UCP_CPP_COLL_BOOTSTRAP_TIMEOUT", {"5", [](const coll::config &) { return true; }}},
        {"UCP_CPP_COLL_LAUNCHER", {"slurm", [](const coll::config &) { return true; }}},
        {"UCP_CPP_COLL_ROOT_LISTENER_FD", {"3", [](const coll::config &) { return true; }}},
    };
}

TEST(CollConfig, EveryVariableTakesEffect)
{
    const auto cases = accepted_cases();
    for (const auto &variable : detail::config_variables) {
        const auto found = cases.find(variable.name);
        ASSERT_NE(found, cases.end()) << variable.name << " has no case in accepted_cases()";
        scoped_environment env(variables{{variable.name, found->second.value}});
        EXPECT_TRUE(found->second.took_effect(coll::config::from_environment()))
            << variable.name << "=" << found->second.value;
    }
    // The other spellings of the GPU staging switch.
    for (const auto &[value, staging] :
         std::map<std::string, coll::gpu::staging>{{"auto", coll::gpu::staging::automatic},
                                                   {"yes", coll::gpu::staging::always},
                                                   {"1", coll::gpu::staging::always},
                                                   {"no", coll::gpu::staging::never}}) {
        scoped_environment env(variables{{"UCP_CPP_COLL_GPU_STAGING", value}});
        EXPECT_EQ(coll::config::from_environment().gpu_staging(), staging) << value;
    }
    // ... and of the direct allreduce's (default automatic).
    EXPECT_EQ(coll::config().gpu_direct(), coll::gpu::direct::automatic);
    for (const auto &[value, direct] :
         std::map<std::string, coll::gpu::direct>{{"auto", coll::gpu::direct::automatic},
                                                  {"on", coll::gpu::direct::always},
                                                  {"0", coll::gpu::direct::never},
                                                  {"off", coll::gpu::direct::never}}) {
        scoped_environment env(variables{{"UCP_CPP_COLL_GPU_DIRECT", value}});
        EXPECT_EQ(coll::config::from_environment().gpu_direct(), direct) << value;
    }
}

TEST(CollConfig, MalformedValuesNameTheVariable)
{
    std::vector<std::pair<std::string, std::string>> bad = {
        {"UCP_CPP_COLL_ALLREDUCE_KNOMIAL_RADIX", "1"},
        {"UCP_CPP_COLL_ALLREDUCE_KNOMIAL_RADIX", "16385"},
        {"UCP_CPP_COLL_ALLREDUCE_KNOMIAL_RADIX", "4x"},
        {"UCP_CPP_COLL_ALLREDUCE_KNOMIAL_RADIX", "99999999999"},
        {"UCP_CPP_COLL_TIMEOUT", "0"},
        {"UCP_CPP_COLL_TIMEOUT", "-1"},
        {"UCP_CPP_COLL_TIMEOUT", "1e3"},
        {"UCP_CPP_COLL_TIMEOUT", "10s"},
        {"UCP_CPP_COLL_GPU_SEGMENT", "4095"},
        {"UCP_CPP_COLL_GPU_SEGMENT", "1T"},
        {"UCP_CPP_COLL_GPU_SEGMENT", "64KB"},
        {"UCP_CPP_COLL_GPU_STAGING", "Auto"},
        {"UCP_CPP_COLL_GPU_DIRECT", "always"},
        {"UCP_CPP_COLL_GPU", "of"},
        {"UCP_CPP_COLL_ALLGATHER_RING_THRESH", "1.5M"},
        {"UCP_CPP_COLL_ALLGATHER_RING_THRESH", "-1"},
        {"UCP_CPP_COLL_PLAN_CACHE", "4097"},
        {"UCP_CPP_COLL_PLAN_CACHE", "-1"},
        {"UCP_CPP_COLL_ALLREDUCE_KNOMIAL_RANKS", "-1"},
        {"UCP_CPP_COLL_BOOTSTRAP_TIMEOUT", "0"},
        {"UCP_CPP_COLL_LAUNCHER", "srun"},
    };
    // Every variable rejects a value that is nothing (the NVRTC path is any path).
    for (const std::string &name : detail::config_variable_names()) {
        if (name != "UCP_CPP_COLL_NVRTC")
            bad.emplace_back(name, "x!");
    }
    for (const auto &[name, value] : bad) {
        scoped_environment env(variables{{name, value}});
        const std::string message = invalid_param_message(
            [] { (void)coll::config::from_environment(); });
        EXPECT_TRUE(contains(message, name + "=" + value + ": "));
        EXPECT_TRUE(contains(message, "(accepted: "));
    }
}

// Garbage of every shape in every variable: taken, or refused naming the variable;
// nothing else escapes (no std::out_of_range from a number past 2^64, no crash on bytes that
// are no text).
TEST(CollConfig, GarbageIsTakenOrRefusedByName)
{
    const std::vector<std::string> garbage = {"",
                                              " ",
                                              "99999999999999999999999",
                                              "-9223372036854775809",
                                              "0x10",
                                              "1e308",
                                              "nan",
                                              "inf",
                                              "-0",
                                              "\xff\xfe",
                                              "1 2",
                                              "0000000000000000000001"};
    for (const std::string &name : detail::config_variable_names()) {
        for (const std::string &value : garbage) {
            scoped_environment env(variables{{name, value}});
            try {
                (void)coll::config::from_environment();
            } catch (const ucp_cpp::ucx_error &e) {
                EXPECT_EQ(e.status(), UCS_ERR_INVALID_PARAM) << e.what();
                EXPECT_TRUE(contains(e.what(), name + "=")) << e.what();
            } catch (const std::exception &e) {
                ADD_FAILURE() << name << "='" << value << "': " << e.what();
            }
        }
    }
}

TEST(CollConfig, LauncherVariablesAreReadStrictly)
{
    const variables good = {{"RANK", "1"},
                            {"WORLD_SIZE", "4"},
                            {"MASTER_ADDR", "h"},
                            {"MASTER_PORT", "29500"}};
    {
        scoped_environment env(good);
        env.set("UCP_CPP_COLL_BOOTSTRAP_TIMEOUT", "2.5");
        const auto params = coll::bootstrap_params::from_environment();
        EXPECT_EQ(params.rank, 1);
        EXPECT_EQ(params.size, 4);
        EXPECT_EQ(params.root_port, 29500);
        EXPECT_EQ(params.timeout, std::chrono::milliseconds(2500));
    }
    for (const auto &[name, value] :
         std::vector<std::pair<std::string, std::string>>{{"RANK", "one"},
                                                          {"RANK", "4"},
                                                          {"WORLD_SIZE", "0"},
                                                          {"MASTER_PORT", "70000"},
                                                          {"MASTER_PORT", "29500x"},
                                                          {"UCP_CPP_COLL_BOOTSTRAP_TIMEOUT",
                                                           "x"}}) {
        scoped_environment env(good);
        env.set(name, value);
        EXPECT_TRUE(contains(invalid_param_message(
                                 [] { (void)coll::bootstrap_params::from_environment(); }),
                             name + "=" + value + ": not accepted"));
    }
}

/// Every variable a launcher sets, empty (unset as far as coll reads it): a test of the
/// launcher precedence starts from none, also when ctest itself runs inside srun or mpirun.
variables no_launcher()
{
    variables none;
    for (const char *name :
         {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "PMIX_RANK", "PMI_FD", "SLURM_PROCID",
          "SLURM_NTASKS", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_JOB_ID",
          "SLURM_STEP_ID", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}) {
        none[name] = "";
    }
    return none;
}

variables merged(variables base, const variables &more)
{
    for (const auto &[name, value] : more)
        base[name] = value;
    return base;
}

const variables slurm_step = {{"SLURM_PROCID", "2"},
                              {"SLURM_NTASKS", "4"},
                              {"SLURM_STEP_NODELIST", "gpu[07-09],login1"},
                              {"SLURM_JOB_ID", "4711"},
                              {"SLURM_STEP_ID", "3"}};

TEST(CollLauncher, HostlistsExpandLikeSlurm)
{
    namespace slurm = ucp_cpp::coll::launch::slurm;
    using list      = std::vector<std::string>;
    EXPECT_EQ(slurm::expand_hostlist("node1"), list{"node1"});
    // each range is padded to its own lower bound's width, as Slurm does
    EXPECT_EQ(slurm::expand_hostlist("node[01-03,7,09]"),
              (list{"node01", "node02", "node03", "node7", "node09"}));
    EXPECT_EQ(slurm::expand_hostlist("a[8-10]"), (list{"a8", "a9", "a10"}));
    EXPECT_EQ(slurm::expand_hostlist("a[098-100]"), (list{"a098", "a099", "a100"}));
    EXPECT_EQ(slurm::expand_hostlist("r[1-2]-n[0-1]"), (list{"r1-n0", "r1-n1", "r2-n0", "r2-n1"}));
    EXPECT_EQ(slurm::expand_hostlist("n[1-2],login,x[09-10]"),
              (list{"n1", "n2", "login", "x09", "x10"}));
    for (const std::string bad : {"", "n[1-", "n[2-1]", "n]", "n[a]", "a,,b", "n[[1]]", "n[]",
                                  "n[1,]", "n[1-99999999]", "n[1-2]]"}) {
        EXPECT_TRUE(contains(invalid_param_message([&] { (void)slurm::expand_hostlist(bad); }),
                             "hostlist '" + bad + "'"))
            << bad;
    }
}

TEST(CollLauncher, SlurmStepWithoutPmiMeetsAtItsFirstNode)
{
    scoped_environment env(merged(no_launcher(), slurm_step));
    auto params = coll::bootstrap_params::from_environment();
    EXPECT_EQ(params.launcher, "slurm");
    EXPECT_EQ(params.rank, 2);
    EXPECT_EQ(params.size, 4);
    EXPECT_EQ(params.root_host, "gpu07");
    EXPECT_EQ(params.root_port, ucp_cpp::coll::launch::slurm::rendezvous_port(4711, 3));
    EXPECT_EQ(params.store, nullptr);
    // another step of the job meets elsewhere; MASTER_ADDR/MASTER_PORT override both
    env.set("SLURM_STEP_ID", "4");
    EXPECT_NE(coll::bootstrap_params::from_environment().root_port, params.root_port);
    env.set("MASTER_ADDR", "10.0.0.1");
    env.set("MASTER_PORT", "29999");
    params = coll::bootstrap_params::from_environment();
    EXPECT_EQ(params.root_host, "10.0.0.1");
    EXPECT_EQ(params.root_port, 29999);
}

TEST(CollLauncher, PrecedenceIsExplicitThenPmixPmi2SlurmMpirun)
{
    scoped_environment env(no_launcher());
    EXPECT_TRUE(coll::bootstrap_params::launchers_in_environment().empty());
    EXPECT_TRUE(
        contains(invalid_param_message([] { (void)coll::bootstrap_params::from_environment(); }),
                 "no launcher in the environment"));
    for (const auto &[name, value] : slurm_step)
        env.set(name, value);
    env.set("OMPI_COMM_WORLD_RANK", "1");
    env.set("OMPI_COMM_WORLD_SIZE", "2");
    env.set("PMI_FD", "5");
    env.set("PMIX_RANK", "2");
    env.set("RANK", "3");
    env.set("WORLD_SIZE", "8");
    EXPECT_EQ(coll::bootstrap_params::launchers_in_environment(),
              (std::vector<std::string>{"environment", "pmix", "pmi2", "slurm", "mpirun"}));
    env.set("MASTER_ADDR", "h");
    env.set("MASTER_PORT", "29500");
    auto params = coll::bootstrap_params::from_environment();
    EXPECT_EQ(params.launcher, "environment");
    EXPECT_EQ(params.rank, 3);
    EXPECT_EQ(params.size, 8);
    // a named launcher is taken as it is, whatever else is set
    env.set("UCP_CPP_COLL_LAUNCHER", "mpirun");
    params = coll::bootstrap_params::from_environment();
    EXPECT_EQ(params.launcher, "mpirun");
    EXPECT_EQ(params.rank, 1);
    EXPECT_EQ(params.size, 2);
    env.set("UCP_CPP_COLL_LAUNCHER", "slurm");
    EXPECT_EQ(coll::bootstrap_params::from_environment().rank, 2);
    env.set("UCP_CPP_COLL_LAUNCHER", "srun");
    EXPECT_TRUE(
        contains(invalid_param_message([] { (void)coll::bootstrap_params::from_environment(); }),
                 "UCP_CPP_COLL_LAUNCHER=srun: unknown launcher (accepted: auto, "));
}

TEST(CollLauncher, MissingOrMalformedVariablesNameTheLauncher)
{
    scoped_environment env(merged(no_launcher(), slurm_step));
    env.set("SLURM_STEP_NODELIST", "");
    EXPECT_TRUE(
        contains(invalid_param_message([] { (void)coll::bootstrap_params::from_environment(); }),
                 "launcher slurm needs SLURM_JOB_NODELIST"));
    env.set("SLURM_STEP_NODELIST", "gpu[1-");
    EXPECT_TRUE(
        contains(invalid_param_message([] { (void)coll::bootstrap_params::from_environment(); }),
                 "hostlist 'gpu[1-': unbalanced '['"));
    env.set("SLURM_STEP_NODELIST", "gpu1");
    env.set("SLURM_PROCID", "4");
    EXPECT_TRUE(
        contains(invalid_param_message([] { (void)coll::bootstrap_params::from_environment(); }),
                 "SLURM_PROCID=4: not accepted"));
    scoped_environment mpirun(
        merged(no_launcher(), {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}));
    EXPECT_TRUE(
        contains(invalid_param_message([] { (void)coll::bootstrap_params::from_environment(); }),
                 "launcher mpirun needs MASTER_ADDR"));
}

TEST(CollConfig, UnknownVariableWarnsOnceNamingTheNearest)
{
    scoped_environment env(variables{{"UCP_CPP_COLL_ALLREDUCE_ALGORITM", "ring"},
                                     {"UCP_CPP_COLL_ENTIRELY_DIFFERENT_KNOB", "1"}});
    ::testing::internal::CaptureStderr();
    const coll::config first = coll::config::from_environment();
    (void)coll::config::from_environment();
    {
        local_world world(1);
    }
    const std::string warnings = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(first.algorithm_for(collective::allreduce), algorithm::automatic);  // ignored
    const std::string typo = "unknown environment variable UCP_CPP_COLL_ALLREDUCE_ALGORITM is "
                             "ignored (maybe: UCP_CPP_COLL_ALLREDUCE_ALGORITHM?)";
    EXPECT_TRUE(contains(warnings, typo));
    EXPECT_EQ(warnings.find(typo), warnings.rfind(typo)) << "warned twice:\n" << warnings;
    EXPECT_TRUE(contains(warnings, "unknown environment variable "
                                   "UCP_CPP_COLL_ENTIRELY_DIFFERENT_KNOB is ignored;"));
}

TEST(CollConfig, SettersRejectWhatTheyDoNotAccept)
{
    coll::config settings;
    EXPECT_TRUE(
        contains(invalid_param_message([&] { settings.use(collective::bcast, algorithm::ring); }),
                 "ring does not implement bcast (accepted: " + accepted_list(collective::bcast) +
                     ")"));
    EXPECT_TRUE(contains(invalid_param_message([&] { settings.knomial_radix(1); }), "1"));
    EXPECT_TRUE(contains(invalid_param_message([&] { settings.timeout({}); }), "not positive"));
    EXPECT_TRUE(contains(invalid_param_message([&] { settings.gpu_segment_bytes(4095); }), "4095"));
    coll::thresholds negative;
    negative.allreduce_knomial_ranks = -1;
    EXPECT_TRUE(contains(invalid_param_message([&] { settings.thresholds(negative); }),
                         "allreduce_knomial_ranks"));
    // A rejected value leaves the config as it was.
    EXPECT_EQ(settings.algorithm_for(collective::bcast), algorithm::automatic);
    EXPECT_EQ(settings.knomial_radix(), 4);
}

/// Runs an int32 sum allreduce of 2p+1 elements on every rank (checked) with @p options; returns
/// the algorithm rank 0 ran (every rank ran the same, checked).
algorithm allreduce_ran(local_world &world, const coll::call_options &options = {})
{
    check_allreduce<int32_t>(world, size_t(2 * world.size() + 1), coll::op_kind::sum, options.algo,
                             false);
    const std::vector<algorithm> ran = world.ran();
    EXPECT_EQ(std::set<algorithm>(ran.begin(), ran.end()).size(), 1u) << "ranks disagree";
    return ran.at(0);
}

TEST(CollConfig, CodeOverridesTheEnvironmentWhichIsReadOnce)
{
    scoped_environment env(variables{{"UCP_CPP_COLL_ALLREDUCE_ALGORITHM", "ring"},
                                     {"UCP_CPP_COLL_ALLGATHER_ALGORITHM", "bruck"}});
    local_world from_environment(4);
    local_world overridden(4, coll::config::from_environment().use(collective::allreduce,
                                                                   algorithm::rabenseifner));
    local_world from_code(4, coll::config());
    EXPECT_EQ(from_environment.comm(0).config().algorithm_for(collective::allreduce),
              algorithm::ring);
    EXPECT_EQ(allreduce_ran(from_environment), algorithm::ring);
    EXPECT_EQ(allreduce_ran(overridden), algorithm::rabenseifner);
    EXPECT_EQ(overridden.comm(0).config().algorithm_for(collective::allgather), algorithm::bruck);
    // config() alone is the defaults: the environment is not read at all.
    EXPECT_EQ(allreduce_ran(from_code), algorithm::recursive_doubling);  // 36 bytes, 4 ranks
    // Read once: changing the environment later changes nothing.
    env.set("UCP_CPP_COLL_ALLREDUCE_ALGORITHM", "knomial");
    EXPECT_EQ(allreduce_ran(from_environment), algorithm::ring);
    // A call's own choice beats the config.
    EXPECT_EQ(allreduce_ran(from_environment, with(algorithm::knomial)), algorithm::knomial);
    // split() and dup() pass the config on.
    std::vector<coll::communicator> copies(4);
    on_rank_threads(4, [&](int r) { copies[size_t(r)] = from_environment.comm(r).dup(); });
    for (const auto &copy : copies) {
        EXPECT_EQ(copy.config().algorithm_for(collective::allreduce), algorithm::ring);
    }
}

TEST(CollConfig, ThresholdsAndTimeoutFromTheConfigTakeEffect)
{
    scoped_environment env(variables{{"UCP_CPP_COLL_ALLREDUCE_RABENSEIFNER_THRESH", "0"},
                                     {"UCP_CPP_COLL_ALLREDUCE_ALPHA_BETA", "1G"}});
    local_world from_environment(4);  // 36 bytes: Rabenseifner from 0 bytes, the ring never
    EXPECT_EQ(allreduce_ran(from_environment), algorithm::rabenseifner);
    coll::thresholds cut;
    cut.allreduce_rabenseifner = 0;
    cut.allreduce_alpha_beta   = 0;  // the ring from 0 bytes
    local_world from_code(4,
                          coll::config().thresholds(cut).timeout(std::chrono::milliseconds(200)));
    EXPECT_EQ(allreduce_ran(from_code), algorithm::ring);
    // The config's timeout bounds a blocking barrier that rank 1 does not join (yet).
    const auto start = std::chrono::steady_clock::now();
    try {
        from_code.comm(0).barrier();
        FAIL() << "a barrier without the other ranks completed";
    } catch (const ucp_cpp::ucx_error &e) {
        EXPECT_EQ(e.status(), UCS_ERR_TIMED_OUT) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    // Let it complete: the others enter it, and rank 0 a second barrier with them.
    std::vector<coll::request> rest;
    for (int r = 1; r < 4; ++r)
        rest.push_back(from_code.comm(r).ibarrier());
    for (int r = 0; r < 4; ++r)
        rest.push_back(from_code.comm(r).ibarrier());
    local_world::drive(rest);
}

TEST(CollConfig, AutomaticChoiceImplementsItsCollective)
{
    const coll::thresholds cut;
    for (const auto &row : detail::collective_table) {
        for (int p = 1; p <= 20; ++p) {
            for (size_t count : {size_t(0), size_t(1), size_t(p), size_t(1) << 22}) {
                for (size_t elem : {1, 4, 8}) {
                    const algorithm chosen = row.automatic(cut, count, elem, p);
                    EXPECT_TRUE(coll::implements(chosen, row.id) && chosen != algorithm::automatic)
                        << row.name << " p=" << p << " count=" << count << " chose "
                        << name_of(chosen);
                }
            }
        }
    }
}

/// Runs @p which with @p algo on every rank of @p world (int32, a root other than 0, counts
/// that leave some ranks' blocks empty or not) and checks the results.
void check_collective(local_world &world, collective which, algorithm algo)
{
    const int p = world.size(), root = p - 1;
    const size_t count = size_t(2 * p + 1);
    switch (which) {
    case collective::barrier:
        return check_barrier(world, algo);
    case collective::bcast:
        return check_bcast<int32_t>(world, count, root, algo);
    case collective::reduce:
        return check_reduce<int32_t>(world, count, coll::op_kind::sum, algo, root);
    case collective::allreduce:
        return check_allreduce<int32_t>(world, count, coll::op_kind::sum, algo, false);
    case collective::allgather:
        return check_allgather<int32_t>(world, count, algo, false);
    case collective::reduce_scatter:
        return check_reduce_scatter<int32_t>(world, 3, coll::op_kind::max, false, algo);
    case collective::alltoall:
        return check_alltoall<int32_t>(world, 3, false, algo);
    case collective::gather:
        return check_gather<int32_t>(world, count, root, false, algo);
    case collective::scatter:
        return check_scatter<int32_t>(world, count, root, false, algo);
    case collective::allgatherv:
        return check_allgatherv<int32_t>(world, v_shape{1, 2, 1}, algo, false);
    case collective::alltoallv:
        return check_alltoallv<int32_t>(world, v_shape{1, 2, 1}, algo, false);
    case collective::gatherv:
        return check_gatherv<int32_t>(world, v_shape{1, 2, 1}, root, algo, false);
    case collective::scatterv:
        return check_scatterv<int32_t>(world, v_shape{1, 2, 1}, root, algo, false);
    case collective::reduce_scatterv:
        return check_reduce_scatterv<int32_t>(world, v_shape{1, 2, 0}, coll::op_kind::max, algo,
                                              false);
    }
}

class CollAlgorithmTable : public ::testing::TestWithParam<int> {};

TEST_P(CollAlgorithmTable, EveryRowRunsEveryCollectiveItImplements)
{
    local_world world(GetParam(), coll::config());
    const bool pof2 = (GetParam() & (GetParam() - 1)) == 0;
    for (const auto &row : detail::algorithm_table) {
        for (const auto &implementation : row.implementations) {
            if (implementation.build == nullptr)
                continue;
            const std::string what = std::string(row.name) + " " + name_of(implementation.serves);
            if (implementation.serves == collective::allgather &&
                row.id == algorithm::recursive_doubling && !pof2) {
                try {
                    check_collective(world, implementation.serves, row.id);
                    ADD_FAILURE() << what << " ran on " << GetParam() << " ranks";
                } catch (const ucp_cpp::ucx_error &e) {
                    EXPECT_TRUE(contains(e.what(), "power-of-two"));
                }
                continue;
            }
            check_collective(world, implementation.serves, row.id);
            EXPECT_EQ(world.ran(), std::vector<algorithm>(size_t(GetParam()), row.id)) << what;
        }
    }
}

TEST_P(CollAlgorithmTable, EveryRowRunsThroughTheConfig)
{
    // World k sets every collective to its k-th algorithm (cycling): together they configure
    // every row for every collective it implements, and every collective runs with the config.
    size_t widest = 0;
    for (const auto &row : detail::collective_table) {
        widest = std::max(widest, coll::algorithms_of(row.id).size());
    }
    const bool pof2 = (GetParam() & (GetParam() - 1)) == 0;
    for (size_t k = 0; k < widest; ++k) {
        coll::config settings;
        for (const auto &row : detail::collective_table) {
            std::vector<algorithm> choices = coll::algorithms_of(row.id);
            if (row.id == collective::allgather && !pof2) {
                choices.erase(
                    std::find(choices.begin(), choices.end(), algorithm::recursive_doubling));
            }
            settings.use(row.id, choices[k % choices.size()]);
        }
        local_world world(GetParam(), settings);
        for (const auto &row : detail::collective_table) {
            check_collective(world, row.id, algorithm::automatic);
            EXPECT_EQ(world.ran(),
                      std::vector<algorithm>(size_t(GetParam()), settings.algorithm_for(row.id)))
                << row.name << " configured " << name_of(settings.algorithm_for(row.id));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollAlgorithmTable, ::testing::Values(3, 4),
                         [](const auto &info) { return "ranks" + std::to_string(info.param); });

TEST(CollConfig, DocsListEveryVariable)
{
    // docs/collectives.md names every variable the config knows, and no other (but in its
    // example of the unknown-variable warning).
    std::ifstream file(COLL_DOCS_COLLECTIVES);
    ASSERT_TRUE(file) << COLL_DOCS_COLLECTIVES;
    std::stringstream text;
    text << file.rdbuf();
    const std::string docs = text.str();
    std::set<std::string> known;
    for (const std::string &name : detail::config_variable_names()) {
        known.insert(name);
        EXPECT_NE(docs.find("`" + name + "`"), std::string::npos)
            << "docs/collectives.md does not name " << name;
    }
    const std::regex mentioned("UCP_CPP_COLL_[A-Z0-9_]+");
    for (auto it = std::sregex_iterator(docs.begin(), docs.end(), mentioned);
         it != std::sregex_iterator(); ++it) {
        const std::string name = it->str();
        if (docs.compare(size_t(it->position()) + name.size(), 11, " is ignored") == 0)
            continue;
        EXPECT_TRUE(known.count(name))
            << "docs/collectives.md names " << name << ", which the config does not know";
    }
}

// The direct allreduce's decision is a function of the p descriptors alone (every rank holds
// the same and must decide alike).
TEST(CollDirect, EveryRankDecidesAlikeFromTheDescriptors)
{
    std::vector<detail::direct_descriptor> all(4);
    for (size_t r = 0; r < all.size(); ++r) {
        std::strcpy(all[r].who.node, "boot-id-of-this-node");
        all[r].who.process     = 100 + r;  // four processes
        all[r].who.context     = 7;
        all[r].who.pci_bus     = 0x1b;
        all[r].send.exportable = all[r].recv.exportable = 1;
    }
    EXPECT_EQ(detail::direct_obstacle(all), "");

    auto with = [&](auto change) {
        auto copy = all;
        change(copy);
        return detail::direct_obstacle(copy);
    };
    EXPECT_TRUE(contains(with([](auto &d) { std::strcpy(d[2].who.node, "another"); }),
                         "rank 2 runs on another node"));
    EXPECT_TRUE(contains(with([](auto &d) { d[3].who.pci_bus = 0x1c; }),
                         "rank 3's buffers are on another GPU"));
    EXPECT_TRUE(contains(with([](auto &d) { d[1].recv.exportable = 0; }),
                         "rank 1's buffers cannot be exported"));
    EXPECT_TRUE(contains(with([](auto &d) { d[3].magic[7] = '0'; }), "rank 3 sent no"));
    // Ranks of one process read each other's pointers: one context needed, no export.
    EXPECT_EQ(with([](auto &d) {
                  for (auto &x : d) {
                      x.who.process     = 1;
                      x.send.exportable = 0;
                  }
              }),
              "");
    EXPECT_TRUE(contains(with([](auto &d) {
                             d[1].who.process = d[0].who.process;
                             d[1].who.context = 8;
                         }),
                         "ranks 0 and 1 share a process but not a CUDA context"));
}

}  // namespace
}  // namespace coll_test
