"""A board's season crosses a module boundary as a `Season` (core/seasons.py),
never as its name: parsed once at the edge where text comes in, passed
whole, and turned back into text only at the edges that store or send it.

The edges are named here, each with what its text is; everywhere else a
public function's parameter that holds a season (its name says `season`)
may not be annotated as text (`str`, `list[str]`, `Season | str`...).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "laurels"

# The text form's edges: where a season's name is what goes in or out.
EDGES = {
    "board/keys.py": "Redis keys are built from names (and read back from them)",
    "core/seasons.py": "the parsers: names in, Seasons out",
    "core/shapes.py": "response bodies: the wire",
    "board/lua_args.py": "a Lua script's arguments are text",
    "board/hints.py": "hints are Pub/Sub messages naming their season",
    "board/subscribe.py": "the Pub/Sub subscription follows seasons by the names hints carry",
    "db/": "SQL: parameters and rows hold names",
    "api/": "URLs and bodies",
    "client/": "the Python client speaks the wire",
    "cli/": "the command line parses names",
}

TEXT = {"str", "str | None", "list[str]", "set[str]", "tuple[str, ...]", "Sequence[str]",
        "Iterable[str]", "Season | str", "str | Season", "list[Season | str]"}


def _is_edge(rel: str) -> bool:
    return any(rel == e or (e.endswith("/") and rel.startswith(e)) for e in EDGES)


def seasons_as_text() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if _is_edge(rel):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if node.name.startswith("_") and node.name != "__init__":
                continue  # the module's own (its boundary is not crossed)
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if "season" in arg.arg and arg.annotation is not None \
                        and ast.unparse(arg.annotation) in TEXT:
                    found.append(f"{rel}:{node.lineno} {node.name}({arg.arg}: "
                                 f"{ast.unparse(arg.annotation)})")
    return found


def test_a_season_crosses_a_module_boundary_as_a_season() -> None:
    assert seasons_as_text() == []


def test_the_check_finds_a_season_passed_as_text(tmp_path: Path) -> None:
    """The walk above sees what it looks for (a check that cannot fail
    checks nothing)."""
    tree = ast.parse("async def apply(season: str, seasons: list[str]) -> None: ...")
    node = tree.body[0]
    assert isinstance(node, ast.AsyncFunctionDef)
    assert [ast.unparse(a.annotation) for a in node.args.args
            if a.annotation is not None] == ["str", "list[str]"]
    assert all(ast.unparse(a.annotation) in TEXT for a in node.args.args
               if a.annotation is not None)
