"""Flattening process templates into the flat declarations the elaborator checks.

``process Train(self: Train) { ... }`` declares a template instantiated once per
value of its parameter's type.  Flattening turns it into ordinary declarations:

* the template's name becomes an actor (a lane of the diagrams);
* a local ``var x : V`` becomes ``var Train.x : Train -> V`` and a local clock
  ``clock c`` becomes ``clock Train.c : Train``; inside the template, ``x`` means
  ``Train.x[self]`` and ``x[i]`` means ``Train.x[self, i]``; outside it, the
  qualified name reads any instance's copy;
* ``location a, b, c`` becomes ``var Train.loc : Train -> {a, b, c} = a`` (the
  first location is the initial one), a location's invariant ``location b: x <= 5``
  a deadline active while the instance is there;
* ``event e(k: K) from a to b when g do s`` becomes
  ``event Train.e(self: Train, k: K) when loc[self] == a and g do s; loc[self] := b``;
* deadlines, invariants and properties gain the instance as their first binder.

Urgent and committed locations are left to the elaborator in a
:class:`~checker.language.ast.ProcessInfo` declaration.  The result is plain data:
this module knows nothing of lark or of the IR.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from checker.diagnostics import Diagnostic, Span, SpecError, did_you_mean
from checker.language import ast

LOC = "loc"
"""The name of a process's location variable (``Train.loc`` from outside)."""


class _Flattener:
    """Flattens the processes of one file, collecting diagnostics."""

    def __init__(self, spec: ast.SpecFile, source: str) -> None:
        self.spec = spec
        self.source = source
        self.diags: list[Diagnostic] = []
        self.global_names = {d.name for d in spec.decls if isinstance(d, ast.VarDecl)}
        for d in spec.decls:
            if isinstance(d, ast.ClockDecl):
                self.global_names.update(n for n, _ in d.names)
            elif isinstance(d, (ast.ParamDecl, ast.ConstDecl)):
                self.global_names.add(d.name)

    def error(self, code: str, message: str, span: Span, *notes: str) -> None:
        self.diags.append(Diagnostic(code, message, self.spec.path, span, tuple(notes)))

    def run(self) -> ast.SpecFile:
        out: list[ast.Decl] = []
        for d in self.spec.decls:
            if isinstance(d, ast.ProcessDecl):
                out.extend(_Process(self, d).flatten())
            else:
                out.append(d)
        if self.diags:
            raise SpecError(self.diags, self.source)
        return ast.SpecFile(self.spec.path, self.spec.model_name, self.spec.model_span,
                            tuple(out))


class _Process:
    """One template being flattened."""

    def __init__(self, owner: _Flattener, d: ast.ProcessDecl) -> None:
        self.owner = owner
        self.d = d
        self.name = d.name
        self.param = d.param
        self.locals: dict[str, Span] = {}
        self.locations: list[tuple[str, Span]] = []
        self.kinds: dict[str, str] = {}

    def error(self, code: str, message: str, span: Span, *notes: str) -> None:
        self.owner.error(code, message, span, *notes)

    def qualified(self, name: str) -> str:
        return f"{self.name}.{name}"

    # ---- references --------------------------------------------------------------
    def inst(self, span: Span) -> ast.Ref:
        assert self.param is not None
        return ast.Ref(span, self.param.name, span, None)

    def local_ref(self, name: str, span: Span, name_span: Span,
                  index: tuple[ast.Expr, ...] | None) -> ast.Ref:
        if self.param is None:
            return ast.Ref(span, self.qualified(name), name_span, index)
        return ast.Ref(span, self.qualified(name), name_span,
                       (self.inst(name_span), *(index or ())))

    def expr(self, e: ast.Expr, bound: frozenset[str]) -> ast.Expr:
        if isinstance(e, ast.Ref):
            index = tuple(self.expr(i, bound) for i in e.index) if e.index is not None else None
            if e.name in bound:
                return ast.Ref(e.span, e.name, e.name_span, index)
            if e.name == "self":
                if self.param is None:
                    self.error("KVR101", f"`self` in process `{self.name}`, which has no"
                               " instances", e.name_span,
                               f"help: give it a parameter, as in `process {self.name}(self:"
                               " T)`, or name its locals directly")
                    return e
                if index is not None:
                    self.error("KVR203", "`self` is not indexed", e.span)
                return self.inst(e.name_span)
            if e.name in self.locals:
                return self.local_ref(e.name, e.span, e.name_span, index)
            return ast.Ref(e.span, e.name, e.name_span, index)
        if isinstance(e, ast.Unary):
            return ast.Unary(e.span, e.op, self.expr(e.operand, bound))
        if isinstance(e, ast.Binary):
            return ast.Binary(e.span, e.op, self.expr(e.left, bound),
                              self.expr(e.right, bound), e.op_span)
        if isinstance(e, ast.Member):
            return ast.Member(e.span, self.expr(e.value, bound),
                              tuple(self.expr(o, bound) for o in e.options), e.negated)
        if isinstance(e, ast.Quant):
            inner = bound | {b.name for b in e.binders}
            return ast.Quant(e.span, e.kind, e.binders, self.expr(e.body, inner))
        return e

    def ref(self, r: ast.Ref, bound: frozenset[str]) -> ast.Ref:
        got = self.expr(r, bound)
        assert isinstance(got, ast.Ref)
        return got

    def stmt(self, s: ast.Stmt, bound: frozenset[str]) -> ast.Stmt:
        if isinstance(s, ast.Assign):
            return ast.Assign(s.span, self.ref(s.target, bound), self.expr(s.value, bound))
        if isinstance(s, ast.Reset):
            return ast.Reset(s.span, tuple(self.ref(c, bound) for c in s.clocks))
        if isinstance(s, ast.Assert):
            return ast.Assert(s.span, self.expr(s.cond, bound), s.message, s.message_span,
                              tuple(self.expr(h, bound) for h in s.holes), s.pieces)
        if isinstance(s, ast.If):
            return ast.If(s.span, self.expr(s.cond, bound), self.stmts(s.then, bound),
                          self.stmts(s.orelse, bound))
        if isinstance(s, ast.For):
            self.binders((s.binder,))
            return ast.For(s.span, s.binder, self.stmts(s.body, bound | {s.binder.name}))
        return s

    def stmts(self, ss: Sequence[ast.Stmt], bound: frozenset[str]) -> tuple[ast.Stmt, ...]:
        return tuple(self.stmt(s, bound) for s in ss)

    def binders(self, bs: Sequence[ast.Binder]) -> tuple[ast.Binder, ...]:
        """The instance binder followed by ``bs``, checked for clashes with locals."""
        for b in bs:
            if b.name in self.locals:
                self.error("KVR102", f"`{b.name}` hides the local `{b.name}` of process"
                           f" `{self.name}`; choose another name", b.span)
            if self.param is not None and b.name in (self.param.name, "self"):
                self.error("KVR102", f"`{b.name}` names the instance of process"
                           f" `{self.name}`; choose another name", b.span)
        return ((self.param,) if self.param is not None else ()) + tuple(bs)

    # ---- declarations -------------------------------------------------------------
    def declare_local(self, name: str, span: Span) -> bool:
        if name in self.locals:
            self.error("KVR102", f"`{name}` is already declared in process `{self.name}`"
                       f" (first declared at line {self.locals[name].line})", span)
            return False
        if name in self.owner.global_names:
            self.error("KVR102", f"the local `{name}` of process `{self.name}` hides the"
                       f" global `{name}`; choose another name", span)
            return False
        if name == "self":
            self.error("KVR102", "`self` names a process's instance and cannot be declared",
                       span)
            return False
        self.locals[name] = span
        return True

    def domain(self, dom: tuple[ast.TypeExpr, ...]) -> tuple[ast.TypeExpr, ...]:
        return ((self.param.type,) if self.param is not None else ()) + dom

    def flatten(self) -> list[ast.Decl]:
        d = self.d
        out: list[ast.Decl] = [ast.ActorDecl(d.span, ((self.name, d.name_span),))]
        self.declare_locals()
        if self.locations:
            first, sp = self.locations[0]
            enum = ast.EnumType(sp, tuple(self.locations))
            typ: ast.TypeExpr = (ast.MapType(sp, (self.param.type,), enum)
                                 if self.param is not None else enum)
            out.append(ast.VarDecl(sp, self.qualified(LOC), sp, typ, ast.Ref(sp, first, sp,
                                                                              None)))
        table: dict[type, Callable[[Any], list[ast.Decl]]] = {
            ast.VarDecl: self.flat_var,
            ast.ClockDecl: self.flat_clock,
            ast.LocationDecl: self.flat_location,
            ast.LocalEventDecl: self.flat_event,
            ast.DeadlineDecl: self.flat_deadline,
            ast.InvariantDecl: self.flat_invariant,
            ast.PropertyDecl: self.flat_property,
        }
        for item in d.items:
            flat = table.get(type(item))
            if flat is not None:
                out.extend(flat(item))
        out.append(ast.ProcessInfo(
            d.span, self.name, d.name_span, self.param,
            tuple(n for n, _ in self.locations if self.kinds[n] == "urgent"),
            tuple(n for n, _ in self.locations if self.kinds[n] == "committed")))
        return out

    def declare_locals(self) -> None:
        """Enter the local names and the locations (before any item is flattened: events
        may use locals declared after them)."""
        for item in self.d.items:
            if isinstance(item, ast.VarDecl):
                self.declare_local(item.name, item.name_span)
            elif isinstance(item, ast.ClockDecl):
                for n, sp in item.names:
                    self.declare_local(n, sp)
            elif isinstance(item, ast.LocationDecl):
                self.declare_locations(item)
        if self.locations:
            self.declare_local(LOC, self.locations[0][1])
        if self.param is not None and self.param.name in self.locals:
            self.error("KVR102", f"the instance `{self.param.name}` of process `{self.name}`"
                       " has the name of one of its locals", self.param.span)

    def declare_locations(self, item: ast.LocationDecl) -> None:
        """Enter the locations of a ``location`` declaration, reporting repeated ones."""
        for n, sp in item.names:
            if n in self.kinds:
                self.error("KVR102", f"location `{n}` is already declared in process"
                           f" `{self.name}`", sp)
                continue
            self.kinds[n] = item.kind
            self.locations.append((n, sp))

    def flat_var(self, item: ast.VarDecl) -> list[ast.Decl]:
        """A local variable as a global one indexed by the instance."""
        typ = item.type
        if isinstance(typ, ast.MapType):
            typ = ast.MapType(typ.span, self.domain(typ.domain), typ.value)
        elif self.param is not None:
            typ = ast.MapType(typ.span, (self.param.type,), typ)
        init = self.expr(item.init, frozenset()) if item.init is not None else None
        return [ast.VarDecl(item.span, self.qualified(item.name), item.name_span, typ, init)]

    def flat_clock(self, item: ast.ClockDecl) -> list[ast.Decl]:
        """Local clocks as global ones indexed by the instance."""
        return [ast.ClockDecl(item.span, tuple((self.qualified(n), sp) for n, sp in item.names),
                              self.domain(item.domain))]

    def flat_location(self, item: ast.LocationDecl) -> list[ast.Decl]:
        """The deadlines of a location's invariant, one per location named."""
        if item.invariant is None:
            return []
        return [self.location_deadline(item, n, sp) for n, sp in item.names]

    def flat_event(self, item: ast.LocalEventDecl) -> list[ast.Decl]:
        """A local event as a global one."""
        return [self.event(item)]

    def flat_deadline(self, item: ast.DeadlineDecl) -> list[ast.Decl]:
        """A local deadline, bound to the instance."""
        bound = self.bound(item.params)
        return [ast.DeadlineDecl(
            item.span, self.qualified(item.name) if item.name is not None else None,
            self.binders(item.params), self.expr(item.bound, bound),
            self.expr(item.cond, bound) if item.cond is not None else None)]

    def flat_invariant(self, item: ast.InvariantDecl) -> list[ast.Decl]:
        """A local invariant, bound to the instance."""
        bound = self.bound(item.params)
        return [ast.InvariantDecl(item.span, self.qualified(item.name), item.name_span,
                                  self.binders(item.params), self.expr(item.expr, bound))]

    def flat_property(self, item: ast.PropertyDecl) -> list[ast.Decl]:
        """A local property, bound to the instance."""
        bound = self.bound(item.params)
        return [ast.PropertyDecl(
            item.span, self.qualified(item.name), item.name_span,
            self.binders(item.params), self.expr(item.trigger, bound),
            self.expr(item.response, bound), item.within, item.always)]

    def bound(self, params: Sequence[ast.Binder]) -> frozenset[str]:
        names = {b.name for b in params}
        if self.param is not None and self.param.name != "self":
            names.add(self.param.name)
        return frozenset(names)

    def at(self, names: Sequence[tuple[str, Span]], span: Span) -> ast.Expr:
        """``loc[self] == a`` (or ``in {a, b}``)."""
        here = self.local_ref(LOC, span, span, None)
        opts = tuple(ast.Ref(sp, n, sp, None) for n, sp in names)
        if len(opts) == 1:
            return ast.Binary(span, "==", here, opts[0], span)
        return ast.Member(span, here, opts, False)

    def location_deadline(self, item: ast.LocationDecl, name: str, sp: Span) -> ast.DeadlineDecl:
        assert item.invariant is not None
        bound = self.bound(())
        return ast.DeadlineDecl(item.span, self.qualified(name), self.binders(()),
                                self.expr(item.invariant, bound), self.at([(name, sp)], sp))

    def check_locations(self, names: Sequence[tuple[str, Span]], what: str) -> bool:
        ok = True
        for n, sp in names:
            if not self.locations:
                self.error("KVR101", f"`{what}` names a location, but process `{self.name}`"
                           " declares none", sp,
                           "help: declare them, as in `location idle, busy`")
                return False
            if n not in self.kinds:
                self.error("KVR101", f"unknown location `{n}` of process `{self.name}`", sp,
                           *did_you_mean(n, list(self.kinds)))
                ok = False
        return ok

    def event(self, e: ast.LocalEventDecl) -> ast.EventDecl:
        bound = self.bound(e.params)
        params = self.binders(e.params)
        guard = self.expr(e.guard, bound) if e.guard is not None else None
        if e.sources and self.check_locations(e.sources, "from"):
            src = self.at(e.sources, e.sources[0][1].merge(e.sources[-1][1]))
            guard = src if guard is None else ast.Binary(guard.span, "and", src, guard,
                                                         guard.span)
        body = self.stmts(e.body, bound)
        if e.target is not None and self.check_locations([e.target], "to"):
            n, sp = e.target
            body = (*body, ast.Assign(sp, self.local_ref(LOC, sp, sp, None),
                                      ast.Ref(sp, n, sp, None)))
        sync = None
        if e.sync is not None:
            sync = ast.SyncClause(e.sync.direction, e.sync.channel, e.sync.channel_span,
                                  tuple(self.expr(a, bound) for a in e.sync.args), e.sync.span)
        return ast.EventDecl(e.span, self.name, self.d.name_span, e.name, e.name_span, params,
                             None, guard, body, sync, e.urgent, self.name, e.fair,
                             e.committed)


def flatten(spec: ast.SpecFile, source: str) -> ast.SpecFile:
    """``spec`` with every ``process`` replaced by flat declarations.

    Raises :class:`~checker.diagnostics.SpecError` for errors only visible here
    (unknown locations, locals that clash)."""
    if not any(isinstance(d, ast.ProcessDecl) for d in spec.decls):
        return spec
    return _Flattener(spec, source).run()
