"""The hybrid automaton (gillespie2005 Sec 4, Fig 13) as a graph: modes as nodes (name, active
constraints, degrees of freedom), switching conditions as edges (the condition f and its
direction, "approaching" when f is a gap in the configuration alone, "level" when it is a level
of a force, speed, input or discrete variable, the reset map's name, impact or not), the Zeno
handover and the initial reset map (eq 20) marked; written as Mermaid text and as SVG.

Where each reset map jumps is read from its source (``ast``): the ``Jump(mode, ...)`` calls it
makes, following the local functions it calls and, in a shared ``transition(ctx, guard)``, only
the branches that test for that guard's name.  A target chosen at run time that cannot be read
statically is the node "?" (say, a fence mode numbered by the announcement)."""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from dataclasses import dataclass
from pathlib import Path

import sympy as sp


@dataclass
class Edge:
    source: object          # mode id, or "start"
    target: object          # mode id, or "?"
    guard: str
    condition: str = ""
    kind: str = ""          # approaching / level / zeno / initial
    reset: str = ""
    impact: bool = False


@dataclass
class Node:
    id: object
    name: str
    constraints: tuple
    dof: int


def _source_tree(func):
    """(the ast node of ``func``'s definition or lambda, its parameter names) or (None, ())."""
    code = getattr(func, "__code__", None)
    if code is None:
        return None, ()
    try:
        tree = _parsed(inspect.getsourcefile(func))
    except (OSError, TypeError, SyntaxError):
        return None, ()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.Lambda)) and node.lineno <= code.co_firstlineno \
                <= getattr(node, "end_lineno", node.lineno) and (
                isinstance(node, ast.Lambda) or node.name == code.co_name):
            if isinstance(node, ast.Lambda) and code.co_name != "<lambda>":
                continue
            if isinstance(node, ast.FunctionDef) and node.lineno != code.co_firstlineno and \
                    not node.decorator_list:
                continue
            return node, [a.arg for a in node.args.args]
    return None, ()


@functools.lru_cache(maxsize=64)
def _parsed(path):
    return ast.parse(Path(path).read_text())


def _lookup(func, name):
    """The value ``name`` has in ``func``: a closure cell or a global; None if unknown."""
    code = func.__code__
    if name in code.co_freevars and func.__closure__:
        try:
            return func.__closure__[code.co_freevars.index(name)].cell_contents
        except ValueError:
            return None
    return func.__globals__.get(name)


def jumps(func, guard=None, depth=0, bound=None) -> list:
    """[(target mode or "?", impact)] of the ``Jump`` calls ``func`` can make for ``guard``;
    ``bound``: parameter name -> the modes the caller passed for it (a helper
    ``heel_strike(swing, ctx, keep, mode)`` that jumps to its argument ``mode``)."""
    given = bound or {}
    if hasattr(func, "mode_id") and not hasattr(func, "__code__"):        # EnterMode
        return [(func.mode_id, False)]
    node, params = _source_tree(func)
    if node is None or depth > 3:
        return [("?", False)]
    guard_param = params[1] if len(params) > 1 else None
    out = []

    def resolve(expr):
        if isinstance(expr, ast.Constant) and isinstance(expr.value, int):
            return [expr.value]
        if isinstance(expr, ast.Name):
            if expr.id in given:
                return given[expr.id]
            v = _lookup(func, expr.id)
            if isinstance(v, int):
                return [v]
            bound = [n.value for n in ast.walk(node) if isinstance(n, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == expr.id for t in n.targets)]
            got = []
            for b in bound:
                if isinstance(b, ast.Call) and isinstance(b.func, ast.Name):
                    f = _lookup(func, b.func.id)
                    if callable(f):
                        got += _returns(f)
            return got or ["?"]
        if isinstance(expr, ast.IfExp):
            return resolve(expr.body) + resolve(expr.orelse)
        return ["?"]

    def visit(n):
        if isinstance(n, ast.If) and guard is not None and _tests(n.test, guard_param):
            if _tests(n.test, guard_param) == guard:
                for c in n.body:
                    visit(c)
            for c in n.orelse:
                visit(c)
            return
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            if n.func.id == "Jump":
                first = n.args[0] if n.args else next(
                    (k.value for k in n.keywords if k.arg == "mode"), None)
                imp = next((k.value for k in n.keywords if k.arg == "impact"), None)
                impact = imp is not None and not (isinstance(imp, ast.Constant) and not imp.value)
                out.extend((t, impact) for t in resolve(first))
            else:
                f = _lookup(func, n.func.id)
                if inspect.isfunction(f) and f is not func and f.__module__ == func.__module__:
                    names = f.__code__.co_varnames[:f.__code__.co_argcount]
                    passed = dict(zip(names, n.args))
                    passed.update({k.arg: k.value for k in n.keywords if k.arg})
                    args = {k: [m for m in resolve(v) if m != "?"] for k, v in passed.items()}
                    out.extend(j for j in jumps(f, None, depth + 1,
                                                {k: v for k, v in args.items() if v})
                               if j[0] != "?")
        for c in ast.iter_child_nodes(n):
            visit(c)

    visit(node.body if isinstance(node, ast.Lambda) else ast.Module(body=node.body,
                                                                      type_ignores=[]))
    return list(dict.fromkeys(out))


def _tests(test, param):
    """The guard name ``test`` compares ``param`` with (``guard == "name"``), else None."""
    if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and \
            test.left.id == param and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) \
            and isinstance(test.comparators[0], ast.Constant):
        return test.comparators[0].value
    return None


def _returns(f):
    node, _ = _source_tree(f)
    if node is None:
        return []
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Return) and n.value is not None:
            if isinstance(n.value, ast.Name) and isinstance(_lookup(f, n.value.id), int):
                out.append(_lookup(f, n.value.id))
            elif not (isinstance(n.value, ast.Constant) and n.value.value is None):
                out.append("?")
    return out


def reset_name(f, mode_names=None) -> str:
    """The name a modeller reads for reset map ``f``: a function's own name; a lambda's name
    from its source: the name it is assigned to (``caught = lambda ctx: ...``), the function
    that returns it (``def knee_strike(...): return lambda ctx: ...``) or that it calls
    (``lambda ctx: heel_strike(...)``), else what it does: "enter free, set contact" for
    ``lambda ctx: Jump(FREE, {"contact": 0.0})`` (the modes it enters, by name, and the
    discrete variables it sets).  ``EnterMode`` (the default initial reset map) is "enter
    <mode>"."""
    names = mode_names or {}
    if hasattr(f, "mode_id") and not hasattr(f, "__code__"):
        return f"enter {names.get(f.mode_id, f.mode_id)}"
    name = getattr(f, "__name__", type(f).__name__)
    if name != "<lambda>":
        return name
    node, _ = _source_tree(f)
    if node is None:
        return "an unnamed reset map"
    parent = _parents(inspect.getsourcefile(f)).get(node)
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and \
            isinstance(parent.targets[0], ast.Name):
        return parent.targets[0].id
    if isinstance(parent, ast.Return):
        outer = f.__qualname__.rsplit(".<locals>.", 2)
        if len(outer) > 1:
            return outer[-2].rsplit(".", 1)[-1]
    body = node.body
    if isinstance(body, ast.Call) and isinstance(body.func, ast.Name) and body.func.id != "Jump":
        return body.func.id
    targets = [t for t, _ in jumps(f, None)]
    sets = [k.value for c in ast.walk(body) if isinstance(c, ast.Call)
            and isinstance(c.func, ast.Name) and c.func.id == "Jump"
            for d in c.args[1:2] + [k.value for k in c.keywords if k.arg == "discrete"]
            if isinstance(d, ast.Dict) for k in d.keys
            if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    text = "enter " + " or ".join(str(names.get(t, t)) for t in dict.fromkeys(targets))
    return text + (", set " + ", ".join(dict.fromkeys(sets)) if sets else "")


@functools.lru_cache(maxsize=64)
def _parents(path):
    """child node -> parent node of the parsed file ``path`` (``_parsed``)."""
    return {c: n for n in ast.walk(_parsed(path)) for c in ast.iter_child_nodes(n)}


def automaton_graph(sc) -> tuple:
    """(nodes, edges) of scenario ``sc``'s automaton."""
    aut = sc.automaton
    m = aut.model
    qs = {str(s) for s in m.q}
    titles = {k: mode.name for k, mode in aut.modes.items()}
    nodes = [Node(k, mode.name, tuple(mode.constraints), len(m.u) - len(mode.constraints))
             for k, mode in aut.modes.items()]
    edges = []
    fallback = getattr(aut.transition, "fallback", aut.transition)
    for k, mode in aut.modes.items():
        for g in mode.guards:
            reset = g.reset or fallback
            if g.expr is None:
                cond, kind = "", "level"
            else:
                e = sp.sympify(g.expr)
                names = {str(getattr(s, "func", s)) for s in e.free_symbols | e.atoms(
                    sp.core.function.AppliedUndef)}
                kind = "approaching" if names & qs and not names & (
                    {str(s) for s in m.u + m.forces + m.inputs} | set(aut.discrete)
                    | {"lambda_" + c for c in aut.constraints}) else "level"
                cond = f"{_short(e)} {'falls' if g.direction < 0 else 'rises'} through 0"
            targets = jumps(reset, g.name) if reset is not None else [("?", False)]
            for target, impact in targets:
                edges.append(Edge(k, target, g.name, cond, kind, reset_name(reset, titles),
                                  impact))
    if aut.zeno is not None:
        sources = sorted({e.source for e in edges if e.impact}, key=str)
        for target, _ in jumps(aut.zeno, None):
            for s in sources:
                edges.append(Edge(s, target, "Zeno", "impacts accumulate", "zeno",
                                  reset_name(aut.zeno, titles), True))
    for target, _ in jumps(aut.initial, None):
        edges.append(Edge("start", target, "initial", "", "initial",
                          reset_name(aut.initial, titles)))
    if any(e.target == "?" for e in edges):
        nodes.append(Node("?", "chosen at run time", (), -1))
    return nodes, edges


def _short(e, width=40):
    t = sp.Symbol("t")
    e = e.xreplace({f: sp.Symbol(str(f.func)) for f in e.atoms(sp.core.function.AppliedUndef)
                    if f.args == (t,)})
    text = sp.sstr(e).replace(" ", "")
    text = text.replace("+", " + ").replace("-", " - ").replace(" - ", "-", 1) \
        if text.startswith("-") else text.replace("+", " + ").replace("-", " - ")
    return text if len(text) <= width else text[:width - 3] + "..."


def _nid(k):
    return "start" if k == "start" else ("unknown" if k == "?" else f"m{k}")


def _node_label(n):
    if n.id == "?":
        return "? chosen at run time"
    cons = ", ".join(n.constraints) or "no constraints"
    return f"{n.id} {n.name}<br/>{n.dof} dof<br/>{cons}"


def _edge_label(e):
    bits = [e.guard]
    if e.condition:
        bits.append(e.condition)
    if e.kind in ("approaching", "level"):
        bits.append(e.kind)
    if e.reset:
        bits.append(f"reset {e.reset}")
    if e.impact:
        bits.append("IMPACT")
    return "<br/>".join(bits).replace('"', "'").replace("|", "/")


def mermaid(sc) -> str:
    """The automaton as a Mermaid flowchart (GitHub renders it in Markdown)."""
    nodes, edges = automaton_graph(sc)
    lines = ["flowchart LR", "    start(( ))"]
    for n in nodes:
        lines.append(f'    {_nid(n.id)}(["{_node_label(n)}"])')
    for e in edges:
        arrow = "-.->" if e.kind in ("zeno", "initial") else ("==>" if e.impact else "-->")
        label = "Zeno handover" if e.kind == "zeno" else _edge_label(e)
        text = f'|"{label}"|' if e.kind != "initial" else ""
        lines.append(f"    {_nid(e.source)} {arrow}{text} {_nid(e.target)}")
    return "\n".join(lines) + "\n"


def text(sc) -> str:
    """The automaton as plain text (``embed-fmu info``)."""
    nodes, edges = automaton_graph(sc)
    out = [f"hybrid automaton of {sc.name}: {len(nodes)} modes"]
    for n in nodes:
        if n.id != "?":
            out.append(f"  mode {n.id} {n.name}: {n.dof} dof, constraints "
                       f"{', '.join(n.constraints) or '-'}")
    for e in edges:
        out.append(f"  {e.source} -> {e.target}: " + textwrap.shorten(
            _edge_label(e).replace("<br/>", "; "), 110))
    return "\n".join(out)
