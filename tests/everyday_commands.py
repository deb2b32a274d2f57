"""Everyday data-science shell commands, in a project with deny rules elsewhere.

Not a test module: `test_everyday_commands.py` (our decisions) and
`benchmarks/bench_everyday_commands.py` (ours and Claude Code's, side by side) import it.

The project is a small analysis repository: CSV files, a JSON file, a script, a package with
TODOs, a git history, one tracked file changed since the last commit. The same rules hold
as in the permission corpus: ``Read(./secrets/**)`` (an untracked ``secrets/key.txt`` sits
in the working tree), ``Edit(./protected/**)``, ``Bash(rm:*)``; and a broad allow that data
scientists keep, ``Bash(python3:*)`` and ``Bash(python:*)``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

DENY = ["Read(./secrets/**)", "Edit(./protected/**)", "Bash(rm:*)"]
ALLOW = ["Bash(python3:*)", "Bash(python:*)"]
COMMANDS = (
    "ls",
    "ls -la",
    "ls -lh data",
    "ls -R",
    "ls *.csv",
    "pwd",
    "head data.csv",
    "head -n 5 data/sales.csv",
    "tail -n 3 data.csv",
    "cat x.json",
    "wc -l *.csv",
    "wc -l data/*.csv",
    "wc -c x.json",
    "jq . x.json",
    "jq '.items | length' x.json",
    "python analysis.py",
    "python3 analysis.py",
    "python3 -c 'import json; print(json.dumps({\"rows\": 3}))'",
    "python3 --version",
    "git status",
    "git log --oneline -5",
    "git diff",
    "git diff --stat",
    "git log -p -1 -- analysis.py",
    "git show --stat HEAD",
    "git branch",
    "git ls-files",
    "git blame analysis.py",
    "grep -rn TODO src",
    "grep -rn import --include='*.py' .",
    "grep -c , data.csv",
    "pip list",
    "pip show pip",
    "du -sh data",
    "du -sh .",
    "find . -name '*.py'",
    "find data -name '*.csv'",
    "sort data.csv | uniq -c",
    "cut -d, -f2 data.csv | sort | uniq -c",
    "awk -F, '{print $2}' data.csv",
    "sed -n '1,5p' analysis.py",
    "echo $HOME",
    "which python3",
    "file data.csv",
    "stat data.csv",
    "diff data.csv data/sales.csv",
    "sha256sum data.csv",
    "head -1 data.csv | tr , '\\n'",
    "sort -t, -k3 -n data.csv | head",
    "df -h .",
    "date",
    "nproc",
)
"""The list: 25 commands of an earlier comparison with Claude Code, and more of the same kind."""
CONTROLS = (
    "cat secrets/key.txt",
    "grep -r token secrets",
    "rm data.csv",
    "echo x > protected/config.yaml",
    "sed -i s/a/b/ protected/config.yaml",
)
"""Commands a deny rule of the same project matches: refused in every mode."""
SECRET = "token=SECRET-everyday-3c9d\n"
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Analyst",
    "GIT_AUTHOR_EMAIL": "analyst@example.invalid",
    "GIT_COMMITTER_NAME": "Analyst",
    "GIT_COMMITTER_EMAIL": "analyst@example.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}
_FILES = {
    "data.csv": "id,city,amount\n1,Oslo,12\n2,Lima,7\n3,Oslo,30\n4,Pune,5\n",
    "data/sales.csv": "id,city,amount\n1,Oslo,12\n2,Lima,9\n",
    "data/users.csv": "id,name\n1,Ada\n2,Grace\n",
    "x.json": json.dumps({"name": "demo", "items": [3, 1, 2]}) + "\n",
    "analysis.py": (
        "import csv\n\n"
        "with open('data.csv', newline='') as handle:\n"
        "    rows = list(csv.DictReader(handle))\n"
        "print(len(rows), 'rows;', sum(int(r['amount']) for r in rows), 'in all')\n"
    ),
    "requirements.txt": "pandas\nmatplotlib\n",
    "src/__init__.py": "",
    "src/model.py": (
        "import math\n\n\ndef fit(xs):\n    # TODO: a real model\n    return math.fsum(xs)\n"
    ),
    "src/plots.py": "import json  # TODO plots\n",
    "protected/config.yaml": "threshold: 3\n",
    "README.md": "# analysis\n",
}


WRITTEN = ("analysis.py", "Makefile", "notes.md")
"""What a session typically writes before it runs things: a script, a Makefile, notes."""


def build_project(folder: Path, *, settings_dir: str) -> Path:
    """The project in `folder` (created), its rules in ``<settings_dir>/settings.json``
    (``.toolhost`` for this project, ``.claude`` for Claude Code). Returns `folder`."""
    for rel, text in _FILES.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    env = {**os.environ, **_GIT_ENV, "HOME": str(folder)}
    for argv in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "commit", "-q", "-m", "first analysis"],
    ):
        subprocess.run(argv, cwd=folder, env=env, check=True, capture_output=True)
    script = folder / "analysis.py"
    script.write_text(script.read_text(encoding="utf-8") + "print('done')\n", encoding="utf-8")
    subprocess.run(
        ["git", "commit", "-qam", "say done"], cwd=folder, env=env, check=True, capture_output=True
    )
    (folder / "README.md").write_text("# analysis\n\nWork in progress.\n", encoding="utf-8")
    secret = folder / "secrets" / "key.txt"  # untracked, in the working tree
    secret.parent.mkdir()
    secret.write_text(SECRET, encoding="utf-8")
    settings = folder / settings_dir / "settings.json"
    settings.parent.mkdir()
    rules = {"permissions": {"allow": ALLOW, "deny": DENY}}
    settings.write_text(json.dumps(rules, indent=1) + "\n", encoding="utf-8")
    return folder
