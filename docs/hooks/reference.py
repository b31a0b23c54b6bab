"""A mkdocs hook: the pages' generated parts, written at build time from what zoo itself reads.

A page asks for one with an HTML comment on a line of its own, replaced before its Markdown is rendered:

``<!-- zoo: configuration -->``
    every kind and component with its fields (type, default, allowed values or range, comment), the top-level
    options, the plain sections and the config groups of ``conf/``: the registry ``zoo list`` reads, the schema
    ``zoo train`` composes and checks, and the YAML files Hydra reads. A component registered later appears unasked.
``<!-- zoo: components KIND -->``
    a table of the registered components of one kind, each linked to its entry in the configuration reference.
``<!-- zoo: kinds -->``
    a table of the kinds: base class, how a run chooses one, the default, what a component receives and returns.

The API pages' Sphinx roles (``:class:`Task```, as zoo's docstrings write them) are shown as the code they name.
"""

from __future__ import annotations

import ast
import dataclasses
import html
import inspect
import io
import re
import textwrap
import tokenize
from pathlib import Path
from typing import Any

import yaml

#: ``<!-- zoo: WHAT [ARGUMENT] -->`` on a line of its own.
MARKER = re.compile(r"^<!-- zoo: (\w+)(?: (\w+))? -->$", re.M)
#: The configuration reference, which the component tables link into.
REFERENCE_PAGE = "reference/configuration.md"

#: The range each check of zoo.config.checks enforces, from its arguments after ``self, "field"``.
RANGES = {
    "at_least": lambda low: f"≥ {low}",
    "above": lambda low: f"> {low}",
    "positive": lambda: "> 0",
    "between": lambda low, high: f"{low} to {high}",
    "in_unit_interval": lambda: "[0, 1)",
    "fraction": lambda: "(0, 1]",
    "multiple_of": lambda other: f"a multiple of {other}",
    "no_wider_than": lambda other: f"≤ {other}",
}

#: The config groups of conf/, in the order a reader meets them, with what choosing one does.
GROUPS = {
    "model": "Whole-model recipes, one per family: `model=NAME` sets the family's components and settings; "
    "anything given after it still wins.",
    "model/parts": "What several recipes share, which each names in its defaults list (`- parts/NAME`), as the "
    "Multi30k recipes that compare encoders under one decoder do; no recipe itself.",
    "experiment": "Whole comparisons and presets as overlays: `experiment=NAME` (a sweep's: `zoo train -m ...`).",
    "recall_panel": "The data sizes of `experiment=recall_map`'s panels, one (length, pairs) each with its batches: "
    "`recall_panel=NAME`, swept by the experiment.",
    "search": "What `hydra/sweeper=optuna` tunes for a family, and over what ranges; the `model=` recipe chooses it.",
    "trainer": "Where and how training runs: `trainer=NAME`.",
    "logger": "Trackers besides `metrics.csv`: `logger=NAME`, or several: `logger=[wandb,tensorboard]`.",
    "paths": "Where data and prepared data live.",
    "hydra/launcher": "How a sweep's jobs are started: `hydra/launcher=NAME`.",
    "hydra/sweeper": "How a sweep chooses its jobs: `hydra/sweeper=NAME`.",
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    link = "../" * page.file.src_uri.count("/") + REFERENCE_PAGE

    def generated(match: re.Match) -> str:
        what, argument = match.groups()
        if what == "configuration":
            return configuration()
        if what == "components":
            return components_table(argument, link)
        if what == "kinds":
            return kinds_table(link)
        raise ValueError(f"{page.file.src_uri}: no generated part is called '{what}' (<!-- zoo: {what} -->)")

    return MARKER.sub(generated, markdown)


def on_page_content(content: str, page: Any, config: Any, files: Any) -> str:
    """``:class:<code>Task</code>`` (a Sphinx role, as Markdown renders it) -> ``<code>Task</code>``."""
    return re.sub(r":(?:class|func|mod|data|meth|attr|exc):(<code>)", r"\1", content)


# ---------------------------------------------------------------------------------------------------- the registry
def registry():
    """zoo's registry with every installed plugin discovered, as ``zoo list`` sees it."""
    from zoo import registry
    from zoo.registry.discovery import discover

    discover()
    return registry


def anchor(kind: str, name: str) -> str:
    """The reference's anchor of a component: ``encoder-gru``."""
    return f"{kind}-{name}"


def kinds_table(link: str) -> str:
    rows = ["| kind | subclass of | chosen with | default | receives and returns |", "|---|---|---|---|---|"]
    for kind in registry().KINDS:
        chosen = ", ".join(f"`{group}=NAME`" for group in kind.groups) or "`metrics=[NAME, ...]`"
        default = f"`{kind.default}`" if kind.default else "the task's"
        name = f"[`{kind.name}`]({link}#kind-{kind.name})"
        rows.append(f"| {name} | `{kind.contract}` | {chosen} | {default} | {text(kind.role)} |")
    return "\n".join(rows)


def components_table(kind: str, link: str) -> str:
    zoo_registry = registry()
    zoo_registry.kind(kind)  # an unknown kind stops the build, naming the kinds
    rows = ["| name | what it is | module |", "|---|---|---|"]
    for entry in zoo_registry.entries(kind):
        name = f"[`{entry.name}`]({link}#{anchor(kind, entry.name)})"
        rows.append(f"| {name} | {text(first_paragraph(entry.cls))} | {code(entry.module)} |")
    return "\n".join(rows)


def configuration() -> str:
    """The whole reference: components by kind, top-level options, plain sections, config groups."""
    zoo_registry = registry()
    lines = ["## Components { #components }", ""]
    for kind in zoo_registry.KINDS:
        lines += kind_section(kind, list(zoo_registry.entries(kind.name)))
    lines += top_level_options() + plain_sections() + config_groups() + component_presets(zoo_registry)
    return "\n".join(lines)


def kind_section(kind, entries) -> list[str]:
    lines = [f"### {kind.name} {{ #kind-{kind.name} }}", "", f"{text(kind.role)}.", ""]
    if kind.is_group:
        lines.append(f"Chosen with `{kind.name}=NAME`; the default is `{kind.default}`.")
        if kind.optional_groups:
            offered = ", ".join(f"`{group}=NAME`" for group in kind.optional_groups)
            lines.append(f"Also offered as {offered}; left null, those follow the `{kind.name}` choice.")
    else:
        lines.append("Named in a list, `metrics=[NAME, ...]`; one with options as `{name: NAME, FIELD: VALUE}`.")
    lines += [f"A plugin subclasses `zoo.api.{kind.contract}` ([writing one](../plugins/{kind.name}.md)).", ""]
    for entry in entries:
        lines += component_section(entry)
    return lines


def component_section(entry) -> list[str]:
    lines = [
        f"#### `{entry.kind}={entry.name}` {{ #{anchor(entry.kind, entry.name)} }}",
        "",
        text(first_paragraph(entry.cls)) or "(no docstring)",
        "",
        f"From `{entry.module}`.",
    ]
    chosen = getattr(entry.cls, "component_defaults", {})
    if chosen:
        lines.append("Chooses, unless told otherwise: " + ", ".join(f"`{k}={v}`" for k, v in chosen.items()) + ".")
    for group, choices in getattr(entry.cls, "presets", {}).items():
        for choice, values in choices.items():
            lines.append(f"`{group}={choice}` sets {settings(entry.kind, values)}.")
    lines += ["", *fields_table(entry.fields(), ranges(entry.cls.Config)), ""]
    return lines


def first_paragraph(cls: type) -> str:
    """The first paragraph of a class's own docstring, on one line, its ``literals`` as Markdown's."""
    own = cls.__dict__.get("__doc__")
    if not isinstance(own, str) or not own.strip():
        return ""
    return " ".join(inspect.cleandoc(own).split("\n\n")[0].split()).replace("``", "`")


def settings(kind: str, values: dict) -> str:
    return " ".join(f"`{kind}.{field}={spelled(value)}`" for field, value in values.items())


def fields_table(fields, limits: dict[str, list[str]]) -> list[str]:
    """One row per field: name, type, default, its choices or checked range, its comment."""
    if not fields:
        return ["No options."]
    rows = ["| field | type | default | allowed | comment |", "|---|---|---|---|---|"]
    for field in fields:
        allowed = ", ".join(field.choices) if field.choices else "; ".join(limits.get(field.name, []))
        rows.append(
            f"| {code(field.name)} | {code(type_name(field.type_name))} | {code(spelled(field.default))} "
            f"| {text(allowed)} | {text(field.comment)} |"
        )
    return rows


def ranges(config_cls: type) -> dict[str, list[str]]:
    """Field -> the ranges the checks in its ``__post_init__`` (and its bases') enforce, read from their source,
    each with the condition it is checked under (``> 0 when budget_flops is not None``)."""
    found: dict[str, list[str]] = {}
    for klass in reversed(config_cls.__mro__):
        method = vars(klass).get("__post_init__")
        if method is None:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
        except (OSError, TypeError):  # no source to read
            continue
        for field, limit in checks_in(tree.body, ""):
            if limit not in found.setdefault(field, []):
                found[field].append(limit)
    return found


def checks_in(statements: list[ast.stmt], condition: str):
    """(field, range) of every check call among ``statements``, inside ``if`` blocks too."""
    for statement in statements:
        if isinstance(statement, ast.If):
            test = ast.unparse(statement.test).replace("self.", "")
            yield from checks_in(statement.body, f"when {test}")
            yield from checks_in(statement.orelse, f"unless {test}")
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            check = check_call(statement.value)
            if check:
                yield check[0], f"{check[1]} {condition}".strip()
        elif hasattr(statement, "body"):  # for, while, with, try
            yield from checks_in(statement.body, condition)


def check_call(call: ast.Call) -> tuple[str, str] | None:
    """``at_least(self, "max_len", 1)`` -> ("max_len", "≥ 1"); None for any other call."""
    if not (isinstance(call.func, ast.Name) and call.func.id in RANGES and len(call.args) >= 2):
        return None
    field = call.args[1]
    if not (isinstance(field, ast.Constant) and isinstance(field.value, str)):
        return None
    rule = RANGES[call.func.id]
    wanted = call.args[2 : 2 + len(inspect.signature(rule).parameters)]
    return field.value, rule(*(a.value if isinstance(a, ast.Constant) else ast.unparse(a) for a in wanted))


# ---------------------------------------------------------------------------------------------------- the schema
def top_level_options() -> list[str]:
    """Every field of the schema that is neither a kind's group nor a section nor a preset group."""
    from zoo.config import schema
    from zoo.registry import KIND_NAMES, OPTIONAL_GROUPS
    from zoo.registry.entries import Entry

    comments = schema_comments(Path(schema.__file__))
    skipped = {"defaults", *KIND_NAMES, *OPTIONAL_GROUPS, *schema.PLAIN_SECTIONS, *schema.PRESET_GROUPS}
    options = Entry("", "", schema.ZooConfig, schema.ZooConfig, schema.__name__, "").fields()
    shown = [dataclasses.replace(f, comment=comments.get(f.name, "")) for f in options if f.name not in skipped]
    return ["## Top-level options { #top-level }", "", "Given as `OPTION=VALUE`.", "", *fields_table(shown, {}), ""]


def schema_comments(path: Path) -> dict[str, str]:
    """Option -> the comment on its ``("name", type, default)`` entry in the schema's source, or right above it
    (the rule zoo's registry reads a dataclass field's comment by)."""
    from zoo.registry.entries import _comment_of

    source = path.read_text()
    comments = {
        token.start[0]: token.string.lstrip("#").strip()
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    }
    found = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Tuple) and len(node.elts) == 3 and isinstance(node.elts[0], ast.Constant):
            found[str(node.elts[0].value)] = _comment_of(node, source.splitlines(), comments)
    return found


def plain_sections() -> list[str]:
    from zoo.config.schema import PLAIN_SECTIONS
    from zoo.registry.entries import Entry

    lines = ["## Plain sections { #sections }", "", "Given as `SECTION.FIELD=VALUE`, e.g. `optim.lr=1e-3`.", ""]
    for name, config_cls in PLAIN_SECTIONS.items():
        lines += [f"### {name} {{ #section-{name} }}", ""]
        if first_paragraph(config_cls) and not first_paragraph(config_cls).startswith(config_cls.__name__ + "("):
            lines += [text(first_paragraph(config_cls)), ""]  # (a dataclass's own signature is no description)
        fields = Entry(name, name, config_cls, config_cls, config_cls.__module__, "").fields()
        lines += [*fields_table(fields, ranges(config_cls)), ""]
    return lines


# ---------------------------------------------------------------------------------------------------- conf
def config_groups() -> list[str]:
    import zoo.conf

    root = Path(zoo.conf.__file__).parent
    lines = ["## Config groups { #groups }", "", "The YAML files under `conf/`, one per choice.", ""]
    for group, what in GROUPS.items():
        lines += [f"### {group} {{ #group-{group.replace('/', '-')} }}", "", what, ""]
        for path in sorted((root / group).glob("*.yaml")):
            lines += group_choice(group, path)
    return lines


def group_choice(group: str, path: Path) -> list[str]:
    """A choice's heading, its file's leading comment, and the file itself, folded."""
    described, body = yaml_comment(path.read_text())
    lines = [f"#### `{group}={path.stem}` {{ #{group.replace('/', '-')}-{path.stem} }}", ""]
    lines += [described or "(no description)", ""]
    if body.strip():
        folded = textwrap.indent(f"```yaml\n{body.strip()}\n```", "    ")
        lines += [f'??? note "conf/{group}/{path.name}"', "", folded, ""]
    return lines


def yaml_comment(source: str) -> tuple[str, str]:
    """A config file's leading comment as Markdown (its indented command lines as code) and the rest of the file;
    a file that is no YAML stops the build, named in the error."""
    lines = source.splitlines()
    prose, commands = [], []
    while lines and lines[0].startswith("#"):
        line = lines.pop(0)[1:]
        if line.startswith(" @package"):
            continue
        if line.startswith("   ") and line.strip():  # "#   zoo train model=gru": an example command
            commands.append(code(line.strip()))
        elif line.strip():
            prose.append(line.strip())
    yaml.safe_load("\n".join(lines) or "{}")
    described = text(" ".join(prose))
    if commands:
        described += ("\n\n" if described else "") + "<br>".join(commands)
    return described, "\n".join(lines)


def component_presets(zoo_registry) -> list[str]:
    """The groups components declare (``presets``): one word that sets several of a component's fields."""
    rows = [
        f"| `{group}={choice}` | [`{entry.kind}={entry.name}`](#{anchor(entry.kind, entry.name)}) "
        f"| {settings(entry.kind, values)} |"
        for entry in zoo_registry.entries()
        for group, choices in getattr(entry.cls, "presets", {}).items()
        for choice, values in choices.items()
    ]
    if not rows:
        return []
    return [
        "### Component presets { #group-presets }",
        "",
        "Groups a component declares (`presets` on its class): one word for several of its fields.",
        "",
        "| choice | declared by | sets |",
        "|---|---|---|",
        *rows,
        "",
    ]


# ---------------------------------------------------------------------------------------------------- Markdown
def spelled(value: Any) -> str:
    """A value as a config spells it: null, true, [a, b]."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(spelled(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {spelled(v)}" for k, v in value.items()) + "}"
    return str(getattr(value, "value", value))


def type_name(name: str) -> str:
    """``list[typing.Any] | None`` -> ``list[Any] | None``; ``zoo.config.schema.ResumeMode`` -> ``ResumeMode``."""
    return re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", name)


def text(value: str) -> str:
    """Plain text for a page or a table cell: HTML escaped, and no ``|`` to end a cell early."""
    return html.escape(str(value), quote=False).replace("|", "&#124;")


def code(value: str) -> str:
    """Code for a page or a table cell (Markdown's backticks would show an escaped ``|``)."""
    return f"<code>{text(value)}</code>"
