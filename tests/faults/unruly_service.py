#!/usr/bin/env python3
"""A service command that does what a well-behaved service does not, for the
fault tests of process lifetime (docs/faults.md, "Processes skewbench starts").

  unruly_service.py [--ignore-term] [--daemon] [--grandchild] [--delay-s S]
                    --then exec|wait|exit --pids FILE -- COMMAND...

Before it starts COMMAND (a real remote-effect), it leaves processes behind:
  --daemon       forks; the child calls setsid, forks again and exits; the
                 grandchild (a daemon in a session of its own, its parent gone)
                 listens on a port of its own and waits forever
  --grandchild   forks a child in a process group of its own that listens on a
                 port of its own and waits forever
  --ignore-term  this process and both of the above ignore SIGTERM and SIGINT
Then, after --delay-s seconds:
  --then exec    becomes COMMAND (same pid; SIGTERM and SIGINT as by default)
  --then wait    starts COMMAND as its child and waits forever
  --then exit    exits 0 without starting COMMAND
Every process it makes appends "ROLE PID [PORT]" to --pids (roles: self,
daemon, grandchild, service). It waits on events only (time.sleep fails under
libfaketime).
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import threading

parser = argparse.ArgumentParser()
parser.add_argument("--ignore-term", action="store_true")
parser.add_argument("--daemon", action="store_true")
parser.add_argument("--grandchild", action="store_true")
parser.add_argument("--delay-s", type=float, default=0.0)
parser.add_argument("--then", required=True, choices=["exec", "wait", "exit"])
parser.add_argument("--pids", required=True)
parser.add_argument("command", nargs=argparse.REMAINDER)
args = parser.parse_args()
command = args.command[1:] if args.command[:1] == ["--"] else args.command


def note(role, port=None):
    line = f"{role} {os.getpid()}" + (f" {port}" if port else "") + "\n"
    fd = os.open(args.pids, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, line.encode())
    os.close(fd)


def ignore_signals():
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def listen_forever(role, noted):
    """In a forked child: listen on a port of its own, note it, say so on the
    pipe `noted`, never return."""
    try:
        ignore_signals()
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        note(role, listener.getsockname()[1])
        os.write(noted, b"x")
        threading.Event().wait()
    finally:
        os._exit(0)


def leave_behind(role):
    """Forks the process `role` and returns once it noted itself."""
    noted_r, noted_w = os.pipe()
    child = os.fork()
    if child == 0:
        if role == "daemon":
            os.setsid()
            if os.fork() != 0:
                os._exit(0)
        else:
            os.setpgid(0, 0)
        listen_forever(role, noted_w)
    os.close(noted_w)
    os.read(noted_r, 1)
    os.close(noted_r)
    if role == "daemon":
        os.waitpid(child, 0)


ignore_signals()
note("self")
if args.daemon:
    leave_behind("daemon")
if args.grandchild:
    leave_behind("grandchild")

if args.delay_s > 0:
    threading.Event().wait(args.delay_s)
if args.then == "exit":
    sys.exit(0)
if args.then == "exec":
    # COMMAND gets the signals' default actions: only the processes above
    # ignore them.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.execvp(command[0], command)
service = subprocess.Popen(command, preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGTERM, signal.SIGINT)])
with open(args.pids, "a") as pids:
    pids.write(f"service {service.pid}\n")
threading.Event().wait()
