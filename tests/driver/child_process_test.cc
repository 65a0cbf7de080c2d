// Child processes (driver/child_process.h): spawn_child's streams and exec
// failure, what a child's end means in one line, the scratch folder.
#include "driver/child_process.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/error.h"
#include "common/files.h"

namespace podsim::driver {
namespace {

namespace fs = std::filesystem;

// spawn_child, the fork + exec behind sweeps,
// regress and the fit's servers: streams to files or to a socket, and an
// exec failure as exit code 127 with a message on the child's stderr.
int wait_for(pid_t pid) {
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return status;
}

TEST(SpawnChild, StreamsGoWhereAskedAndAFailedExecIsExitCode127) {
  const ScratchDir scratch("podsim-test-spawn", "the test");
  const fs::path& dir = scratch.path();
  const std::string out = (dir / "out").string(), err = (dir / "err").string();
  int status = wait_for(spawn_child({"/bin/sh", "-c", "echo to-out; echo to-err >&2; exit 3"},
                                    ChildStreams{.stdout_path = out, .stderr_path = err}));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_EQ(read_text_file(out), "to-out\n");
  EXPECT_EQ(read_text_file(err), "to-err\n");

  const std::string missing = (dir / "no-such-binary").string();
  status = wait_for(spawn_child({missing}, ChildStreams{.stdout_path = out, .stderr_path = err}));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 127);
  EXPECT_EQ(read_text_file(err), missing + ": cannot execute\n");

  // On a socket the child reads its stdin from it and answers on it.
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  pid_t cat = spawn_child({"/bin/cat"}, ChildStreams{.socket = pair[1], .stderr_path = err});
  close(pair[1]);
  ASSERT_EQ(write(pair[0], "ping\n", 5), 5);
  shutdown(pair[0], SHUT_WR);
  char answer[16] = {};
  EXPECT_EQ(read(pair[0], answer, sizeof(answer) - 1), 5);
  EXPECT_STREQ(answer, "ping\n");
  close(pair[0]);
  status = wait_for(cat);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// The waitpid status of `/bin/sh -c script` and its stderr.
std::pair<int, std::string> run_shell(const std::string& script) {
  const ScratchDir scratch("podsim-test-shell", "the test");
  const std::string err = (scratch.path() / "err").string();
  const int status = wait_for(spawn_child(
      {"/bin/sh", "-c", script}, ChildStreams{.stdout_path = "/dev/null", .stderr_path = err}));
  return {status, read_text_file(err)};
}

TEST(ChildFailureText, ExitCodeOrSignalWithTheStderrAsOneLine) {
  auto [ok, ok_err] = run_shell("echo chatter >&2; exit 0");
  EXPECT_EQ(child_failure_text(ok, ok_err), "");  // exit 0 is no failure, whatever it printed
  auto [two, two_err] = run_shell("printf 'podsim: bad key\\n\\n  hint: try x  \\n' >&2; exit 2");
  EXPECT_EQ(child_failure_text(two, two_err), "exit code 2: podsim: bad key |   hint: try x");
  auto [quiet, quiet_err] = run_shell("exit 7");
  EXPECT_EQ(child_failure_text(quiet, quiet_err), "exit code 7");
  auto [segv, segv_err] = run_shell("echo dying >&2; kill -SEGV $$");
  const std::string text = child_failure_text(segv, segv_err);
  EXPECT_TRUE(text.starts_with("crashed with signal 11 (")) << text;
  EXPECT_TRUE(text.ends_with("): dying")) << text;
}

TEST(ChildFailureText, ALongStderrIsCutAt400Characters) {
  const std::string text = child_failure_text(2 << 8, std::string(1000, 'x'));  // exit code 2
  EXPECT_EQ(text, "exit code 2: " + std::string(400, 'x') + "...");
}

TEST(ScratchDir, AFreshFolderRemovedWithItsContents) {
  fs::path kept;
  {
    const ScratchDir scratch("podsim-test-scratch", "the test");
    kept = scratch.path();
    EXPECT_TRUE(fs::is_directory(kept));
    EXPECT_TRUE(kept.filename().string().starts_with("podsim-test-scratch-"));
    write_file_atomically((kept / "f").string(), "x");
    const ScratchDir other("podsim-test-scratch", "the test");
    EXPECT_NE(other.path(), kept);
  }
  EXPECT_FALSE(fs::exists(kept));
}

TEST(RequireExecutable, NamesTheBinaryItCannotRun) {
  EXPECT_NO_THROW(require_executable("/bin/sh"));
  try {
    require_executable("/nonexistent/podsim");
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot run the podsim binary '/nonexistent/podsim'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace podsim::driver
