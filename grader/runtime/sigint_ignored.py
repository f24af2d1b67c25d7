"""Imported first in the grading pool's fork server (``grader.runtime.pool.start_forkserver`` puts it at
the head of the preload list): SIGINT is ignored from here on, then unblocked. The fork server is
started with SIGINT blocked, so a Ctrl-C that comes while the interpreter starts stays pending and is
discarded here instead of ending it with a traceback; multiprocessing's fork server then keeps
``SIG_IGN`` as the disposition it restores in every process it forks (pool processes, ``kdt-grade
serve``'s HTTP processes), which therefore never react to a Ctrl-C. Nothing else is in this module."""
import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
