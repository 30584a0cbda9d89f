# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The INCA authors
"""Network namespaces and processes for the p4 suite's runs on BMv2, which
go however a run ends: a failing setup, a failed check or an exception."""

import os
import signal
import subprocess


def sh(*cmd, check=True):
    return subprocess.run(list(cmd), check=check, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)


class Rig:
    """Subclasses build their namespaces and processes in setup()."""

    def __init__(self):
        self.namespaces = []
        self.procs = []

    def __enter__(self):
        try:
            self.setup()
            return self
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def setup(self):
        raise NotImplementedError

    def netns(self, name):
        """Create namespace @name; the prefix that runs a command in it."""
        sh('ip', 'netns', 'add', name)
        self.namespaces.append(name)
        return ['ip', 'netns', 'exec', name]

    def start(self, name, cmd, log_path):
        """Start @cmd (its own process group), output to @log_path."""
        with open(log_path, 'w') as log:
            p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        p.name, p.log = name, log_path
        self.procs.append(p)
        return p

    @staticmethod
    def tail(p, n=1500):
        try:
            with open(p.log) as f:
                return f.read()[-n:]
        except OSError:
            return ''

    def cleanup(self):
        """Subclasses' own leftovers (files), after processes and namespaces."""

    def __exit__(self, *exc):
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        for ns in reversed(self.namespaces):
            sh('ip', 'netns', 'del', ns, check=False)
        self.cleanup()
        return False
