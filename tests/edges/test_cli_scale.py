"""The scale-out commands: crawl --frontier, worker, crawl-status (exit codes, JSON, errors)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cli_support import create_store, run_cli
from tests.scale_support import delete_namespace, namespace_url


@pytest.fixture
def frontier() -> Iterator[str]:
    url, namespace = namespace_url()
    yield url
    asyncio.run(delete_namespace(namespace))


def test_a_queued_crawl_is_run_by_a_worker_and_reported(
    site: str, frontier: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "shared.db")
    code, out, err = run_cli(
        [
            "crawl",
            site + "/",
            "--frontier",
            frontier,
            "--max-pages",
            "5",
            "--delay",
            "0",
            "--allow-private",
            "127.0.0.1",
            "--json",
        ],
        capsys,
    )
    assert code == 0, err
    queued = json.loads(out)
    crawl_id = queued["crawlId"]
    assert queued["seed"] == site + "/"
    assert queued["applied"]["maxPages"] == 5

    code, out, err = run_cli(["crawl-status", crawl_id, "--frontier", frontier, "--json"], capsys)
    assert code == 0, err
    before = json.loads(out)
    assert (before["state"], before["queued"], before["pagesFetched"]) == ("running", 1, 0)

    code, out, err = run_cli(
        [
            "worker",
            "--frontier",
            frontier,
            "--db",
            db,
            "--crawl",
            crawl_id,
            "--allow-private",
            "127.0.0.1",
            "--json",
        ],
        capsys,
    )
    assert code == 0, err
    assert json.loads(out)[crawl_id]["acked"] == 5

    code, out, err = run_cli(["crawl-status", crawl_id, "--frontier", frontier], capsys)
    assert code == 0, err
    assert "finished (max_pages)" in out
    assert "fetched 5" in out

    code, out, _ = run_cli(["search", "lumen", "--db", db, "--json"], capsys)
    assert code == 0
    assert json.loads(out)["hits"]


def test_an_unreachable_redis_exits_78_without_the_password(
    site: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(
        [
            "crawl",
            site + "/",
            "--frontier",
            "redis://:hunter2@127.0.0.1:1/0",
            "--allow-private",
            "127.0.0.1",
        ],
        capsys,
    )
    assert code == 78
    assert "cannot connect to Redis" in err
    assert "127.0.0.1:1" in err
    assert "hunter2" not in err
    assert len(err.strip().splitlines()) == 1


def test_an_unreachable_database_stops_the_worker_at_start(
    frontier: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(
        [
            "worker",
            "--frontier",
            frontier,
            "--db",
            "postgresql://bob:hunter2@127.0.0.1:1/x",
            "--exit-when-idle",
        ],
        capsys,
    )
    assert code == 78
    assert "cannot connect to PostgreSQL" in err
    assert "hunter2" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["worker"], "--frontier"),
        (["crawl-status", "x"], "--frontier"),
        (["crawl-status", "nope", "--frontier", "FRONTIER"], "no such crawl"),
        (["worker", "--frontier", "FRONTIER", "--crawl", "nope", "--db", "DB"], "no such crawl"),
        (["crawl", "http://127.0.0.1/", "--frontier", "FRONTIER", "--render"], "--render"),
        (["crawl", "http://127.0.0.1/", "--frontier", "http://x/"], "redis://"),
    ],
)
def test_usage_errors_exit_2(
    args: list[str],
    message: str,
    frontier: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = [
        frontier if a == "FRONTIER" else str(tmp_path / "s.db") if a == "DB" else a for a in args
    ]
    code, _, err = run_cli(args, capsys)
    assert code == 2
    assert message in err


def test_without_the_scale_extra_the_cli_runs_and_says_what_is_missing(
    tmp_path: Path,
) -> None:
    # None in sys.modules makes "import redis" fail as if it were not installed.
    script = (
        "import sys\n"
        "sys.modules.update(redis=None, psycopg=None)\n"
        "from sitelore.cli.main import main\n"
        "main(sys.argv[1:])\n"
    )

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", script, *args],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            check=False,
        )

    create_store(tmp_path / "s.db")  # list never creates one
    listed = run("list", "--db", str(tmp_path / "s.db"), "--json")
    worker = run("worker", "--frontier", "redis://127.0.0.1:6379/0")
    postgres = run("list", "--db", "postgresql://postgres@127.0.0.1/x")

    assert listed.returncode == 0, listed.stderr
    assert (worker.returncode, postgres.returncode) == (78, 78)
    assert "pip install 'sitelore[scale]'" in worker.stderr
    assert "pip install 'sitelore[scale]'" in postgres.stderr
