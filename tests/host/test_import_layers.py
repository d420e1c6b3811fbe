"""The firmware's imports keep the package map's order, and its import circles stay few.

Read from lib/mimi's source with CPython's ast (nothing is imported):
- a module-level import never reaches up a layer (LAYERS: leaves -> board -> net, config
  and the bus -> services, channels, tools and the parts they use -> agent -> app); an
  import inside a function may (that is how a part asks a higher one for something now
  and then without loading it at boot);
- import circles, counting the imports inside functions too, are at most three, and
  each lies inside one of CIRCLES (docs/internals.md says why each stays);
- every module named by a string (mimi.run, mimi.drop, channels.load, unload,
  __import__, sys.modules) exists, so a renamed module cannot leave a stale name that
  only fails when that code runs.

A body that a resident module loads by name for one call and drops after (mimi.run,
channels.load) and that uses the resident module's state is part of it: such a name
is checked to exist but is not an import statement, and is not counted as a circle.
"""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "lib"

# Lowest first. A module belongs to the layer of its longest listed prefix.
LAYERS = (
    ("leaves", ("mimi", "mimi.limits", "mimi.log", "mimi.fs", "mimi.utf8", "mimi.jsonscan",
                "mimi.jsonutil", "mimi.flashmount")),
    ("board", ("mimi.board",)),
    ("net, config, bus", ("mimi.net", "mimi.config", "mimi.bus")),
    ("services, channels, tools", ("mimi.services", "mimi.channels", "mimi.tools", "mimi.devices",
                                   "mimi.memory", "mimi.llm", "mimi.usage", "mimi.update",
                                   "mimi.console")),
    ("agent", ("mimi.agent",)),
    ("app", ("mimi.app", "mimi.startup", "mimi.safemode", "mimi.repl")),
)
MAX_CIRCLES = 3
# The circles that stay (docs/internals.md, "Import circles"): each found circle must lie
# inside one of these.
CIRCLES = {
    "HTTP client: the protocol module and the transports it loads on first use": (
        "mimi.net.http", "mimi.net.asynchttp", "mimi.net.httpsync", "mimi.net.httpbody",
        "mimi.net.proxy"),
    "LLM providers: the factory and the provider it picks": (
        "mimi.llm.provider", "mimi.llm.anthropic", "mimi.llm.openai", "mimi.llm.stream"),
    "serial console: the REPL protocol and its raw half, loaded for a raw session": (
        "mimi.console.serial", "mimi.console.raw"),
}
# Calls whose first argument names modules (space-separated), and what the names are under.
BY_NAME = {"mimi.run": "mimi.", "run": "mimi.", "mimi.drop": "mimi.", "drop": "mimi.",
           "_file": "mimi.", "channels.load": "mimi.channels.", "mimi.unload": "", "unload": "",
           "__import__": "", "sys.modules.get": "", "sys.modules.pop": ""}
MODULE_STRING = re.compile(r"^mimi(\.[a-z_0-9]+)+$")


def modules(lib=LIB):
    """{dotted name: path} of every module under lib/mimi (a package by its __init__.py)."""
    out = {}
    for p in sorted((lib / "mimi").rglob("*.py")):
        parts = list(p.relative_to(lib).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def imports(name, source, mods):
    """-> ({target: True if at module level}, [(line, module named by a string)])."""
    tree = ast.parse(source)
    edges, named = {}, []
    package = name if name in mods and mods[name].name == "__init__.py" else name.rpartition(".")[0]

    def add(target, top):
        while target and target not in mods:  # `from pkg import NAME`: the package
            target = target.rpartition(".")[0]
        if target.startswith("mimi") and target != name:
            edges[target] = edges.get(target, False) or top

    def visit(node, top):
        for child in ast.iter_child_nodes(node):
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for a in child.names:
                    add(a.name, inner)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.split(".")[:len(package.split(".")) - child.level + 1]
                    base = ".".join(up + ([base] if base else []))
                for a in child.names:
                    full = base + "." + a.name
                    add(full if full in mods else base, inner)
            elif isinstance(child, ast.Call):
                under = BY_NAME.get(ast.unparse(child.func))
                if under is not None and child.args:
                    for c in ast.walk(child.args[0]):
                        if isinstance(c, ast.Constant) and isinstance(c.value, str):
                            named.extend((c.lineno, under + w) for w in c.value.split()
                                         if under or MODULE_STRING.match(w))
            elif isinstance(child, ast.Compare) and isinstance(child.left, ast.Constant) \
                    and isinstance(child.left.value, str) and MODULE_STRING.match(child.left.value):
                named.append((child.lineno, child.left.value))  # "mimi.x" in sys.modules
            visit(child, inner)

    visit(tree, True)
    return edges, named


def graph(lib=LIB):
    mods = modules(lib)
    g, named = {}, {}
    for name, path in mods.items():
        g[name], named[name] = imports(name, path.read_text(), mods)
    return mods, g, named


def layer(name):
    best, at = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (name == p or name.startswith(p + ".")) and len(p) > best:
                best, at = len(p), i
    return at


def circles(g):
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return sorted(out)


def test_every_module_has_a_layer():
    mods = modules()
    assert [m for m in mods if layer(m) is None] == []


def test_module_level_imports_never_reach_up_a_layer():
    _, g, _ = graph()
    up = ["%s (%s) imports %s (%s) at module level" % (a, LAYERS[layer(a)][0], b, LAYERS[layer(b)][0])
          for a in sorted(g) for b, top in sorted(g[a].items()) if top and layer(b) > layer(a)]
    assert up == [], "\n".join(up)


def test_import_circles_are_few_and_named():
    _, g, _ = graph()
    found = circles(g)
    unnamed = [c for c in found if not any(set(c) <= set(m) for m in CIRCLES.values())]
    assert unnamed == [], "import circles not in CIRCLES (docs/internals.md): %s" % unnamed
    assert len(found) <= MAX_CIRCLES, found


def test_internals_names_the_circles_that_stay():
    text = (ROOT / "docs" / "internals.md").read_text()
    section = text.split("\n## Import circles", 1)[1].split("\n## ", 1)[0]
    for members in CIRCLES.values():
        for m in members:
            assert m[len("mimi."):].replace(".", "/") + ".py" in section, m


def test_modules_named_by_strings_exist():
    mods, _, named = graph()
    stale = ["%s:%d names %s" % (a, line, m) for a in sorted(named) for line, m in named[a]
             if m not in mods]
    assert stale == [], "\n".join(stale)


def test_the_checks_can_fail(tmp_path):
    """A made-up package with an upward module-level import, a circle through a function
    and a stale name: each is found."""
    files = {
        "mimi/__init__.py": "",
        "mimi/limits.py": "from mimi.agent import worker\n",
        "mimi/agent/__init__.py": "",
        "mimi/agent/worker.py": "def f():\n    from mimi import limits\n",
        "mimi/bus.py": "import mimi\ndef g():\n    mimi.run('nothere', 'fn')\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    mods, g, named = graph(tmp_path)
    assert g["mimi.limits"] == {"mimi.agent.worker": True} and layer("mimi.agent.worker") > layer("mimi.limits")
    assert g["mimi.agent.worker"] == {"mimi.limits": False}
    assert circles(g) == [["mimi.agent.worker", "mimi.limits"]]
    assert named["mimi.bus"] == [(3, "mimi.nothere")] and "mimi.nothere" not in mods
