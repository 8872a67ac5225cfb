"""Chat templates from model files, rendered in a sandbox that is bounded in time and size.

A chat template is Jinja code that comes with a downloaded model: it must not run Python (jinja2's
``ImmutableSandboxedEnvironment``, as transformers does), and it must not take the process down
either. Jinja's sandbox stops attribute tricks but not a template that loops ten million times or
builds a 100 MB string, so here, on top of it:

* ``include`` / ``import`` / ``extends`` are refused (a chat template is one self-contained file);
* every ``for`` loop iterates through a counter (one budget of iterations for the whole render,
  and a deadline), every call checks the deadline, ``range()`` is capped;
* every operation that can make a big value from small ones (``*``, ``**``, ``+``, ``%``, ``~``,
  block ``set``, the padding/format filters and string methods) is checked against a size cap
  before or right after it runs;
* the output is produced with ``generate()`` and stopped past a size cap.

Any failure is a ``ChatTemplateError`` with one line, naming ``--no-chat-template`` as the way out.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

MAX_TEMPLATE_CHARS = 1_000_000  # real templates are a few kB
MAX_OUTPUT_CHARS = 1_000_000
MAX_VALUE_LEN = 1_000_000  # any one string or list a template builds
MAX_ITERATIONS = 1_000_000  # loop iterations in one render, all loops together
MAX_RANGE = 100_000
MAX_INT_BITS = 100_000
DEADLINE_S = 3.0

# a %-format or str.format field asking for a huge width or precision, or a width taken from an argument
_BIG_FORMAT = re.compile(r"%[-#0 +]*(\*|\d{6,})|%[-#0 +]*\d*\.(\*|\d{6,})|\{[^{}]*:[^{}]*\d{6,}[^{}]*\}|\{[^{}]*:[^{}]*\{")


class ChatTemplateError(ValueError):
    """The model's chat template cannot be rendered (broken or unsafe)."""


class _Budget:
    def __init__(self) -> None:
        self.deadline = time.monotonic() + DEADLINE_S
        self.iterations = 0

    def tick(self, n: int = 1) -> None:
        self.iterations += n
        if self.iterations > MAX_ITERATIONS:
            raise ChatTemplateError(f"the model's chat template loops more than {MAX_ITERATIONS:,} times")
        if time.monotonic() > self.deadline:
            raise ChatTemplateError(f"the model's chat template ran for more than {DEADLINE_S:g} s")


def _check_len(value: Any) -> Any:
    if isinstance(value, str | bytes | list | tuple | dict) and len(value) > MAX_VALUE_LEN:
        raise ChatTemplateError(f"the model's chat template builds a value of {len(value):,} items (more than {MAX_VALUE_LEN:,})")
    return value


def _sized(value: Any) -> int | None:
    return len(value) if isinstance(value, str | bytes | list | tuple) else None


def _check_int_size(value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise ChatTemplateError("the model's chat template computes a number too large to handle")


def _sandbox_class() -> type:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class BoundedSandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset(["*", "**", "+", "%", "//", "/", "-"])

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.budget = _Budget()
            self.globals.pop("lipsum", None)  # lipsum(n=10**6) writes megabytes of text
            self.globals["range"] = self._range
            self.globals["_kvsim_iter"] = self._iterate
            self.globals["_kvsim_concat"] = self._concat
            self.filters = {name: self._bounded_filter(f) for name, f in self.filters.items()}

        # -------------------------------------------------- loops and ranges
        def _range(self, *args: int) -> Iterable[int]:
            self.budget.tick()
            for a in args:
                _check_int_size(a)
            rng = range(*args)
            if len(rng) > MAX_RANGE:
                raise ChatTemplateError(
                    f"the model's chat template asks for a range of {len(rng):,} numbers (at most {MAX_RANGE:,})"
                )
            return rng

        def _iterate(self, iterable: Any) -> Iterator[Any]:
            # every for loop of the template runs through here (see _BoundLoops)
            budget = self.budget
            try:
                iterator = iter(iterable)
            except TypeError:
                return iterable  # jinja reports the non-iterable itself
            return _Counted(iterator, budget)

        def _concat(self, parts: list[Any]) -> str:
            strings = [p if isinstance(p, str) else str(p) for p in parts]
            if sum(map(len, strings)) > MAX_VALUE_LEN:
                raise ChatTemplateError(f"the model's chat template builds a string longer than {MAX_VALUE_LEN:,}")
            return "".join(strings)

        def concat(self, parts: Iterable[str]) -> str:
            # jinja joins block sets, macro bodies and call blocks with environment.concat
            parts = list(parts)
            return self._concat(parts)

        # -------------------------------------------------- operators and calls
        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            self.budget.tick(0)
            if operator == "*":
                for seq, n in ((left, right), (right, left)):
                    size = _sized(seq)
                    if size is not None and isinstance(n, int) and size * max(n, 0) > MAX_VALUE_LEN:
                        raise ChatTemplateError("the model's chat template repeats a value into a huge one")
                if isinstance(left, int) and isinstance(right, int):
                    if left.bit_length() + right.bit_length() > MAX_INT_BITS:
                        raise ChatTemplateError("the model's chat template computes a number too large to handle")
            elif operator == "**":
                if (
                    isinstance(left, int)
                    and isinstance(right, int)
                    and abs(left) > 1
                    and right * max(1, left.bit_length()) > MAX_INT_BITS
                ):
                    raise ChatTemplateError("the model's chat template computes a number too large to handle")
            elif operator == "+":
                a, b = _sized(left), _sized(right)
                if a is not None and b is not None and a + b > MAX_VALUE_LEN:
                    raise ChatTemplateError(f"the model's chat template builds a value longer than {MAX_VALUE_LEN:,}")
            elif operator == "%" and isinstance(left, str) and _BIG_FORMAT.search(left):
                raise ChatTemplateError("the model's chat template formats with a huge width")
            try:
                result = self.binop_table[operator](left, right)
            except (ArithmeticError, ValueError) as exc:
                raise ChatTemplateError(f"the model's chat template failed ({type(exc).__name__}: {exc})") from exc
            return _check_len(result)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
            __self.budget.tick(0)
            owner = getattr(__obj, "__self__", None)
            name = getattr(__obj, "__name__", "")
            if isinstance(owner, str):
                _check_str_method(owner, name, args, kwargs)
            return _check_len(super().call(__context, __obj, *args, **kwargs))

        def wrap_str_format(self, value: Any) -> Any:
            # the sandbox hands templates a wrapper for str.format / format_map: check the format first
            owner = getattr(value, "__self__", None)
            if isinstance(owner, str) and _BIG_FORMAT.search(owner):
                raise ChatTemplateError("the model's chat template formats with a huge width")
            return super().wrap_str_format(value)

        def _bounded_filter(self, func: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(func)  # keeps jinja's pass_context / pass_environment marks
            def bounded(*args: Any, **kwargs: Any) -> Any:
                self.budget.tick(0)
                for a in (*args, *kwargs.values()):
                    if isinstance(a, int) and not isinstance(a, bool) and abs(a) > MAX_RANGE:
                        raise ChatTemplateError(
                            f"the model's chat template gives a filter the number {a} (at most {MAX_RANGE:,})"
                        )
                    if isinstance(a, str) and func.__name__ in ("do_format",) and _BIG_FORMAT.search(a):
                        raise ChatTemplateError("the model's chat template formats with a huge width")
                return _check_len(func(*args, **kwargs))

            return bounded

    return BoundedSandbox


class _Counted:
    """An iterator that charges one loop iteration per item to the render's budget."""

    def __init__(self, iterator: Iterator[Any], budget: _Budget) -> None:
        self._it, self._budget = iterator, budget

    def __iter__(self) -> _Counted:
        return self

    def __next__(self) -> Any:
        self._budget.tick()
        return next(self._it)


def _check_str_method(text: str, name: str, args: tuple, kwargs: dict) -> None:
    numbers = [a for a in (*args, *kwargs.values()) if isinstance(a, int) and not isinstance(a, bool)]
    if name in ("center", "ljust", "rjust", "zfill", "expandtabs") and any(n > MAX_VALUE_LEN for n in numbers):
        raise ChatTemplateError(f"the model's chat template pads a string to more than {MAX_VALUE_LEN:,}")
    if name == "expandtabs" and any(n > 64 for n in numbers):
        raise ChatTemplateError("the model's chat template expands tabs to a huge width")
    if name in ("format", "format_map") and _BIG_FORMAT.search(text):
        raise ChatTemplateError("the model's chat template formats with a huge width")
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        count = len(text) + 1 if args[0] == "" else text.count(args[0])
        if len(text) + count * max(0, len(args[1]) - len(args[0])) > MAX_VALUE_LEN:
            raise ChatTemplateError(f"the model's chat template builds a string longer than {MAX_VALUE_LEN:,}")


def _bound_loops(env: Any, ast: Any) -> Any:
    """Route every ``for`` loop's iterable and every ``~`` concatenation through the sandbox's counters."""
    from jinja2 import nodes
    from jinja2.visitor import NodeTransformer

    def call(name: str, arg: Any, lineno: int) -> Any:
        node = nodes.Call(nodes.Name(name, "load", lineno=lineno), [arg], [], None, None, lineno=lineno)
        return node.set_environment(env)

    class BoundLoops(NodeTransformer):
        def visit_For(self, node: Any) -> Any:
            node = self.generic_visit(node)
            node.iter = call("_kvsim_iter", node.iter, node.lineno)
            return node

        def visit_Concat(self, node: Any) -> Any:
            node = self.generic_visit(node)
            return call("_kvsim_concat", nodes.List(node.nodes, lineno=node.lineno).set_environment(env), node.lineno)

    return BoundLoops().visit(ast)


def render_chat_template(template: str, **context: Any) -> str:
    """Render a model's chat template with ``context``, bounded in time, loop iterations and size."""
    import jinja2
    from jinja2 import nodes

    if not isinstance(template, str):
        raise ChatTemplateError("the model's chat template is not text; use --no-chat-template")
    if len(template) > MAX_TEMPLATE_CHARS:
        raise ChatTemplateError(
            f"the model's chat template is {len(template):,} characters long (at most "
            f"{MAX_TEMPLATE_CHARS:,}); use --no-chat-template"
        )

    def raise_exception(message: str) -> None:
        raise jinja2.TemplateError(message)

    env = _sandbox_class()(
        keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
    )
    env.globals["raise_exception"] = raise_exception
    try:
        ast = env.parse(template)
        for kind, word in (
            (nodes.Include, "include"),
            (nodes.Import, "import"),
            (nodes.FromImport, "import"),
            (nodes.Extends, "extends"),
        ):
            if next(ast.find_all(kind), None) is not None:
                raise ChatTemplateError(
                    f"the model's chat template uses {{% {word} %}}, which kvsim does not allow "
                    "(a chat template must be one self-contained file); use --no-chat-template"
                )
        compiled = env.from_string(_bound_loops(env, ast))
        env.budget = _Budget()  # the clock starts with the render, not with parsing
        out: list[str] = []
        size = 0
        for chunk in compiled.generate(**context):
            size += len(chunk)
            if size > MAX_OUTPUT_CHARS:
                raise ChatTemplateError(
                    f"the model's chat template writes more than {MAX_OUTPUT_CHARS:,} characters; use --no-chat-template"
                )
            out.append(chunk)
            env.budget.tick(0)
        return "".join(out)
    except ChatTemplateError:
        raise
    except RecursionError:
        raise ChatTemplateError("the model's chat template recurses too deeply; use --no-chat-template") from None
    except MemoryError:
        raise ChatTemplateError("the model's chat template needs more memory than there is; use --no-chat-template") from None
    except Exception as exc:  # jinja2.TemplateError, and what a template's own operations raise
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ChatTemplateError(f"the model's chat template failed ({message}); use --no-chat-template") from exc
