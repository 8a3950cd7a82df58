#!/usr/bin/env python3
"""Runs a command in a pseudo-terminal and types lines into it, each once the
prompt shows (for the specs of `claudelua -i` on a terminal).

    pty_run.py TIMEOUT PROMPT CMD [ARGS...] < lines

Each line of stdin is typed after PROMPT appeared since the last one; a line
"<C-c>" sends Ctrl-C half a second after the line before (prompt or not),
"<C-d>" Ctrl-D. "<Tab>" in a line types a Tab; a line that ends with
"<no-enter>" is typed without Enter, and the line after it goes at once; a
line "<sleep S>" waits S seconds, then the next line goes at once. Prints
what the terminal showed (CR LF made LF) and exits with the command's status
(124 on timeout)."""
import os, pty, select, sys, time

timeout, prompt, cmd = float(sys.argv[1]), sys.argv[2].encode(), sys.argv[3:]
lines = sys.stdin.read().splitlines()
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "dumb"
    os.execvp(cmd[0], cmd)
out, seen, deadline, at_once = b"", 0, time.time() + timeout, False
last = time.time()
while time.time() < deadline:
    r, _, _ = select.select([fd], [], [], 0.05)
    if r:
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        if not data:
            break
        out += data
    # Ctrl-C goes half a second after the line before (a prompt may not come)
    interrupt = lines and lines[0] == "<C-c>" and time.time() - last >= 0.5
    if lines and lines[0].startswith("<sleep "):
        time.sleep(float(lines.pop(0)[7:-1]))
        at_once = True
        continue
    if lines and (interrupt or at_once or out.find(prompt, seen) >= 0):
        seen, last, at_once = len(out), time.time(), False
        line = lines.pop(0)
        time.sleep(0.05)
        if line == "<C-c>":
            os.write(fd, b"\x03")
        elif line == "<C-d>":
            os.write(fd, b"\x04")
        elif line.endswith("<no-enter>"):
            os.write(fd, line[:-10].replace("<Tab>", "\t").encode())
            at_once = True
        else:
            os.write(fd, line.replace("<Tab>", "\t").encode() + b"\r")
else:
    os.kill(pid, 9)
    sys.stdout.write(out.decode(errors="replace").replace("\r\n", "\n"))
    sys.exit(124)
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace").replace("\r\n", "\n"))
sys.exit(os.waitstatus_to_exitcode(st))
