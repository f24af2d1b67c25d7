"""Issue 20, part 2: every syntax Python 3.11 has for reading (or naming) an attribute is audited alike.

The property: a name the attribute rules refuse is a violation, with the same rule, in every syntax; a
name they allow is a violation in none. The syntaxes are templates with ``NAME`` in the attribute's
place, in judged code (``get_kernel``'s body), read from a parameter the audit knows nothing about, so
only the receiver-independent rules apply (dunder, introspection, DENIED_ATTRIBUTES); the rules that
depend on an imported receiver (private names, routes) are checked the same way on ``kdt.simulator``.
``getattr``/``attrgetter`` and positional class patterns are refused whatever the name (the name is data
there), which the concrete tests below show.
"""
import json
import keyword
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.judging.audit import (
    DENIED_ATTRIBUTES, INTROSPECTION_ATTRIBUTES, SELF_MATCHING_CLASSES, audit_source,
)
from grader.cli.audit import audit_command

CASES = Path(__file__).parents[2] / "adversarial" / "cases"

#: Syntaxes that read attribute NAME of an object the audit cannot name (``x``, a parameter).
UNKNOWN_RECEIVER = {
    "load": "return x.NAME",
    "store": "x.NAME = 1",
    "delete": "del x.NAME",
    "augmented": "x.NAME += 1",
    "annotated store": "x.NAME: int = 1",
    "method call": "return x.NAME()",
    "chain": "return x.a.NAME.b",
    "walrus receiver": "return (y := x).NAME",
    "call result": "return x().NAME",
    "for target": "for x.NAME in range(2):\n    pass",
    "with target": "with x as x.NAME:\n    pass",
    "comprehension": "return [y.NAME for y in x]",
    "lambda": "return lambda y: y.NAME",
    "f-string": "return f'{x.NAME}'",
    "decorator": "@x.NAME\ndef g():\n    pass",
    "default value": "def g(y=x.NAME):\n    pass",
    "class pattern keyword": "match x:\n    case object(NAME=v):\n        return v",
    "two keywords": "match x:\n    case object(a=u, NAME=v):\n        return v",
    "nested class pattern": "match x:\n    case object(a=object(NAME=v)):\n        return v",
    "sequence pattern": "match x:\n    case [object(NAME=v), *_]:\n        return v",
    "mapping pattern": "match x:\n    case {'k': object(NAME=v), **rest}:\n        return v",
    "or-pattern": "match x:\n    case [v] | object(NAME=v):\n        return v",
    "as-pattern": "match x:\n    case object(NAME=v) as w:\n        return w",
    "guarded case": "match x:\n    case object(NAME=v) if v:\n        return v",
    "value pattern": "match 1:\n    case x.NAME:\n        return 1",
    "class pattern's class": "match 1:\n    case x.NAME():\n        return 1",
    "mapping key": "match 1:\n    case {x.NAME: v}:\n        return v",
    "string": "return 'NAME'",
    "dotted string": "return 'a.NAME'",
    "format field": "return '{0.NAME}'.format(x)",
    "nested format field": "return '{0:{1.NAME}}'.format(x, x)",
    "names in a tuple": "return ('a', 'NAME')",
    "mapping key string": "return {'NAME': x}",
    "slots string": "class C:\n    __slots__ = ('NAME',)",
}

#: Syntaxes that read attribute NAME of the imported module ``kdt``.
MODULE_RECEIVER = {
    "from-import": "from kdt import NAME",
    "from-import as": "from kdt import NAME as q",
    "import path": "import kdt.NAME",
    "import path as": "import kdt.NAME as q",
    "attribute": "import kdt\nQ = kdt.NAME",
}

#: Syntaxes that read attribute NAME of ``kdt.simulator`` (an imported value, not surely a module).
IMPORTED_RECEIVER = {
    "attribute": "import kdt\ndef get_kernel(t):\n    return kdt.simulator.NAME",
    "alias": "import kdt\nS = kdt.simulator\ndef get_kernel(t):\n    return S.NAME",
    "from-import": "from kdt.simulator import NAME",
    "class pattern on the value": "import kdt\ndef get_kernel(t):\n    match kdt.simulator:\n"
                                  "        case object(NAME=v):\n            return v",
    "nested class pattern": "import kdt\ndef get_kernel(t):\n    match kdt.language:\n"
                            "        case object(errors=object(NAME=v)):\n            return v",
    "capture, then attribute": "import kdt\ndef get_kernel(t):\n    match kdt.simulator:\n"
                               "        case s:\n            return s.NAME",
    "keyword capture, then attribute": "import kdt\ndef get_kernel(t):\n    match kdt.language:\n"
                                       "        case object(errors=e):\n            return e.NAME",
}

DUNDERS = ["__class__", "__dict__", "__globals__", "__builtins__", "__subclasses__", "__code__",
           "__getattribute__", "__reduce_ex__", "__import__", "__init__", "__match_args__", "__x__"]


def expected_rule(name: str) -> str:
    """The rule the audit's tables give a refused name (on any receiver)."""
    if name.startswith("__") and name.endswith("__"):
        return "dunder"
    return "introspection" if name in INTROSPECTION_ATTRIBUTES else "denied-route"


FORBIDDEN = st.sampled_from(sorted(INTROSPECTION_ATTRIBUTES) + sorted(DENIED_ATTRIBUTES) + DUNDERS)
ALLOWED = st.from_regex(r"[a-z][a-z0-9_]{0,9}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n) and n not in INTROSPECTION_ATTRIBUTES and n not in DENIED_ATTRIBUTES
    and n not in {"x", "y", "v", "w", "u", "a", "b", "k", "q", "rest", "functools"})


def judged(body: str) -> str:
    """``body`` as the body of ``get_kernel(x)``, which the judge calls."""
    return "def get_kernel(x):\n" + textwrap.indent(body, "    ") + "\n"


def rules(source: str) -> set[str]:
    return {v.rule for v in audit_source(source).violations}


def render(template: str, name: str) -> str:
    return template.replace("NAME", name)


@settings(max_examples=150, deadline=None)
@given(syntax=st.sampled_from(sorted(UNKNOWN_RECEIVER)), name=FORBIDDEN)
def test_a_refused_name_is_refused_alike_in_every_syntax(syntax, name):
    source = judged(render(UNKNOWN_RECEIVER[syntax], name))
    assert rules(source) == {expected_rule(name)}, audit_source(source).format()


@settings(max_examples=150, deadline=None)
@given(syntax=st.sampled_from(sorted(UNKNOWN_RECEIVER)), name=ALLOWED)
def test_an_allowed_name_is_refused_in_no_syntax(syntax, name):
    source = judged(render(UNKNOWN_RECEIVER[syntax], name))
    assert rules(source) == set(), audit_source(source).format()


@settings(max_examples=80, deadline=None)
@given(syntax=st.sampled_from(sorted(MODULE_RECEIVER)), name=FORBIDDEN | ALLOWED)
def test_reads_of_a_module_are_audited_alike(syntax, name):
    source = render(MODULE_RECEIVER[syntax], name)
    forbidden = name in INTROSPECTION_ATTRIBUTES or name in DENIED_ATTRIBUTES or name.startswith("__")
    assert rules(source) == ({expected_rule(name)} if forbidden else set()), audit_source(source).format()


@settings(max_examples=80, deadline=None)
@given(syntax=st.sampled_from(sorted(IMPORTED_RECEIVER)), public=ALLOWED)
def test_private_names_of_an_imported_value_are_refused_alike(syntax, public):
    template = IMPORTED_RECEIVER[syntax]
    assert rules(render(template, public)) == set(), audit_source(render(template, public)).format()
    private = render(template, "_" + public)
    assert rules(private) == {"private-attribute"}, audit_source(private).format()


@pytest.mark.parametrize("syntax", sorted(UNKNOWN_RECEIVER))
def test_every_syntax_is_a_real_attribute_read(syntax):
    """The templates parse, and the syntax is exactly what the test says: with the audit's own
    favourite refused name each one is caught, with a harmless name nothing is."""
    assert rules(judged(render(UNKNOWN_RECEIVER[syntax], "gi_frame"))) == {"introspection"}
    assert rules(judged(render(UNKNOWN_RECEIVER[syntax], "shape"))) == set()


# ---------------------------------------------------------------------------------------------
# Names that are data: refused whatever they are
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["shape", "gi_frame"])
@pytest.mark.parametrize("body", [
    "return getattr(x, 'NAME')",
    "import operator\nreturn operator.attrgetter('NAME')(x)",
    "import torch\nreturn torch.nn.modules.module.methodcaller('NAME')(x)",
    "import functools\nfunctools.update_wrapper(x, x, assigned=('NAME',), updated=())",
    "import functools\nfunctools.wraps(x, assigned=('NAME',), updated=())(x)",
    "import functools\nfunctools.partial(functools.wraps(x), assigned=('NAME',))(x)",
    "import functools\np = functools.wraps(x)\nreturn p.func(x, x, ('NAME',), ())",
    "from functools import wraps\nw = [wraps]\nreturn w[0](x, ('NAME',), ())(x)",
    "x.attrname = 'NAME'",
])
def test_getattr_like_calls_are_refused_whatever_the_name(body, name):
    assert rules(judged(render(body, name)))


def test_a_getattr_through_functools_with_a_name_built_at_run_time_is_refused():
    """Found while building this: ``functools.update_wrapper`` copies the attribute its ``assigned``
    strings name onto a box, and a ``cached_property`` whose ``attrname`` is set reads it back from the
    box's dict; with the names built at run time it reached the builtins through ``gi_frame`` and
    ``f_builtins`` without a word the string rule sees."""
    source = textwrap.dedent("""\
        import functools

        class Box:
            x = functools.cached_property(lambda self: None)

        def read(obj, name):
            box = Box()
            functools.update_wrapper(box, obj, assigned=(name,), updated=())
            Box.x.attrname = name
            return box.x

        def get_kernel(task_id):
            u = '_'
            return read(read((i for i in [0]), 'gi' + u + 'frame'), 'f' + u + 'buil' + 'tins')
        """)
    found = {(v.rule, v.line) for v in audit_source(source).violations}
    assert found == {("denied-route", 8), ("denied-route", 9)}


def test_functools_wraps_in_its_fixed_form_passes():
    source = textwrap.dedent("""\
        import functools
        from functools import wraps

        def timed(f):
            @functools.wraps(f)
            def inner(*args):
                return f(*args)
            return inner

        def named(f):
            return wraps(f)(lambda *args: f(*args))
        """)
    assert audit_source(source).ok, audit_source(source).format()


@pytest.mark.parametrize("classdef,pattern", [
    ("class C:\n    __match_args__ = ('gi_frame',)", "C(fr)"),
    ("import dataclasses\n@dataclasses.dataclass\nclass C:\n    shape: int = 0", "C(s)"),
    ("import typing\nclass C(typing.NamedTuple):\n    shape: int", "C(s)"),
    ("class Meta(type):\n    def __instancecheck__(cls, obj):\n        return True\nimport dataclasses\n"
     "@dataclasses.dataclass\nclass C(metaclass=Meta):\n    shape: int = 0", "C(s)"),
    ("import torch\nC = torch.Tensor", "C(s)"),
    ("import torch", "torch.Size(s)"),
    ("int = object", "int(s)"),  # not the builtin any more
])
def test_positional_class_patterns_are_refused(classdef, pattern):
    """``C(p)`` reads the attribute named by ``C.__match_args__``, a string the audit cannot check (a
    dataclass field, a metaclass's ``__instancecheck__`` matching any subject, a library class)."""
    source = classdef + f"\ndef get_kernel(x):\n    match x:\n        case {pattern}:\n            return 1\n"
    assert "denied-route" in rules(source), audit_source(source).format()


@pytest.mark.parametrize("cls", sorted(SELF_MATCHING_CLASSES))
def test_positional_patterns_of_builtins_that_match_themselves_pass(cls):
    source = judged(f"match x:\n    case {cls}(v) | [{cls}(v)]:\n        return v")
    assert rules(source) == set(), audit_source(source).format()


def test_keyword_violation_is_located_at_the_keyword():
    source = "def get_kernel(x):\n    match x:\n        case object(a=1, gi_frame=fr):\n            return fr\n"
    [v] = audit_source(source).violations
    assert (v.rule, v.line, v.col) == ("introspection", 3, 26)
    assert "`object(a=1, gi_frame=fr)` reads `gi_frame`" in v.message


def test_routes_apply_to_a_class_pattern_on_an_imported_value():
    source = ("import torch\ndef get_kernel(t):\n    match torch.nn.functional:\n"
              "        case object(torch=object(load=load)):\n            return load\n")
    [v] = audit_source(source).violations
    assert (v.rule, v.line) == ("denied-route", 4) and "torch.load" in v.message


def test_a_captured_module_part_is_followed_like_an_alias():
    source = ("import kdt\ndef get_kernel(t):\n    match kdt.language:\n        case object(errors=e):\n"
              "            e.launch = None\n")
    assert rules(source) == {"module-assign"}


def test_a_capture_binding_a_dunder_name_is_refused():
    assert rules(judged("match x:\n    case __builtins__:\n        return 1")) == {"dunder"}


# ---------------------------------------------------------------------------------------------
# The exploit of issue 20
# ---------------------------------------------------------------------------------------------

EXPLOIT = CASES / "a28_match_pattern_frame_builtins_unhook.py"


def test_the_issue_20_exploit_is_refused_statically():
    report = audit_source(EXPLOIT.read_text())
    found = {(v.rule, v.text) for v in report.violations}
    assert ("introspection", "case object(gi_frame=fr):") in found
    assert ("introspection", "case object(f_builtins=b):") in found


def test_kdt_grade_audit_reports_the_exploit():
    result = CliRunner().invoke(audit_command, [str(EXPLOIT)])
    assert result.exit_code == 1, result.output
    assert "no violations" not in result.output
    assert "[introspection] `object(gi_frame=fr)` reads `gi_frame`" in result.output
    data = json.loads(CliRunner().invoke(audit_command, ["--json", str(EXPLOIT)]).output)
    assert {"introspection"} <= {v["rule"] for v in data["violations"]}


# ---------------------------------------------------------------------------------------------
# Standard-library modules the allowed packages re-export
# ---------------------------------------------------------------------------------------------

#: Re-exported modules that hand out nothing the sandbox must keep from a kernel (no files, processes,
#: frames, code evaluation or object graph); every other one must be refused by name.
HARMLESS_REEXPORTS = frozenset({
    "ast", "bisect", "contextlib", "contextvars", "copy", "copyreg", "dataclasses", "heapq", "json",
    "keyword", "numbers", "re", "stdlib_re", "textwrap", "time", "warnings", "weakref",
})


def importable_modules():
    """``(name, module)`` of every loaded public module of an allowed package that a kernel file may
    import (kdt, numpy with numpy.random.bit_generator, which earlier tests may or may not have loaded, torch)."""
    import sys
    import types

    import kdt  # noqa: F401
    import numpy  # noqa: F401
    import numpy.random.bit_generator  # noqa: F401
    import torch  # noqa: F401
    from grader.judging.audit import ALLOWED_MODULES

    for modname, module in list(sys.modules.items()):
        if (isinstance(module, types.ModuleType) and modname.split(".")[0] in ALLOWED_MODULES
                and not any(part.startswith("_") for part in modname.split("."))
                and audit_source(f"import {modname}\n").ok):
            yield modname, module


def test_every_reexported_module_outside_the_allowlist_is_refused_or_harmless():
    """A scan of the installed packages (torch re-exported `gc` and `io`, which switched the audit hook
    off without any frame: adversarial case a29): a new torch that re-exports another module fails here."""
    import types

    from grader.judging.audit import ALLOWED_MODULES

    unrefused = set()
    for modname, module in importable_modules():
        for name, value in list(vars(module).items()):
            if (isinstance(value, types.ModuleType) and not name.startswith("_")
                    and value.__name__.split(".")[0] not in ALLOWED_MODULES
                    and name not in HARMLESS_REEXPORTS and name not in DENIED_ATTRIBUTES
                    and audit_source(f"import {modname}\nX = {modname}.{name}\n").ok):
                unrefused.add(f"{modname}.{name} ({value.__name__})")
    assert not unrefused, sorted(unrefused)


#: Re-exported callables from outside the allowlist that reach nothing the sandbox keeps from a kernel.
HARMLESS_CALLABLE_MODULES = frozenset({
    "_abc", "_bisect", "_functools", "_warnings", "builtins", "contextlib", "copy", "numbers", "weakref",
    "typing_extensions",
})
HARMLESS_CALLABLES = frozenset({"inspect.signature", "inspect.getfullargspec", "operator.itemgetter"})


def test_every_reexported_callable_from_outside_the_allowlist_is_refused_or_harmless():
    """The same scan for functions and classes: torch re-exported ctypes' `cast`, `pointer` and
    `c_void_p` (`torch.xpu`) and importlib's `find_spec`, which imports any module."""
    import types

    from grader.judging.audit import ALLOWED_MODULES

    unrefused = set()
    for modname, module in importable_modules():
        for name, value in list(vars(module).items()):
            origin = getattr(value, "__module__", None)
            if (name.startswith("_") or isinstance(value, types.ModuleType) or not callable(value)
                    or not isinstance(origin, str) or origin.split(".")[0] in ALLOWED_MODULES
                    or origin in HARMLESS_CALLABLE_MODULES or f"{origin}.{name}" in HARMLESS_CALLABLES):
                continue
            if audit_source(f"import {modname}\nX = {modname}.{name}\n").ok:
                unrefused.add(f"{modname}.{name} ({origin})")
    assert not unrefused, sorted(unrefused)
