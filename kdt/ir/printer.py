"""Human-readable text of a kernel's IR (``CompiledKernel.print_ir``)."""
from . import nodes as ir

_PREC = {"or": 1, "and": 2, "not": 3, "cmp": 4, "|": 5, "^": 6, "&": 7, "<<": 8, ">>": 8, "+": 9,
         "-": 9, "*": 10, "/": 10, "//": 10, "%": 10, "unary": 11, "atom": 12, "ifx": 0}


def expr_str(e, parent: int = 0) -> str:
    """Python-like text of a scalar expression, parenthesised only where needed."""
    t = type(e)
    if t is ir.Const:
        text, prec = repr(e.value), _PREC["atom"]
    elif t is ir.Var:
        text, prec = e.name, _PREC["atom"]
    elif t is ir.JobId:
        text, prec = "job_id", _PREC["atom"]
    elif t is ir.Unary:
        prec = _PREC["not"] if e.op == "not" else _PREC["unary"]
        text = ("not " if e.op == "not" else e.op) + expr_str(e.operand, prec)
    elif t is ir.Binary:
        prec = _PREC[e.op]
        text = f"{expr_str(e.left, prec)} {e.op} {expr_str(e.right, prec + 1)}"
    elif t is ir.Compare:
        prec = _PREC["cmp"]
        text = f"{expr_str(e.left, prec + 1)} {e.op} {expr_str(e.right, prec + 1)}"
    elif t is ir.BoolOp:
        prec = _PREC[e.op]
        text = f" {e.op} ".join(expr_str(v, prec + 1) for v in e.values)
    elif t is ir.IfExp:
        prec = _PREC["ifx"]
        text = f"{expr_str(e.then, 1)} if {expr_str(e.cond, 1)} else {expr_str(e.orelse, 1)}"
    else:
        raise TypeError(f"not an expression: {e!r}")
    return f"({text})" if prec < parent else text


def view_str(v: ir.View, storages) -> str:
    """``name[offset; sizes; strides]`` for a view."""
    st = storages[v.storage]
    label = st.name if st.kind == "io" else (st.name or f"spm{st.id}")
    sizes = ", ".join(expr_str(s) for s in v.sizes)
    strides = ", ".join(str(s) for s in v.strides)
    return f"{label}[+{expr_str(v.offset)}; ({sizes}); ({strides})]"


def kernel_str(k: ir.Kernel) -> str:
    """The whole kernel: header, storages and the statement tree."""
    out = [f"kernel {k.name}: {k.num_jobs} job(s), {k.num_slots} slot(s)"]
    for st in k.storages:
        label = st.name if st.kind == "io" else (st.name or f"spm{st.id}")
        out.append(f"  {st.kind} {label}: {st.dtype}{list(st.shape)}")
    _block(k.body, k.storages, 1, out)
    return "\n".join(out)


def _block(stmts, storages, depth, out):
    pad = "  " * depth
    for s in stmts:
        t = type(s)
        if t is ir.Assign:
            out.append(f"{pad}{s.name} = {expr_str(s.value)}")
        elif t is ir.For:
            out.append(f"{pad}for {s.name} in range({expr_str(s.start)}, {expr_str(s.end)}):")
            _block(s.body, storages, depth + 1, out)
        elif t is ir.Raise:
            out.append(f"{pad}raise {s.error}({s.message!r})  # line {s.line}")
        elif t is ir.If:
            out.append(f"{pad}if {expr_str(s.cond)}:")
            _block(s.then, storages, depth + 1, out)
            if s.orelse:
                out.append(f"{pad}else:")
                _block(s.orelse, storages, depth + 1, out)
        else:
            args = []
            for name, v in s.args.items():
                if isinstance(v, ir.View):
                    args.append(f"{name}={view_str(v, storages)}")
                elif isinstance(v, (ir.Const, ir.Var, ir.JobId, ir.Unary, ir.Binary, ir.Compare,
                                    ir.BoolOp, ir.IfExp)):
                    args.append(f"{name}={expr_str(v)}")
                else:
                    args.append(f"{name}={v!r}")
            out.append(f"{pad}{s.op}({', '.join(args)})  # line {s.line}")
