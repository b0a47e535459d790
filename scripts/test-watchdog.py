#!/usr/bin/env python3
"""Runs a test command and turns a hang into a failure that says where it hung.

Usage: scripts/test-watchdog.py [--silence SECONDS] -- COMMAND...

The command's output is passed through unchanged. When it prints nothing for SECONDS (default
600, or HERALD_TEST_SILENCE_LIMIT), the watchdog lists the Swift Testing tests that started and
did not end, saves a backtrace of every thread of each process in the command's process group
and of every process below it (SwiftPM runs the test bundle as a child that may leave the group),
when gdb is installed, prints their frames that have a source location, stops them all and exits
124. Otherwise it exits with the command's status.
"""

import argparse
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time

STARTED = re.compile(r"^◇ (Test .*) started\.$")
ENDED = re.compile(r"^[✔✘] (Test .*?)(?: with \d+ test cases?)? (?:passed|failed)(?: after .*)?$")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--silence", type=float, default=float(os.environ.get("HERALD_TEST_SILENCE_LIMIT", "600")))
    parser.add_argument("command", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    command = options.command[1:] if options.command[:1] == ["--"] else options.command
    if not command:
        parser.error("no command given")

    # Into a pipe, the test bundle's stdio writes in 4 KB blocks: a test's "passed" line could sit
    # unwritten for as long as the run is quiet, so a hang's list of unfinished tests named tests
    # that had finished, and the silence was measured from the last block. stdbuf makes every
    # process the command starts write its output line by line.
    if shutil.which("stdbuf"):
        command = ["stdbuf", "-oL", "-eL", *command]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    running: dict[str, None] = {}
    selector = selectors.DefaultSelector()
    selector.register(child.stdout, selectors.EVENT_READ)
    pending = b""
    last_output = time.monotonic()
    while True:
        if selector.select(timeout=5):
            chunk = os.read(child.stdout.fileno(), 65536)
            if not chunk:
                break
            last_output = time.monotonic()
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                line = raw.decode("utf-8", "replace").rstrip("\r")
                if match := STARTED.match(line):
                    running[match.group(1)] = None
                elif match := ENDED.match(line):
                    running.pop(match.group(1), None)
        elif time.monotonic() - last_output > options.silence:
            report_hang(child, running, options.silence)
            return 124
    return child.wait()


def report_hang(child: subprocess.Popen, running: dict[str, None], silence: float) -> None:
    out = sys.stderr
    print(f"\n== test watchdog: no output for {silence:.0f} s; tests started and not ended:", file=out)
    for name in running:
        print(f"   {name}", file=out)
    if shutil.which("gdb"):
        path = os.path.join(tempfile.gettempdir(), f"herald-test-hang-{child.pid}.txt")
        with open(path, "w") as report:
            for pid in processes(child.pid):
                # gdb reads the test bundle's debug information first, which on a loaded machine
                # has taken more than 120 s: a report cut short hides the threads it matters most
                # to see. The thread list comes first, as it is cheapest.
                try:
                    subprocess.run(
                        ["gdb", "-p", str(pid), "-batch", "-ex", "set pagination off", "-ex", "info threads",
                         "-ex", "thread apply all bt"],
                        stdout=report, stderr=subprocess.STDOUT, timeout=420, check=False,
                    )
                except subprocess.TimeoutExpired:
                    print(f"(gdb gave up on process {pid} after 420 s)", file=report)
        print(f"   backtraces of every thread: {path}; the frames with a source location:", file=out)
        with open(path, errors="replace") as report:
            for line in report:
                if line.startswith("Thread ") or " at /" in line:
                    print("   " + line.rstrip()[:300], file=out)
    for pid in processes(child.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    child.wait()


def processes(group: int) -> list[int]:
    """The command's process group and every descendant of its leader, deepest first."""
    parents: dict[int, int] = {}
    members = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                # The command name may hold spaces and parentheses: the fields follow the last ')'.
                fields = stat.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        pid, parent, pgid = int(entry), int(fields[1]), int(fields[2])
        parents[pid] = parent
        if pgid == group:
            members.add(pid)

    def depth(pid: int) -> int:
        steps = 0
        while pid in parents and pid != group and steps < 64:
            pid, steps = parents[pid], steps + 1
        return steps if pid == group else -1

    members.update(pid for pid in parents if depth(pid) >= 0)
    return sorted(members, key=depth, reverse=True)


if __name__ == "__main__":
    sys.exit(main())
