#!/usr/bin/env python3
"""Runs a test command and turns a hang into a failure that says where it hung.

Usage: scripts/test-watchdog.py [--silence SECONDS] -- COMMAND...

The command's output is passed through unchanged. When it prints nothing for SECONDS (default
600, or HERALD_TEST_SILENCE_LIMIT), the watchdog lists the Swift Testing tests that started and
did not end, saves a backtrace of every thread of each process in the command's process group
(when gdb is installed) and prints its frames that have a source location, stops the group and
exits 124. Otherwise it exits with
the command's status.
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
            for pid in group_members(child.pid):
                subprocess.run(
                    ["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                    stdout=report, stderr=subprocess.STDOUT, timeout=120, check=False,
                )
        print(f"   backtraces of every thread: {path}; the frames with a source location:", file=out)
        with open(path, errors="replace") as report:
            for line in report:
                if line.startswith("Thread ") or " at /" in line:
                    print("   " + line.rstrip()[:300], file=out)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def group_members(group: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == group:
                    members.append(int(entry))
            except ProcessLookupError:
                pass
    return members


if __name__ == "__main__":
    sys.exit(main())
