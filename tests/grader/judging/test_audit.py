"""Tests for grader/judging/audit/: the static audit of a submission (issue 5)."""
import dataclasses
import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.cli.audit import audit_command
from grader.judging.audit import BANNED_NAMES, RULES, AuditReport, Violation, audit_file, audit_source

CLEAN = Path(__file__).parent / "fixtures" / "clean"


def audit(source: str) -> AuditReport:
    return audit_source(textwrap.dedent(source))


def findings_of(report: AuditReport) -> set[tuple[str, int]]:
    """(rule, line) of every violation."""
    return {(v.rule, v.line) for v in report.violations}


def findings(source: str) -> set[tuple[str, int]]:
    return findings_of(audit(source))


# ---------------------------------------------------------------------------------------------
# Ordinary submissions pass
# ---------------------------------------------------------------------------------------------

#: fixture -> top-level definitions that only its main block reaches
EXPECTED_SKIPPED = {
    "vector_add.py": ("main",),
    "matmul_dispatch.py": ("check",),
    "flash_attention.py": ("_reference", "run_local"),
    "fine_grain_scale.py": (),
    "all_tasks.py": ("dump_result", "make_inputs", "run_all"),
    "double_buffer.py": (),
    "scalar_tricks.py": ("Timer", "local_check"),
}


def test_every_clean_fixture_is_listed():
    assert sorted(p.name for p in CLEAN.glob("*.py")) == sorted(EXPECTED_SKIPPED)


@pytest.mark.parametrize("name", sorted(EXPECTED_SKIPPED))
def test_realistic_submission_passes(name):
    report = audit_file(CLEAN / name)
    assert report.violations == [], report.format()
    assert report.ok
    assert report.skipped == EXPECTED_SKIPPED[name]


@pytest.mark.parametrize("source", [
    "",
    '"""Only a docstring."""\n',
    "import kdt\n'''a string used as a block comment'''\nX = 1\n",
    "import numpy as np\nA: 'np.typing.NDArray' = None\n",
    "import collections.abc\ndef f(x):\n    return isinstance(x, collections.abc.Sequence)\n",
    "import torch\nF = torch.nn.functional\ndef f(x):\n    return F.relu(x) if isinstance(x, torch.Tensor) else x\n",
    "def f(task_args):\n    input = task_args['N']\n    return input\n",
    "def f(compile, open=1):\n    return compile(open)\n",
    "def f(xs):\n    return [vars for vars in xs]\n",
    "__all__ = ['get_kernel']\n__version__ = '1.0'\nclass S:\n    __slots__ = ('a',)\n",
    "class A:\n    def __init__(self):\n        super().__init__()\nclass B(A):\n    def __init__(self):\n        super(B, self).__init__()\n",
    "class K:\n    def __call__(self, x):\n        return x\n    def __repr__(self):\n        return 'K'\n",
    "from __future__ import annotations\nimport typing\nX: typing.Dict[str, int] = {}\n",
    "import kdt as k\nimport kdt.simulator as sim\n\ndef run(c, io, spec):\n    return k.launch_kernel(c, io, spec)\n",
    "if '__main__' == __name__:\n    import os\n    os.system('ls')\n",
])
def test_ordinary_python_passes(source):
    report = audit_source(source)
    assert report.ok, report.format()


# ---------------------------------------------------------------------------------------------
# Every rule: violating samples with the exact rule and line
# ---------------------------------------------------------------------------------------------

VIOLATIONS = [
    # syntax
    ("x = 1\ndef f(:\n    pass\n", "syntax", 2),
    ("x = 1\ny = 2\x00\n", "syntax", 2),
    ("x = 1\ny = " + "+".join(["1"] * 200000) + "\n", "syntax", 1),
    # size: more syntax nodes than the audit reads
    ("def get_kernel(t):\n    a = 1\n" + "    a = a + 1\n" * 10_000, "size", 1),
    # encoding: the import would read other code than the audited text
    ("# coding: unicode_escape\n# \\x0aimport os\n", "encoding", 1),
    ("#!/usr/bin/env python\n# -*- coding: latin-1 -*-\nx = 1\n", "encoding", 1),
    ("# coding: nosuch\nx = 1\n", "encoding", 1),
    # import
    ("import os\n", "import", 1),
    ("import kdt, subprocess\n", "import", 1),
    ("import kdtx\n", "import", 1),
    ("X = 1\nfrom importlib import import_module\n", "import", 2),
    ("from . import helper\n", "import", 1),
    ("def get_kernel(t):\n    import sys\n    return None\n", "import", 2),
    # import-star
    ("from torch import *\n", "import-star", 1),
    # top-level
    ("print('hi')\n", "top-level", 1),
    ("X = []\nfor i in range(3):\n    X.append(i)\n", "top-level", 2),
    ("while False:\n    pass\n", "top-level", 1),
    ("DEBUG = True\nif DEBUG:\n    X = 1\n", "top-level", 2),
    ("try:\n    import torch\nexcept ImportError:\n    torch = None\n", "top-level", 1),
    ("X = 1\nX += 1\n", "top-level", 2),
    ("def main():\n    pass\nmain()\n", "top-level", 3),
    ("if __name__ != '__main__':\n    X = 1\n", "top-level", 1),
    ("if __name__ == '__main__':\n    pass\nelse:\n    print('imported')\n", "top-level", 4),
    # dunder
    ("import kdt\nd = kdt.__dict__\n", "dunder", 2),
    ("def f(obj):\n    return obj.__class__\n", "dunder", 2),
    ("b = __builtins__\n", "dunder", 1),
    ("def f():\n    return __loader__, 1\n", "dunder", 2),
    ("s = __spec__\n", "dunder", 1),
    ("print_name = __name__\n", "dunder", 1),
    ("__builtins__ = {}\n", "dunder", 1),
    ("class A:\n    def f(self):\n        return super().__getattribute__('x')\n", "dunder", 3),
    ("def f(x):\n    match x:\n        case object(__class__=c):\n            return c\n", "dunder", 3),
    ("from kdt import __builtins__ as b\n", "dunder", 1),
    # banned-name (one per name below, plus these)
    ("exec = exec\ndef f():\n    exec('1')\n", "banned-name", 3),
    ("input = 3\ndef f():\n    return input\n", "banned-name", 3),
    ("def f(x=getattr):\n    return x\n", "banned-name", 1),
    # denied-route
    ("import torch\ndef f():\n    return torch.load('w.pt')\n", "denied-route", 3),
    ("import torch\ndef f(x):\n    torch.save(x, 'w.pt')\n", "denied-route", 3),
    ("import numpy as np\nA = np.load('a.npy')\n", "denied-route", 2),
    ("import numpy as np\ndef f(a):\n    np.savez('a', a)\n", "denied-route", 3),
    ("import numpy\nA = numpy.fromfile('a.bin')\n", "denied-route", 2),
    ("import numpy as np\nM = np.memmap\n", "denied-route", 2),
    ("import numpy as np\nL = np.ctypeslib.load_library('x', '.')\n", "denied-route", 2),
    ("import torch\nop = torch.ops.aten.add\n", "denied-route", 2),
    ("import torch.utils.cpp_extension\n", "denied-route", 1),
    ("from torch.utils import cpp_extension\n", "denied-route", 1),
    ("import torch\nm = torch.hub.load('a', 'b')\n", "denied-route", 2),
    ("import torch\nc = torch.classes\n", "denied-route", 2),
    ("import torch\ndef f(g):\n    return torch.jit.script(g)\n", "denied-route", 3),
    ("import torch\ndef f(g):\n    return torch.compile(g)\n", "denied-route", 3),
    ("from torch import load\n", "denied-route", 1),
    ("def f(x):\n    x.numpy().tofile('/tmp/x')\n", "denied-route", 2),
    ("import typing\ns = typing.sys\n", "denied-route", 2),
    ("from typing import get_type_hints\n", "denied-route", 1),
    ("import functools\n@functools.singledispatch\ndef f(x):\n    pass\n", "denied-route", 2),
    ("import numpy as np\nv = np.lib.stride_tricks.as_strided\n", "denied-route", 2),
    # private-attribute
    ("import torch\nC = torch._C\n", "private-attribute", 2),
    ("def f():\n    g = (i for i in [0])\n    return g.gi_frame\n", "introspection", 3),
    ("def f(e):\n    return e.tb_frame\n", "introspection", 2),
    ("from torch import _C\n", "private-attribute", 1),
    ("import numpy as np\ncore = np._core\n", "private-attribute", 2),
    ("import kdt._internal as ki\n", "private-attribute", 1),
    # module-assign
    ("import kdt\ndef f(x):\n    return x\nkdt.launch_kernel = f\n", "module-assign", 4),
    ("import torch\ntorch.x = 1\n", "module-assign", 2),
    ("import kdt.simulator as s\ns.foo = 1\n", "module-assign", 2),
    ("import kdt\ndef f():\n    setattr(kdt, 'x', 1)\n", "module-assign", 3),
    ("import kdt\ndef f():\n    kdt.x += 1\n", "module-assign", 3),
    ("import kdt\ndef f():\n    del kdt.x\n", "module-assign", 3),
    ("import kdt as k\nk.launch_kernel = None\n", "module-assign", 2),
    ("from kdt import simulator\nsimulator.run = None\n", "module-assign", 2),
    ("import kdt\nkdt.registry['x'] = 1\n", "module-assign", 2),
    ("import kdt\nkdt.x: int = 1\n", "module-assign", 2),
    ("import kdt\ndef f():\n    for kdt.x in range(3):\n        pass\n", "module-assign", 3),
    ("def f():\n    import kdt as q\n    q.z = 1\n", "module-assign", 3),
    ("import kdt\nk = kdt\nk.launch_kernel = None\n", "module-assign", 3),
    ("import torch\nT = torch.Tensor\nT.add = None\n", "module-assign", 3),
    # module-alias
    ("import torch\ndef helper(m):\n    return m\nX = helper(torch)\n", "module-alias", 4),
    ("import kdt\nMODS = [kdt]\n", "module-alias", 2),
    ("import numpy\ndef f():\n    return numpy\n", "module-alias", 3),
    ("import torch\ndef f(m=torch):\n    return m\n", "module-alias", 2),
    ("import typing\nT = (typing, 1)\n", "module-alias", 2),
]


@pytest.mark.parametrize("source,rule,line", VIOLATIONS)
def test_violation(source, rule, line):
    assert (rule, line) in findings(source), audit_source(source).format()


@pytest.mark.parametrize("name", sorted(BANNED_NAMES))
def test_every_banned_name(name):
    source = f"def get_kernel(task_id):\n    x = 1\n    f = {name}\n    return None\n"
    assert findings(source) == {("banned-name", 3)}


def test_every_rule_has_a_violating_sample():
    assert {rule for _, rule, _ in VIOLATIONS} == set(RULES)


def test_syntax_error_is_reported_not_raised():
    report = audit_source("def f(:\n")
    [violation] = report.violations
    assert (violation.rule, violation.line, violation.col) == ("syntax", 1, 7)
    assert violation.text == "def f(:"
    assert not report.ok


def test_all_violations_are_reported_in_source_order():
    report = audit("""\
        import os
        import kdt
        print(1)
        def get_kernel(t):
            return eval('kdt')
        kdt.launch_kernel = None
        """)
    assert [(v.rule, v.line) for v in report.violations] == [
        ("import", 1), ("top-level", 3), ("banned-name", 5), ("module-assign", 6)]


# ---------------------------------------------------------------------------------------------
# The main block and what only it reaches
# ---------------------------------------------------------------------------------------------

def test_main_block_is_skipped_with_its_imports():
    report = audit("""\
        import kdt

        def get_kernel(task_id):
            return None

        if __name__ == "__main__":
            import os, sys, time, argparse
            exec(open(sys.argv[1]).read())
            print(os.getcwd(), time.time(), get_kernel(1).__class__)
        """)
    assert report.ok, report.format()


def test_helper_only_called_from_main_is_skipped_transitively():
    report = audit("""\
        def get_kernel(task_id):
            return None

        def save(path):
            import os
            os.makedirs(path)

        def main():
            import argparse
            save(argparse.ArgumentParser().parse_args().out)

        if __name__ == "__main__":
            main()
        """)
    assert report.ok, report.format()
    assert report.skipped == ("main", "save")


def test_function_called_from_main_and_from_judged_code_is_audited():
    report = audit("""\
        def shared():
            import os
            return os.cpu_count()

        def jobs(task_args):
            return shared()

        def get_kernel(task_id):
            return jobs

        def main():
            print(shared())

        if __name__ == "__main__":
            main()
        """)
    assert {(v.rule, v.line) for v in report.violations} == {("import", 2)}
    assert report.skipped == ("main",)


def test_get_kernel_is_audited_even_when_main_calls_it():
    report = audit("""\
        def get_kernel(task_id):
            import os
            return None

        if __name__ == "__main__":
            get_kernel(1)
        """)
    assert findings_of(report) == {("import", 2)}


def test_function_nobody_references_is_audited():
    assert findings("def unused():\n    import os\n") == {("import", 2)}


def test_name_used_in_main_else_branch_is_judged():
    report = audit("""\
        def helper():
            import os

        if __name__ == "__main__":
            helper()
        else:
            X = helper
        """)
    assert findings_of(report) == {("import", 2)}


def test_main_guard_inside_a_function_does_not_skip():
    assert ("import", 3) in findings("def f():\n    if __name__ == '__main__':\n        import os\n")


def test_import_time_code_of_a_skipped_function_is_audited():
    report = audit("""\
        def helper(data=open('/etc/passwd').read()):
            import os

        if __name__ == "__main__":
            helper()
        """)
    assert findings_of(report) == {("banned-name", 1)}
    assert report.skipped == ("helper",)


def test_function_named_at_import_time_is_audited():
    # a default value holds the function object at import time: conservatively judged
    report = audit("""\
        def save(x):
            import os

        def main(report=save):
            report(1)

        if __name__ == "__main__":
            main()
        """)
    assert findings_of(report) == {("import", 2)}
    assert report.skipped == ("main",)


def test_function_named_in_a_string_annotation_is_audited():
    # typing.get_type_hints (and friends) would evaluate the annotation and call the helper
    report = audit("""\
        def helper():
            import os

        def get_kernel(task_id: "helper()"):
            return None

        if __name__ == "__main__":
            helper()
        """)
    assert findings_of(report) == {("import", 2)}


def test_decorated_main_only_function_is_audited_unless_decorator_is_passive():
    source = """\
        import functools
        REGISTRY = []

        def register(f):
            REGISTRY.append(f)
            return f

        @{decorator}
        def bench():
            import time

        def get_kernel(task_id):
            return None

        if __name__ == "__main__":
            bench()
        """
    assert findings_of(audit(source.format(decorator="register"))) == {("import", 10)}
    assert audit(source.format(decorator="functools.lru_cache(maxsize=None)")).ok


def test_main_only_plain_class_has_its_methods_skipped():
    report = audit("""\
        class Timer:
            label = "t"

            def __enter__(self):
                import time
                self.t = time.time()

            @staticmethod
            def now():
                import time
                return time.time()

        if __name__ == "__main__":
            with Timer():
                pass
        """)
    assert report.ok, report.format()
    assert report.skipped == ("Timer",)


@pytest.mark.parametrize("header,body_line", [
    ("class Evil(Base):", 7),                      # Base.__init_subclass__ runs at class creation
    ("class Evil(metaclass=Meta):", 7),            # so does a metaclass
    ("@decorate\nclass Evil:", 8),                 # and a decorator
])
def test_main_only_class_whose_creation_runs_code_is_audited(header, body_line):
    source = "class Base:\n    pass\nclass Meta(type):\n    pass\ndef decorate(c):\n    return c\n" + header + """
    def run(self):
        import os
if __name__ == "__main__":
    Evil()
"""
    assert ("import", body_line + 2) in findings(source), audit_source(source).format()


def test_main_only_class_with_descriptor_in_body_is_audited():
    # a descriptor's __set_name__ receives the class when it is created
    report = audit("""\
        class Desc:
            def __set_name__(self, owner, name):
                owner.run()

        class Evil:
            hook = Desc()

            def run(self):
                import os

        if __name__ == "__main__":
            Evil()
        """)
    assert ("import", 9) in findings_of(report)


# ---------------------------------------------------------------------------------------------
# Obfuscation attempts
# ---------------------------------------------------------------------------------------------

OBFUSCATIONS = [
    ("import kdt\ndef f():\n    return getattr(kdt, 'launch' + '_kernel')\n", "banned-name", 3),
    ("import kdt\ndef f(g):\n    kdt.__dict__['launch_kernel'] = g\n", "dunder", 3),
    ("import importlib\n", "import", 1),
    ("def f():\n    return __import__('os')\n", "banned-name", 2),
    ("from kdt import simulator as s\ndef f(g):\n    s.launch = g\n", "module-assign", 3),
    ("def f():\n    return globals()['x']\n", "banned-name", 2),
    ("import kdt\nV = vars(kdt)\n", "banned-name", 2),
    ("C = (lambda: 0).__code__\n", "dunder", 1),
    ("def f(x):\n    return type(x).__subclasses__()\n", "dunder", 2),
    ("def f():\n    exec(bytes.fromhex('7072696e74283129').decode())\n", "banned-name", 2),
    ("def f():\n    e = eval\n    return e('1')\n", "banned-name", 2),
    ("S = object.__subclasses__()\n", "dunder", 1),
    ("import torch\nt = torch\ndef f():\n    return t.load('x')\n", "denied-route", 4),
    ("import torch\nt = torch\ndef f():\n    return t.os.system('id')\n", "denied-route", 4),
    ("import torch\nX = torch.nn.functional.torch.load\n", "denied-route", 2),
    ("import enum\nE = enum.bltns.eval\n", "denied-route", 2),
    ("import typing\nA = typing.operator.attrgetter('__globals__')\n", "denied-route", 2),
    ("import dataclasses\nB = dataclasses.builtins\n", "denied-route", 2),
    ("import dataclasses\nI = dataclasses.inspect\n", "denied-route", 2),
    ("def f(x: \"__import__('os').system('id')\"):\n    pass\n", "banned-name", 1),
    ("X: 'eval(\"1\")' = 1\n", "banned-name", 1),
    ("import torch\nM = [torch][0].load\n", "module-alias", 2),
    ("import torch\nx = y = torch.utils\n", "denied-route", 2),
    ("import numpy as np\ndef f(a):\n    return a.ctypes.data\n", "denied-route", 3),
    ("def f(t):\n    t.untyped_storage().from_file('x', True, 1)\n", "denied-route", 2),
    ("import kdt\ndef f(g):\n    (k := kdt).launch_kernel = g\n", "module-assign", 3),
    # the attacker review's bypass: an attrgetter re-exported by a module the routes do not cover, the
    # attribute name a string (it mapped host files with torch.UntypedStorage.from_file)
    ("import torch\ndef get_kernel(t):\n    ff = torch.autograd.profiler_util.attrgetter('from_file')(torch.UntypedStorage)\n",
     "denied-route", 3),
    ("import torch\nM = torch.nn.modules.module.methodcaller('from_file', 'x')\n", "denied-route", 2),
    ("import kdt\nclass P:\n    sim = kdt\n", "module-alias", 3),
    # a submodule reached as an attribute, laundered through a container or a call: the private names
    # below it were out of sight (`.modules.module.torch._import_dotted_name`; case a44)
    ("import torch\nM = [torch.nn][0]\n", "module-alias", 2),
    ("import torch\nM = (lambda m: m)(torch.nn.functional)\n", "module-alias", 2),
    ("from torch import nn\nM = {'n': nn}['n']\n", "module-alias", 2),
    ("import kdt\ndef f(s=kdt.simulator):\n    return s\n", "module-alias", 2),
]


@pytest.mark.parametrize("source", [
    "import torch\nDTYPES = [torch.float32, torch.int32]\n",
    "import kdt\nOPS = {'add': kdt.add, 'mul': kdt.mul}\n",
    "import torch\ndef f(x, act=torch.nn.functional.relu):\n    return act(x)\n",
    "import kdt\ndef get_kernel(t):\n    match kdt.simulator:\n        case s:\n            return s.Recording\n",
])
def test_values_of_modules_that_are_not_modules_may_be_handed_around(source):
    """Functions, classes and dtypes of the allowed packages in containers and defaults stay allowed
    (contestants write such tables), and so does a match on a module (its captures are followed)."""
    assert findings(source) == set(), audit_source(source).format()


@pytest.mark.parametrize("source,rule,line", OBFUSCATIONS)
def test_obfuscation_is_caught(source, rule, line):
    assert (rule, line) in findings(source), audit_source(source).format()


def test_self_growing_module_alias_is_reported_not_followed_forever():
    assert ("module-alias", 3) in findings("import torch\nx = torch\nx = x.nn\n")


def test_fanning_out_module_aliases_stay_bounded():
    # each level doubles the paths a name may hold: 2**40 without the bound
    lines = ["import torch", "a0 = torch"]
    for i in range(1, 41):
        lines += [f"a{i} = a{i - 1}.x", f"a{i} = a{i - 1}.y"]
    report = audit_source("\n".join(lines) + "\n")
    assert {v.rule for v in report.violations} == {"module-alias"}


@pytest.mark.parametrize("source", ["\x00", "\ufeff", "(" * 1000, "def f():\n\treturn 1\n        x", "\r\r\n", '"""'])
def test_odd_input_never_raises(source):
    report = audit_source(source)
    assert all(v.rule == "syntax" for v in report.violations)


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------

def test_violation_carries_column_and_source_text():
    [v] = audit_source("import torch\ndef f():\n    return  torch.load('x')\n").violations
    assert v == Violation("denied-route", 3, 19, "return  torch.load('x')", v.message)
    assert "torch.load" in v.message and "unpickles" in v.message


def test_column_counts_characters_not_bytes():
    [v] = audit_source("s = 'ééé'; t = open\n").violations
    assert (v.rule, v.col) == ("banned-name", 16)


def test_report_is_frozen_and_serializes_to_json():
    report = audit_source("import os\n", filename="sub.py")
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.violations = []
    data = json.loads(json.dumps(report.to_dict()))
    assert data["filename"] == "sub.py" and data["ok"] is False
    assert data["violations"] == [{"rule": "import", "line": 1, "col": 8, "text": "import os",
                                   "message": report.violations[0].message}]


def test_format_lists_every_violation_with_its_line():
    report = audit_source("import os\nprint(1)\n", filename="sub.py")
    text = report.format()
    assert text.startswith("sub.py: 2 violation(s)")
    assert "line 1, col 8: [import] import of `os`" in text
    assert "line 2, col 1: [top-level] " in text and "\n    print(1)" in text
    assert audit_source("X = 1\n", filename="ok.py").format() == "ok.py: no violations"


def test_the_audits_work_is_bounded_whatever_the_file():
    """Attacker review: the audit runs in the trusted judge, and a 1 MiB file of alias chains took 33 s there
    and gave a 10 MB report on every point. Now a file of more than MAX_AST_NODES syntax nodes is refused
    with one violation, the audit stops at MAX_VIOLATIONS, an alias chain is followed at most
    MAX_ALIAS_STEPS times in all, and a quoted source line is cut (all counts, nothing timed)."""
    from grader.judging import audit_policy as policy

    assert (policy.MAX_AST_NODES, policy.MAX_VIOLATIONS, policy.MAX_ALIAS_STEPS) == (50_000, 100, 2_000)
    huge = "import torch\ndef get_kernel(t):\n    a = 1\n" + "    a = a + torch.float32.itemsize\n" * 7_000
    report = audit_source(huge, "huge.py")
    assert [(v.rule, v.line) for v in report.violations] == [("size", 1)]
    assert "more than 50,000 syntax nodes" in report.violations[0].message
    # just below the node cap: 7000 alias assignments, each a violation; the report stops at 100
    chain = "import torch\ndef get_kernel(t):\n    x = torch\n" + "    x = x.linalg\n    x = x.nn\n" * 3_500
    report = audit_source(chain, "chain.py")
    assert report.truncated and len(report.violations) == 100 and report.to_dict()["truncated"] is True
    assert report.format().startswith("chain.py: 100 violation(s) (the audit stops at the first 100: fix these")
    assert len(report.format()) < 20_000
    assert not audit_source("import os\n").truncated
    long_line = "import os; X = '" + "y" * 5_000 + "'\n"
    (violation,) = audit_source(long_line).violations
    assert len(violation.text) == 200 + len(" ...") and violation.text.endswith("y ...")


def test_alias_propagation_has_a_step_budget(monkeypatch):
    """Past MAX_ALIAS_STEPS the aliases still to follow are module-alias violations (never silently
    trusted): with a budget of 3, the fourth alias of a straight chain is not followed."""
    from grader.judging import audit

    source = "import torch\ndef get_kernel(t):\n    a = torch\n    b = a\n    c = b\n    d = c\n    e = d\n"
    assert audit_source(source).ok  # plain aliases of a module are followed
    monkeypatch.setattr(audit.bindings, "MAX_ALIAS_STEPS", 3)
    report = audit_source(source)
    assert [(v.rule, v.line) for v in report.violations] == [("module-alias", 6), ("module-alias", 7)]
    assert "too tangled" in report.violations[0].message


def test_audit_file_handles_bom_and_crlf(tmp_path):
    path = tmp_path / "sub.py"
    path.write_bytes(b"\xef\xbb\xbfimport kdt\r\nimport os\r\n")
    [v] = audit_file(path).violations
    assert (v.rule, v.line, v.text) == ("import", 2, "import os")


# ---------------------------------------------------------------------------------------------
# `kdt-grade audit FILE [--json]`
# ---------------------------------------------------------------------------------------------

def test_cli_clean_file_exits_0():
    result = CliRunner().invoke(audit_command, [str(CLEAN / "vector_add.py")])
    assert result.exit_code == 0, result.output
    assert "no violations" in result.output


def test_cli_violations_exit_1_and_json(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("import os\nimport kdt\nkdt.x = 1\n")
    result = CliRunner().invoke(audit_command, [str(path)])
    assert result.exit_code == 1
    assert "line 1, col 8: [import]" in result.output and "[module-assign]" in result.output
    result = CliRunner().invoke(audit_command, [str(path), "--json"])
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert [(v["rule"], v["line"]) for v in data["violations"]] == [("import", 1), ("module-assign", 3)]


@pytest.mark.parametrize("content", [None, b"\xff\xfe not utf-8"])
def test_cli_unreadable_file_exits_2(tmp_path, content):
    path = tmp_path / "sub.py"
    if content is not None:
        path.write_bytes(content)
    result = CliRunner().invoke(audit_command, [str(path)])
    assert result.exit_code == 2
    assert "cannot read" in result.output


def test_cli_is_registered_on_kdt_grade():
    from grader.cli import main
    result = CliRunner().invoke(main, ["audit", "--json", str(CLEAN / "all_tasks.py")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["ok"] is True
