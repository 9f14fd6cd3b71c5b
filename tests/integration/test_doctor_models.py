"""`ledgerclaw doctor`'s check of each configured model against its server's catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_runner import invoke
from tests.fakes import anthropic_server, openai_server
from tests.integration.model_homes import doctor_checks, model_table, refusing_url, write_home


def test_doctor_passes_a_model_its_server_lists(home: Path) -> None:
    """A listed model passes its check and the doctor exits 0."""
    with openai_server.serving(models=("fake-model", "other")) as fake:
        write_home(home, model_table("main", "openai", "fake-model", fake.base_url))

        code, checks = doctor_checks()

    check = checks["model main answers"]
    assert (0, True, False) == (code, check["ok"], check["warning"])
    assert f"{fake.base_url} lists fake-model among 2 models" == check["detail"]


def test_doctor_warns_of_a_model_missing_from_its_catalog(home: Path) -> None:
    """An answering server without the model is a warning: the doctor still exits 0."""
    with openai_server.serving(models=("fake-model",)) as fake:
        write_home(home, model_table("main", "openai", "fake-modle", fake.base_url))

        code, checks = doctor_checks()

    check = checks["model main answers"]
    assert (0, True, True) == (code, check["ok"], check["warning"])
    expected = (
        f"{fake.base_url} answers but does not list fake-modle among its 1 models"
        " (close: fake-model)"
    )
    assert expected == check["detail"]


def test_doctor_fails_a_model_whose_credential_is_missing(home: Path) -> None:
    """No profile's key resolves: the check fails, names the profile, and the doctor exits 1."""
    with openai_server.serving() as fake:
        write_home(home, model_table("main", "openai", "fake-model", fake.base_url, ("absent",)))

        code, checks = doctor_checks()

        assert [] == fake.requests
    check = checks["model main answers"]
    assert (1, False) == (code, check["ok"])
    assert check["detail"].startswith("credential missing: credential profile absent is not in ")


def test_doctor_fails_a_model_whose_server_cannot_be_reached(home: Path) -> None:
    """A refused connection fails the check, naming the address and how it failed."""
    with refusing_url() as url:
        write_home(home, model_table("main", "openai", "fake-model", url))

        code, checks = doctor_checks()

    check = checks["model main answers"]
    assert (1, False) == (code, check["ok"])
    assert f"no such provider at {url}: connection refused" == check["detail"]


def test_doctor_fails_a_model_whose_server_refuses_the_key(home: Path) -> None:
    """A 401 from the server fails the check with its status."""
    with anthropic_server.serving(api_key="sk-other-0123456789") as fake:
        write_home(home, model_table("main", "anthropic", "claude-test", fake.base_url))

        code, checks = doctor_checks()

    check = checks["model main answers"]
    assert (1, False) == (code, check["ok"])
    expected = (
        f"no such provider at {fake.base_url}: HTTP 401: authentication_error: invalid x-api-key"
    )
    assert expected == check["detail"]


def test_doctor_offline_skips_every_model_check_and_asks_nothing(home: Path) -> None:
    """With --offline each model's check is skipped, passes, and no request is sent."""
    with openai_server.serving() as fake:
        write_home(
            home,
            model_table("main", "openai", "fake-model", fake.base_url),
            model_table("spare", "openai", "fake-model", fake.base_url, ("absent",)),
        )

        code, checks = doctor_checks("--offline")

        assert [] == fake.requests
    assert 0 == code
    shown = [checks[f"model {name} answers"] for name in ("main", "spare")]
    assert [(True, True, "skipped (--offline)")] * 2 == [
        (check["ok"], check["skipped"], check["detail"]) for check in shown
    ]


def test_doctor_table_marks_a_skipped_check_skip(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table's result column says `skip` for a check --offline left out."""
    monkeypatch.setenv("COLUMNS", "200")
    write_home(home, model_table("main", "openai", "fake-model", "http://127.0.0.1:9/v1"))

    code, out, _ = invoke("doctor", "--offline")

    assert 0 == code
    row = next(line for line in out.splitlines() if line.startswith("model main answers"))
    assert ["model", "main", "answers", "skip", "skipped", "(--offline)"] == row.split()


def test_doctor_passes_a_scripted_model_without_asking_anything(home: Path) -> None:
    """A scripted model has no server: its check passes and says why nothing was asked."""
    write_home(home, model_table("demo", "scripted", "demo"))

    code, checks = doctor_checks()

    check = checks["model demo answers"]
    assert (0, True, False, "scripted: no server to ask") == (
        code,
        check["ok"],
        check["skipped"],
        check["detail"],
    )


@pytest.mark.usefixtures("home")
def test_doctor_checks_no_model_on_a_home_without_models() -> None:
    """A fresh home has no model checks at all."""
    code, checks = doctor_checks()

    assert 0 == code
    assert [] == [name for name in checks if name.startswith("model ")]
