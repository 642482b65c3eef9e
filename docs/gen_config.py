"""Write docs/reference/config.md from conf/: every config group, every file in it, every option with its default
and the comment beside it in the file. `make docs` runs it before mkdocs; `--check` only compares (exit 1 when the
page is not what conf/ gives now). Run from anywhere: paths are relative to this file."""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
PAGE = ROOT / "docs" / "reference" / "config.md"

# What each group chooses; a group found in conf/ but missing here is still listed, with a plain description.
GROUPS = {
    "": ("", "The defaults every run starts from and where its outputs go."),
    "task": ("task=", "What to run. Each task is a thin adapter from the config to library calls."),
    "data": ("data=", "The N-best sets a task reads: paths, formats, references, subsets, the metric."),
    "scorer": ("scorer=[...]", "The LM columns to add. Each file adds a column of its own name; choose several "
               "with `scorer=[pll,ll]`, none with `scorer=[]`."),
    "model": ("model=", "Which causal, masked and student LM the scorers load by default."),
    "engine": ("engine=", "Where and how scoring runs: device, dtype, token budget, threads, the score store, "
               "scale-out."),
    "search": ("search=", "How the interpolation weights are chosen on the dev set (see Concepts → Search rules)."),
    "pairs": ("pairs=", "Minimal-pair sets for `task=minimal_pairs`."),
    "paths": ("paths=", "Where the real data sets live."),
    "experiment": ("+experiment=", "Whole runs in one name: each sets a task, data, scorers and options "
                   "(the runs behind the Results pages)."),
}
ORDER = list(GROUPS)

KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][\w.-]*|\"[^\"]*\"):(?:[ \t]+(?P<value>[^#]*?))?[ \t]*"
                 r"(?:#[ \t]?(?P<comment>.*))?$")
ITEM = re.compile(r"^(?P<indent> *)- (?P<value>[^#]*?)[ \t]*(?:#[ \t]?(?P<comment>.*))?$")
COMMENT = re.compile(r"^(?P<indent> *)#(?P<text>.*)$")


@dataclass
class Option:
    key: str
    value: str
    note: list[str] = field(default_factory=list)


@dataclass
class ConfigFile:
    path: Path
    package: str | None = None
    about: list[str] = field(default_factory=list)
    defaults: list[str] = field(default_factory=list)
    options: list[Option] = field(default_factory=list)


def parse(path: Path) -> ConfigFile:
    """The file's description (its leading comment), its defaults list and its options, in file order."""
    conf = ConfigFile(path)
    stack: list[tuple[int, str]] = []   # (indent, key) of the mappings above the current line
    pending: list[str] = []             # comment lines above a key: its note
    last: Option | None = None
    last_column = -1                    # where the last option's inline comment starts: continuation lines align
    in_defaults = False
    started = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            pending, last = [], (last if started else None)
            continue
        comment = COMMENT.match(line)
        if comment:
            text = comment.group("text")
            if text.strip().startswith("@package"):
                conf.package = text.strip().split(None, 1)[1]
            elif not started:
                conf.about.append(text[1:] if text.startswith(" ") else text)
            elif last is not None and len(comment.group("indent")) == last_column:
                last.note.append(text.strip())
            else:
                pending.append(text.strip())
            continue
        started = True
        item = ITEM.match(line)
        if item and in_defaults:
            conf.defaults.append(item.group("value").strip())
            continue
        match = KEY.match(line)
        if not match:
            raise SystemExit(f"{path.relative_to(ROOT)}: cannot read the line {line!r}")
        indent, key = len(match.group("indent")), match.group("key").strip('"')
        while stack and stack[-1][0] >= indent:
            stack.pop()
        dotted = ".".join([*(k for _, k in stack), key])
        value, note = (match.group("value") or "").strip(), match.group("comment")
        if dotted == "defaults" and not value:
            in_defaults = True
            stack.append((indent, key))
            continue
        in_defaults = False
        if value or note or pending:
            last = Option(dotted, value, [*pending, *([note.strip()] if note else [])])
            last_column = line.rfind("#", 0, match.start("comment")) if note else -1
            conf.options.append(last)
        else:
            last, last_column = None, -1
        pending = []
        if not value:
            stack.append((indent, key))
    conf.about = [line.rstrip() for line in conf.about]
    return conf


def cell(text: str, table: bool = True) -> str:
    """Comment text as Markdown: no raw HTML outside code spans; in a table, no cell breaks."""
    parts = re.split(r"(`[^`]*`)", text)
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = "".join(parts)
    return text.replace("|", "\\|") if table else text


def code(text: str) -> str:
    """A value as inline code in a table cell."""
    if not text:
        return ""
    ticks = "``" if "`" in text else "`"
    return f"{ticks}{text.replace('|', '&#124;')}{ticks}"


def about(lines: list[str]) -> list[str]:
    """A file's leading comment as Markdown: prose, with indented command lines as a code block."""
    out, block = [], []
    for line in lines + [""]:
        if line.startswith("  "):
            block.append(line.strip())
            continue
        if block:
            out += ["", "```bash", *block, "```", ""]
            block = []
        if line:
            out.append(cell(line, table=False))
    return out


def render(files: list[ConfigFile]) -> str:
    groups: dict[str, list[ConfigFile]] = {}
    for conf in files:
        rel = conf.path.relative_to(CONF)
        groups.setdefault(rel.parent.as_posix() if rel.parent.as_posix() != "." else "", []).append(conf)
    names = sorted(groups, key=lambda g: (ORDER.index(g) if g in ORDER else len(ORDER), g))
    out = [
        "<!-- Generated by docs/gen_config.py from conf/: edit conf/ (or the script), not this page. -->",
        "",
        "# Configuration",
        "",
        "`rescorer` is one Hydra app. Each directory of `conf/` is a config group: pick one file with",
        "`GROUP=NAME` (`scorer=[a,b]` picks several, `+experiment=NAME` adds one), then override any option",
        "with `key=value`: `task.bootstrap=200`, `engine.threads=1`, `data.sets.dev.top=10`.",
        "`rescorer --help` lists the groups and their files; `rescorer ... --cfg job` prints the composed config.",
        "",
        "This page lists every file in `conf/` and every option in it, with the default and the comment the file",
        "carries. It is generated from `conf/` by `docs/gen_config.py`, so it cannot drift from the files.",
        "",
        "| group | choose with | files |",
        "|---|---|---|",
    ]
    for group in names:
        title, _ = GROUPS.get(group, (f"{group}=", ""))
        links = ", ".join(f"[`{c.path.stem}`](#{anchor(c)})" for c in groups[group])
        out.append(f"| `conf/{group + '/' if group else ''}` | {code(title) or 'always'} | {links} |")
    for group in names:
        title, what = GROUPS.get(group, (f"{group}=", f"The `{group}` group."))
        out += ["", f"## {'`' + group + '/`' if group else 'Top level'}", "", what, ""]
        for conf in groups[group]:
            out += render_file(conf, group)
    return "\n".join(out).rstrip() + "\n"


def anchor(conf: ConfigFile) -> str:
    return "conf-" + conf.path.relative_to(CONF).with_suffix("").as_posix().replace("/", "-").replace("_", "-")


def render_file(conf: ConfigFile, group: str) -> list[str]:
    rel = conf.path.relative_to(ROOT).as_posix()
    use = {"": "every run", "experiment": f"`+experiment={conf.path.stem}`",
           "scorer": f"`scorer=[{conf.path.stem}]`"}.get(group, f"`{group}={conf.path.stem}`")
    out = [f"### `{rel}` {{#{anchor(conf)}}}", "", f"Used with {use}."
           + (f" Package: `{conf.package}`." if conf.package else ""), ""]
    out += about(conf.about)
    if conf.defaults:
        out += ["", "Defaults: " + ", ".join(f"`{d}`" for d in conf.defaults) + "."]
    if conf.options:
        out += ["", "| option | default | notes |", "|---|---|---|"]
        prefix = f"{group}." if group in ("task", "data", "engine", "model", "search", "pairs", "paths") else ""
        if group == "scorer":
            prefix = f"scorer.{conf.path.stem}."
        for option in (o for o in conf.options if o.key != "_target_"):
            out.append(f"| `{prefix}{option.key}` | {code(option.value)} | {cell(' '.join(option.note))} |")
    out.append("")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when the page differs")
    args = parser.parse_args()
    text = render([parse(path) for path in sorted(CONF.rglob("*.yaml"))])
    if args.check:
        if not PAGE.exists() or PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE.relative_to(ROOT)} is not what conf/ gives now: run python docs/gen_config.py",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    if not PAGE.exists() or PAGE.read_text(encoding="utf-8") != text:
        PAGE.write_text(text, encoding="utf-8")
        print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
