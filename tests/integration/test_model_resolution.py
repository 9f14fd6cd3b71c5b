"""`ledgerclaw models list` asking each model's server for its catalog, over loopback HTTP."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from adapters.api.model_checks import Resolution, resolve_models
from adapters.config.loading import load_config
from adapters.home import Home
from tests.cli_runner import invoke
from tests.fakes import anthropic_server, openai_server
from tests.integration.model_homes import (
    KEY,
    listed_models,
    model_table,
    refusing_url,
    silent_url,
    write_home,
)


def test_a_model_its_server_lists_resolves_ok(home: Path) -> None:
    """A listed model is `ok`, with the size of the catalog it was found in."""
    with openai_server.serving(models=("other", "fake-model")) as fake:
        write_home(home, model_table("main", "openai", "fake-model", fake.base_url))

        row = listed_models()["main"]

        assert ("ok", "", 2) == (row["resolution"], row["resolution_detail"], row["catalog_size"])
        assert ["/v1/models"] == [r.path for r in fake.requests]
        assert f"Bearer {KEY}" == fake.requests[0].headers["authorization"]


def test_a_model_missing_from_the_catalog_names_at_most_five_close_ones(home: Path) -> None:
    """A server that answers without the model gives `not in the provider's catalog`."""
    listed = ("llama-3-8b", *(f"fake-model-{n}" for n in range(1, 8)))
    with openai_server.serving(models=listed) as fake:
        write_home(home, model_table("main", "openai", "fake-model", fake.base_url))

        row = listed_models()["main"]

    assert "not in the provider's catalog" == row["resolution"]
    expected = "close: fake-model-7, fake-model-6, fake-model-5, fake-model-4, fake-model-3"
    assert expected == row["resolution_detail"]
    assert 8 == row["catalog_size"]


def test_a_model_with_nothing_like_it_in_the_catalog_says_so(home: Path) -> None:
    """No similar id at all is said in words, not as an empty list."""
    with openai_server.serving(models=("llama-3-8b",)) as fake:
        write_home(home, model_table("main", "openai", "qwen2.5-coder", fake.base_url))

        row = listed_models()["main"]

    assert ("not in the provider's catalog", "nothing close") == (
        row["resolution"],
        row["resolution_detail"],
    )


def test_a_model_without_a_resolving_key_is_credential_missing_and_asks_nothing(
    home: Path,
) -> None:
    """No profile's key resolves: nothing is sent, and the first profile's problem is named."""
    with openai_server.serving() as fake:
        table = model_table("main", "openai", "fake-model", fake.base_url, ("nowhere", "gone"))
        write_home(home, table)

        row = listed_models()["main"]

        assert [] == fake.requests
    assert "credential missing" == row["resolution"]
    assert row["resolution_detail"].startswith("credential profile nowhere is not in ")
    assert row["catalog_size"] is None


def test_the_first_profile_whose_key_resolves_is_the_one_asked(home: Path) -> None:
    """A profile missing from secrets.toml is passed over for the next one."""
    with openai_server.serving() as fake:
        write_home(home, model_table("main", "openai", "fake-model", fake.base_url, ("x", "work")))

        assert "ok" == listed_models()["main"]["resolution"]
        assert [f"Bearer {KEY}"] == [r.headers["authorization"] for r in fake.requests]


def test_a_server_that_refuses_the_key_is_no_such_provider_with_its_status(home: Path) -> None:
    """Anthropic answering 401 makes `no such provider`, saying `HTTP 401` and why."""
    with anthropic_server.serving(models=("claude-test",), api_key="sk-other-0123456789") as fake:
        write_home(home, model_table("main", "anthropic", "claude-test", fake.base_url))

        row = listed_models()["main"]

    assert "no such provider" == row["resolution"]
    assert "HTTP 401: authentication_error: invalid x-api-key" == row["resolution_detail"]
    assert KEY not in str(row)


def test_an_anthropic_model_its_server_lists_resolves_ok(home: Path) -> None:
    """The Anthropic catalog is read as well as the OpenAI one."""
    with anthropic_server.serving(models=("claude-a", "claude-test"), api_key=KEY) as fake:
        write_home(home, model_table("main", "anthropic", "claude-test", fake.base_url))

        row = listed_models()["main"]

    assert ("ok", 2) == (row["resolution"], row["catalog_size"])


def test_a_port_nobody_listens_on_is_no_such_provider_connection_refused(home: Path) -> None:
    """A refused connection is named as such, not as a generic connection error."""
    with refusing_url() as url:
        write_home(home, model_table("main", "openai", "fake-model", url))

        row = listed_models()["main"]

    assert ("no such provider", "connection refused", None) == (
        row["resolution"],
        row["resolution_detail"],
        row["catalog_size"],
    )


def test_a_path_without_a_model_list_is_no_such_provider_http_404(home: Path) -> None:
    """A base URL that misses the server's API root answers 404, and says so."""
    with openai_server.serving() as fake:
        url = fake.base_url.removesuffix("/v1") + "/api"
        write_home(home, model_table("main", "openai", "fake-model", url))

        row = listed_models()["main"]

    assert ("no such provider", "HTTP 404: no such path: /api/models") == (
        row["resolution"],
        row["resolution_detail"],
    )


def test_a_scripted_model_is_not_checked(home: Path) -> None:
    """A scripted model has no server: its resolution is `not checked`."""
    write_home(home, model_table("demo", "scripted", "demo"))

    row = listed_models()["demo"]

    assert ("not checked", "scripted: no server to ask", None) == (
        row["resolution"],
        row["resolution_detail"],
        row["catalog_size"],
    )


def test_offline_asks_no_server_and_checks_nothing(home: Path) -> None:
    """With --offline every model is `not checked` and the server receives no request."""
    with openai_server.serving() as fake:
        write_home(
            home,
            model_table("main", "openai", "fake-model", fake.base_url),
            model_table("spare", "openai", "absent", fake.base_url),
        )

        rows = listed_models("--offline")

        assert [] == fake.requests
    assert {"main": "not checked", "spare": "not checked"} == {
        name: row["resolution"] for name, row in rows.items()
    }


def test_one_catalog_request_is_made_per_server_and_profile(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tables sharing provider, base URL and profile share a request; another profile asks anew."""
    monkeypatch.setenv("LC_OTHER_KEY", "sk-other-fedcba9876543210")
    with openai_server.serving(models=("a", "b")) as fake:
        write_home(
            home,
            model_table("one", "openai", "a", fake.base_url),
            model_table("two", "openai", "b", fake.base_url),
            model_table("three", "openai", "c", fake.base_url, ("other",)),
        )
        with (home / "secrets.toml").open("a") as secrets:
            secrets.write('[profiles.other]\napi_key_env = "LC_OTHER_KEY"\n')

        rows = listed_models()

        keys = sorted(r.headers["authorization"] for r in fake.requests)
    assert ["Bearer sk-other-fedcba9876543210", f"Bearer {KEY}"] == keys
    assert ["ok", "ok", "not in the provider's catalog"] == [
        rows[name]["resolution"] for name in ("one", "two", "three")
    ]


def test_the_table_shows_each_resolution_with_what_explains_it(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resolution column reads `ok`, or the resolution with its detail in brackets."""
    monkeypatch.setenv("COLUMNS", "200")
    with openai_server.serving(models=("fake-model",)) as fake, refusing_url() as refused:
        write_home(
            home,
            model_table("main", "openai", "fake-model", fake.base_url),
            model_table("gone", "openai", "fake-model", refused),
            model_table("typo", "openai", "fake-modle", fake.base_url),
        )

        code, out, _ = invoke("models", "list")

    assert 0 == code
    lines = {line.split()[0]: line for line in out.splitlines()[2:]}
    assert "  ok  " in lines["main"]
    assert "no such provider (connection refused)" in lines["gone"]
    assert "not in the provider's catalog (close: fake-model)" in lines["typo"]


def test_a_server_that_never_answers_is_given_up_on_after_its_time(home: Path) -> None:
    """Each server has `per_server` seconds; silence past that is `no such provider`."""
    with silent_url() as url:
        write_home(home, model_table("main", "openai", "fake-model", url))
        config = load_config(home / "config.toml")

        found = resolve_models(config, Home(home), {}, per_server=0.3)["main"]

    assert (Resolution.NO_SUCH_PROVIDER, "no answer within 0.3 s") == (
        found.resolution,
        found.detail,
    )


def test_every_server_is_asked_at_once(home: Path) -> None:
    """Three silent servers take about one timeout together, not three in a row."""
    with silent_url() as one, silent_url() as two, silent_url() as three:
        write_home(
            home,
            *(model_table(f"m{i}", "openai", "x", url) for i, url in enumerate((one, two, three))),
        )
        config = load_config(home / "config.toml")
        started = time.monotonic()

        found = resolve_models(config, Home(home), {}, per_server=1.0)

        elapsed = time.monotonic() - started
    assert {Resolution.NO_SUCH_PROVIDER} == {f.resolution for f in found.values()}
    assert elapsed < 2.5
