"""The static audit's policy: what a submission may import, name and read (``grader.judging.audit``
applies it; nothing here is code that decides).

Every table is one kind of rule: :data:`RULES` (the rule ids a violation carries), :data:`ALLOWED_MODULES`
and the standard library's allowed parts, :data:`BANNED_NAMES` (builtins), :data:`DENIED_ROUTES` and
:data:`DENIED_ATTRIBUTES` (file, native-code and escape routes), the introspection attributes, the
decorators and dunder stores the audit lets pass, and the shapes it follows (aliases, attribute strings,
top-level statements). Tightening the audit is a change here; following a new syntax is one in the
``grader.judging.audit`` package (the rules module of its concern: ``names``, ``attributes``, ``calls``,
``patterns``).
"""
from __future__ import annotations

import ast
import re

#: Rule id -> what it forbids. Every :class:`Violation` carries one of these ids.
RULES: dict[str, str] = {
    "syntax": "the file does not parse as Python 3.11",
    "size": "more syntax nodes than the audit reads (MAX_AST_NODES, about 4,000 lines of kernel code)",
    "encoding": "a coding declaration other than UTF-8 (the import would read other code than the audited text)",
    "import": "import of a module outside ALLOWED_MODULES, or a relative import",
    "import-star": "`from M import *`, which binds names the audit cannot see",
    "top-level": "module-level code other than imports, def/class, assignments, string literals "
                 "and `if __name__ == \"__main__\":`",
    "dunder": "access to a dunder attribute or name (`x.__dict__`, `__builtins__`, `case C(__class__=c)`, "
              "`'__globals__'`)",
    "banned-name": "use of a builtin listed in BANNED_NAMES (eval, exec, getattr, open, ...)",
    "denied-route": "a file, native-code or escape route: DENIED_ROUTES, DENIED_ATTRIBUTES, a name "
                    "outside the public API of an allowed standard-library module, or a positional class "
                    "pattern (it reads the attributes `__match_args__` names)",
    "private-attribute": "an `_`-prefixed attribute of an imported module (`torch._C`)",
    "introspection": "a frame, generator, coroutine, traceback or code attribute (`g.gi_frame.f_builtins`, "
                     "`case object(gi_frame=f)`), which reaches the builtins and the judge's own frames",
    "module-assign": "assignment, augmented assignment, deletion or setattr of an attribute or item "
                     "of an imported module",
    "module-alias": "an imported module handed around as a plain value, out of the audit's sight",
}

#: Top-level packages a judged import may come from (their submodules included).
ALLOWED_MODULES: frozenset[str] = frozenset({
    "kdt", "torch", "numpy", "math", "typing", "dataclasses", "functools", "itertools", "collections",
    "enum", "abc",
})

#: Standard-library modules whose attributes are limited to their public API (``__all__``, or the
#: public non-module names when there is none): their re-exported imports (``typing.sys``,
#: ``enum.bltns``, ``dataclasses.inspect``) are escape hatches.
STDLIB_MODULES: tuple[str, ...] = (
    "collections.abc", "math", "typing", "dataclasses", "functools", "itertools", "collections", "enum",
    "abc",
)

#: Public submodules that are not in their package's ``__all__``.
STDLIB_SUBMODULES: dict[str, frozenset[str]] = {"collections": frozenset({"abc"})}

#: Functions the judge calls by name: always judged, even when the main block also calls them.
ENTRY_POINTS: frozenset[str] = frozenset({"get_kernel"})

#: Builtins that run code from strings, reach files or namespaces, or talk to the terminal.
BANNED_NAMES: dict[str, str] = {
    "eval": "runs code from a string",
    "exec": "runs code from a string",
    "compile": "turns a string into code",
    "open": "reads or writes files",
    "__import__": "imports any module by name",
    "getattr": "reads attributes by string, around the attribute rules",
    "setattr": "writes attributes by string, around the attribute rules",
    "delattr": "deletes attributes by string, around the attribute rules",
    "globals": "exposes the module namespace as a dict",
    "vars": "exposes an object's namespace as a dict",
    "locals": "exposes a namespace as a dict",
    "breakpoint": "starts a debugger",
    "input": "reads the judge's standard input",
    "help": "imports modules by name and may start a pager",
}

#: Canonical dotted paths (after import aliases and re-exports are resolved, so ``np.load`` is
#: ``numpy.load``) that reach files, native code, code generation or the network. A path is denied
#: when it is one of these or lies below one.
DENIED_ROUTES: dict[str, str] = {
    "torch.load": "unpickles a file (arbitrary code)",
    "torch.save": "writes a file",
    "torch.from_file": "maps a file",
    "torch.serialization": "reads and writes pickled files",
    "torch.ops": "loads and calls native operator libraries",
    "torch.classes": "loads native classes",
    "torch.library": "defines and loads native operators",
    "torch.utils": "builds C++ extensions, runs code strings, downloads and writes files",
    "torch.hub": "downloads and runs code",
    "torch.package": "packages and imports code",
    "torch.jit": "compiles code and loads archives",
    "torch.compile": "generates and builds native code",
    "torch.compiler": "loads compiled artifacts (`load_compiled_function` unpickles what an object's `read()` "
                      "returns, with no restriction on the classes)",
    "torch.fx": "generates and executes Python code",
    "torch.export": "serializes programs to files",
    "torch.onnx": "writes model files",
    "torch.profiler": "writes trace files",
    "torch.autograd.profiler": "writes trace files",
    "torch.testing": "runs test infrastructure with subprocesses and files",
    "torch.multiprocessing": "starts processes",
    "torch.distributed": "opens network connections",
    "torch.xpu": "re-exports ctypes (`cast`, `pointer`, `c_void_p`: raw memory)",
    "torch.overrides": "hands out torch's modules as plain values (the keys of `get_overridable_functions()`), "
                       "out of the audit's sight",
    "torch.backends": "wraps its modules (`PropModule.m`: the module object itself), whose private internals "
                      "import any module by a string built at run time",
    "numpy.random.bit_generator": "re-exports threading's RLock and the random module's internals",
    "numpy.load": "reads files (pickles included)",
    "numpy.save": "writes files",
    "numpy.savez": "writes files",
    "numpy.savez_compressed": "writes files",
    "numpy.savetxt": "writes files",
    "numpy.loadtxt": "reads files",
    "numpy.genfromtxt": "reads files",
    "numpy.fromfile": "reads files",
    "numpy.fromregex": "reads files",
    "numpy.memmap": "maps files",
    "numpy.DataSource": "opens files and URLs",
    "numpy.ctypeslib": "loads native libraries",
    "numpy.lib": "reads and writes file formats and makes unchecked memory views (stride_tricks)",
    "numpy.core": "is an alias of the private numpy._core",
    "numpy.f2py": "builds native code",
    "numpy.distutils": "builds native code",
    "numpy.testing": "builds extensions for tests",
}

#: Attribute names denied on any receiver (and as imported names): standard-library modules that
#: packages re-export (``torch.os``, ``typing.sys``), array/tensor methods that reach files, and the
#: typing helpers that evaluate strings.
DENIED_ATTRIBUTES: dict[str, str] = {
    **{name: "is a re-exported standard-library module outside the allowlist" for name in (
        "os", "sys", "builtins", "subprocess", "importlib", "ctypes", "pickle", "marshal", "shutil",
        "socket", "runpy", "inspect", "pathlib", "posix", "operator",
        # re-exported by torch today (`torch.cuda.graphs.gc`, `torch.storage.io`, `torch.cuda.traceback`,
        # `torch.cuda.tunable.mp`, `torch.overrides.types`, ...): gc reaches every object (the audit
        # hook's included), io and linecache open files, traceback and threading hand out frames
        "gc", "io", "glob", "traceback", "threading", "multiprocessing", "mp", "concurrent", "asyncio",
        "types", "typing_extensions", "logging", "platform", "signal", "tempfile", "mmap", "fcntl", "pty",
        "linecache", "tokenize", "pkgutil", "zipimport", "sysconfig", "site", "faulthandler", "atexit",
        "pdb", "bdb", "urllib", "http", "ssl", "ftplib", "webbrowser",
    )},
    **{name: "is the name of a denied submodule (`torch.package`, `torch.overrides`, `numpy.f2py`, ...), "
             "refused on any object so that a module held as a plain value cannot reach it" for name in (
        "package", "hub", "jit", "serialization", "library", "onnx", "fx", "distributed", "profiler", "testing",
        "backends", "xpu", "overrides", "compiler", "ctypeslib", "f2py", "distutils",
    )},
    "find_spec": "imports any module by name (`importlib.util.find_spec`, re-exported; its loader loads it)",
    "ThreadpoolController": "loads and calls native libraries (threadpoolctl, through ctypes)",
    "get_annotations": "evaluates string annotations (eval) with eval_str=True",
    "evaluate_forward_ref": "evaluates a string (eval)",
    "attrgetter": "reads attributes named by strings, which the audit cannot see",
    "methodcaller": "calls methods named by strings, which the audit cannot see",
    "tofile": "writes a file",
    "fromfile": "reads a file",
    "from_file": "maps a file",
    "dump": "writes an object to a file (`ndarray.dump` pickles it)",
    "get_type_hints": "evaluates string annotations (eval)",
    "ForwardRef": "evaluates a string (eval)",
    "singledispatch": "its register() evaluates string annotations (eval)",
    "singledispatchmethod": "its register() evaluates string annotations (eval)",
    "update_wrapper": "reads and writes the attributes its `assigned` and `updated` strings name (getattr and "
                      "setattr around the attribute rules)",
    "attrname": "names the attribute a `functools.cached_property` reads from an instance, a string the audit "
                "cannot check",
}

#: Helpers that read and write attributes named by strings, allowed only in their fixed form: called at
#: once with the one object they copy from, the result applied at once (``@functools.wraps(f)``); any
#: other use (``wraps(f, assigned=...)``, ``w = wraps``, ``partial(wraps(f), assigned=...)``) is a
#: getattr by string.
FIXED_FORM_HELPERS: frozenset[str] = frozenset({"functools.wraps"})

#: Re-exported package names followed to their canonical path (``a.b.torch.load`` is ``torch.load``).
#: ``abc`` and ``typing`` are left out: ``collections.abc`` and ``numpy.typing`` are packages of
#: their own (typing's string-evaluating helpers are in DENIED_ATTRIBUTES instead).
REEXPORTED_PACKAGES: dict[str, str] = {
    **{name: name for name in ALLOWED_MODULES - {"abc", "typing"}}, "np": "numpy",
}

#: Decorators that only wrap or register a function without calling it when applied, so a function
#: that only the main block reaches may carry them and still be skipped.
PASSIVE_DECORATORS: frozenset[str] = frozenset({
    "staticmethod", "classmethod", "property", "functools.cache", "functools.lru_cache",
    "functools.wraps", "abc.abstractmethod", "typing.overload", "typing.final", "torch.no_grad",
    "torch.inference_mode", "dataclasses.dataclass",
})

#: How far module aliases are followed (``t = torch``; ``u = t.nn``): at most this many imported
#: values per name, and paths of at most this many dots. Beyond that the alias is a ``module-alias``.
MAX_ALIAS_BINDINGS = 32
MAX_ALIAS_DEPTH = 12

#: The audit runs in the trusted judge, so its work is bounded whatever the file: alias assignments are
#: propagated at most this many times in all (the rest are ``module-alias``), it stops checking after
#: this many violations (the file is refused anyway; the report says so), and a source line is quoted
#: in a violation up to this many characters.
MAX_ALIAS_STEPS = 2_000
MAX_AST_NODES = 50_000  # syntax nodes the audit reads; the baseline example has 1,416, the optimized 3,869
MAX_VIOLATIONS = 100
MAX_QUOTED_CHARS = 200

#: Dunder names a module or class may define (stores only; reading any dunder name is a violation).
ALLOWED_DUNDER_STORES: frozenset[str] = frozenset({"__all__", "__slots__", "__version__", "__author__"})

#: Attributes of frames, generators, coroutines, async generators, tracebacks and code objects, on any
#: object: no kernel needs them, and they lead to the builtins (``f_builtins``) and the judge's frames.
INTROSPECTION_ATTRIBUTES: frozenset[str] = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "gi_suspended",
    "cr_frame", "cr_code", "cr_await", "cr_origin", "cr_running",
    "ag_frame", "ag_code", "ag_await", "ag_running",
    "f_back", "f_builtins", "f_globals", "f_locals", "f_code", "f_trace", "f_lasti", "f_lineno",
    "tb_frame", "tb_next", "tb_lasti", "tb_lineno",
    "co_code", "co_consts", "co_names", "co_varnames", "co_filename", "co_lines", "co_positions",
    "func_globals", "func_code", "im_func", "im_self",
})

#: Builtin classes whose one positional class pattern matches the subject itself (``case int(n):``)
#: instead of reading the attributes ``__match_args__`` names; any other class's positional
#: sub-patterns are refused, as the audit cannot see which attributes they read.
SELF_MATCHING_CLASSES: frozenset[str] = frozenset({
    "bool", "bytearray", "bytes", "dict", "float", "frozenset", "int", "list", "set", "str", "tuple",
})

#: A string that spells attribute names: one identifier or a dotted path (``'gi_frame'``,
#: ``'a.f_globals'``, what ``getattr``, ``attrgetter``, ``functools.update_wrapper(assigned=...)``,
#: ``cached_property.attrname`` and ``__match_args__`` take).
ATTRIBUTE_STRING = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")

#: Statements allowed at top level besides string literals and the main block.
TOP_LEVEL_STATEMENTS: tuple[type[ast.stmt], ...] = (
    ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
    ast.AnnAssign,
)
