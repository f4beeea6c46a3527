// Runs the gdr-doctor binary and parses what it prints.
#pragma once

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

struct DoctorRun {
    int exit_status = -1;
    std::string out, err;
    nlohmann::json json;  // when the output was JSON

    /// The findings with this check id (and subject, when given).
    std::vector<nlohmann::json> findings(const std::string &check,
                                         const std::string &subject = "*") const
    {
        std::vector<nlohmann::json> found;
        for (const auto &f : json.at("findings")) {
            if (f.at("check") == check && (subject == "*" || f.at("subject") == subject)) {
                found.push_back(f);
            }
        }
        return found;
    }

    /// The single finding (check, subject); fails the test when there is not exactly one.
    nlohmann::json finding(const std::string &check, const std::string &subject = "") const
    {
        auto found = findings(check, subject);
        EXPECT_EQ(found.size(), 1u) << check << " / " << subject << " in\n" << out;
        return found.empty() ? nlohmann::json::object() : found.front();
    }
};

inline std::string shell_quote(const std::string &s)
{
    std::string q = "'";
    for (char c : s) {
        q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return q + "'";
}

inline DoctorRun run_doctor(const std::string &args, bool parse_json = true)
{
    DoctorRun run;
    char err_path[] = "/tmp/gdr-doctor-test-XXXXXX";
    int fd          = ::mkstemp(err_path);
    if (fd < 0) {
        ADD_FAILURE() << "mkstemp failed";
        return run;
    }
    ::close(fd);
    std::string cmd = shell_quote(GDR_DOCTOR_BIN) + " " + args + " 2>" + shell_quote(err_path);
    FILE *pipe      = ::popen(cmd.c_str(), "r");
    if (pipe == nullptr) {
        ADD_FAILURE() << "popen failed: " << cmd;
        return run;
    }
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) {
        run.out.append(buf, n);
    }
    int status      = ::pclose(pipe);
    run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream err(err_path);
    std::stringstream ss;
    ss << err.rdbuf();
    run.err = ss.str();
    ::unlink(err_path);
    if (parse_json) {
        try {
            run.json = nlohmann::json::parse(run.out);
        } catch (const std::exception &e) {
            ADD_FAILURE() << "not JSON (" << e.what() << "):\n"
                          << run.out << "\nstderr:\n"
                          << run.err;
            run.json = nlohmann::json::object({{"findings", nlohmann::json::array()}});
        }
    }
    return run;
}

inline std::string fixture(const std::string &name)
{
    return shell_quote(std::string(GDR_FIXTURES_DIR) + "/" + name);
}
