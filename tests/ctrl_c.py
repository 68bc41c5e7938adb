"""Ctrl-C for a child process, as a terminal gives it.

A test run started in the background (a shell's `&` without job control) hands its children
SIGINT ignored, and Python keeps an ignored SIGINT ignored: a server the test stops with SIGINT
would then never stop. Pass `preexec_fn=sigint_as_in_a_terminal` to subprocess.Popen."""

import signal


def sigint_as_in_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Python installs KeyboardInterrupt over it
