"""Run as ``python -S trampoline.py FILTER COMMAND...`` by the tracer: put this process under the
seccomp filter ``FILTER`` (hex), ask to be traced by its parent, and become ``COMMAND``.

The exec stops it at once, before the program's first instruction, so the tracer patches the
vDSO before anything reads a clock. It imports nothing of the harness, so it starts in about
10 ms. A step refused exits ``REFUSED`` with the reason on stderr, which the tracer reports.
"""

import ctypes
import os
import sys

REFUSED = 126
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, PTRACE_TRACEME = 38, 22, 2, 0


class Filter(ctypes.Structure):
    _fields_ = [("length", ctypes.c_ushort), ("instructions", ctypes.c_char_p)]


def refuse(step: str) -> None:
    error = ctypes.get_errno()
    sys.stderr.write(f"clock control refused: {step}: {os.strerror(error)}\n")
    sys.exit(REFUSED)


def main() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    code = bytes.fromhex(sys.argv[1])
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        refuse("prctl(PR_SET_NO_NEW_PRIVS)")
    program = Filter(len(code) // 8, code)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) != 0:
        refuse("seccomp filter")
    if libc.ptrace(PTRACE_TRACEME, 0, None, None) != 0:
        refuse("ptrace(PTRACE_TRACEME)")
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as error:
        sys.stderr.write(f"cannot start {sys.argv[2]!r}: {error.strerror}\n")
        sys.exit(127)


if __name__ == "__main__":
    main()
