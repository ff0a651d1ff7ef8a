"""Every command the README shows runs as written (issue 14: a newcomer's first hour).

The shell commands of the README's ```bash blocks run in one temporary directory after
``polars-eval demo --data-dir demo_data``, through ``cli.main`` with the same argv (so the
code of this checkout is what runs); each must exit 0 and write the files its ``-o`` /
``--report`` name. The ``pip install`` commands and the test command are CI's to run
(``.ci/run``); the ``polars-eval`` command chained after an install is run here. The
Python tour block runs too, and its commented results are checked against scikit-learn.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

import polars_eval as pe
from polars_eval import cli

README = Path(__file__).resolve().parent.parent / "README.md"


def _blocks(language: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.M | re.S)


def _commands() -> list[list[str]]:
    """The argv of every ``polars-eval`` command in the README's bash blocks."""
    out: list[list[str]] = []
    for block in _blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if words and words[0] == "polars-eval":
                    out.append(words[1:])
                else:  # only installs and the test command are left to CI
                    assert not words or words[:2] == ["pip", "install"] or words == ["pytest"]
    return out


COMMANDS = _commands()


@contextlib.contextmanager
def _inside(path: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory where ``polars-eval demo --data-dir demo_data`` has run."""
    path = tmp_path_factory.mktemp("readme")
    with _inside(path):
        assert cli.main(["demo", "--data-dir", "demo_data", "--no-report"]) == 0
    return path


def test_the_readme_shows_the_commands_a_newcomer_needs() -> None:
    shown = {argv[0] for argv in COMMANDS}
    assert {"demo", "binary", "regression", "multiclass", "forecast", "ranking", "trec"} <= shown
    first = _blocks("bash")[0].strip()
    assert first == 'pip install -e ".[plot]" && polars-eval demo'  # what .ci/run runs


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(a[:2]) for a in COMMANDS])
def test_every_readme_command_runs(
    argv: list[str], workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = [
        argv[i + 1] for i, word in enumerate(argv[:-1]) if word in ("-o", "--output", "--report")
    ]
    if argv[0] == "demo":
        written += ["polars_eval_demo_report.html"]
    with _inside(workdir):
        for name in written:
            Path(name).unlink(missing_ok=True)
        code = cli.main(argv)
        out, err = capsys.readouterr()
        assert code == 0, err
        assert "error" not in err, err
        if "-o" not in argv and "--output" not in argv:
            assert out.strip()  # the result is printed
        for name in written:
            assert Path(name).stat().st_size > 0, name


def test_the_python_tour_runs(workdir: Path) -> None:
    from sklearn.metrics import roc_auc_score

    blocks = [b for b in _blocks("python") if "demo_data/" in b]
    assert len(blocks) >= 2  # the tour and the Scale section
    with _inside(workdir):
        for block in blocks:
            exec(compile(block, str(README), "exec"), {})  # every line must run
        df = pl.read_parquet("demo_data/credit_scoring.parquet")
    block = "\n".join(blocks)
    # the values the tour's comments claim, against scikit-learn
    claims = re.findall(r"^(df\.eval\.auc\([^)]*\))\s+# ([0-9.]+)\.\.\.", block, flags=re.M)
    assert claims
    for _, value in claims:
        expected = roc_auc_score(df["defaulted"].to_numpy(), df["pd_score"].to_numpy())
        assert f"{expected:.6f}".startswith(value)


def test_dir_shows_the_public_api_only() -> None:
    names = dir(pe)
    assert "annotations" not in names and not hasattr(pe, "annotations")
    assert set(pe.__all__) <= set(names)
    assert {"EvalNamespace", "__version__"} <= set(names)
    assert not [n for n in names if n.startswith("_") and n != "__version__"]


def test_what_the_readme_commands_write_is_ignored_by_git(workdir: Path) -> None:
    # `polars-eval demo --data-dir demo_data` and the README's examples, run in the
    # repository root, must leave `git status` clean
    import shutil
    import subprocess

    root = README.parent
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")
    written = [f"demo_data/{p.name}" for p in (workdir / "demo_data").iterdir()]
    written += ["polars_eval_demo_report.html", "polars_eval_demo_report_ranking.html"]
    written += [a[i + 1] for a in COMMANDS for i, w in enumerate(a[:-1]) if w in ("-o", "--report")]
    assert "demo_data/run.txt" in written and "by_channel.json" in written
    result = subprocess.run(
        ["git", "check-ignore", "--no-index", *written],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert sorted(result.stdout.split()) == sorted(written), result.stderr
