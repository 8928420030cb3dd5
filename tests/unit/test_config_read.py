"""Read commands' settings without pydantic: the same answer as full validation, or none."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitelore.core.config import load_settings
from sitelore.core.config_read import ReadSettings, read_settings
from sitelore.core.errors import SiteloreError


def full(text: str | None, environ: dict[str, str], store: str | None) -> ReadSettings | None:
    """What full validation makes of the same input (None: it refuses it)."""
    try:
        settings = load_settings(
            text, environ=environ, overrides={"store": store}, flags={"store": "--db"}
        )
    except SiteloreError:
        return None
    return ReadSettings(settings.store, settings.links, settings.semantic_model)


class TestReadSettings:
    def test_no_file_no_environment_gives_the_defaults(self) -> None:
        """Without a file or variables, the defaults of the full settings model."""
        assert read_settings(None, environ={}) == full(None, {}, None)

    def test_flag_beats_environment_beats_file(self) -> None:
        """--db wins over SITELORE_DB, which wins over the file's store."""
        text = 'store = "file.db"\nlinks = "reference"\nsemantic_model = "minilm"\n'
        env = {"SITELORE_DB": "env.db"}
        assert read_settings(text, environ=env) == ReadSettings("env.db", "reference", "minilm")
        assert read_settings(text, environ=env, store="flag.db") == full(text, env, "flag.db")

    @pytest.mark.parametrize(
        "text",
        [
            "[limits]\nmax_pages = 5\n",  # any other key, valid or not, is checked in full
            '[sources.docs]\nurl = "https://docs.example.com/"\n',
            'links = "bogus"\n',
            'semantic_model = ""\n',
            "store = 5\n",
            "store = \n",  # not TOML
        ],
    )
    def test_anything_else_is_left_to_full_validation(self, text: str) -> None:
        """Other keys, invalid values and bad TOML: None, so the caller validates in full."""
        assert read_settings(text, environ={}) is None

    def test_a_user_agent_variable_is_left_to_full_validation(self) -> None:
        """SITELORE_USER_AGENT is checked by full validation (a bad one is exit 78)."""
        assert read_settings(None, environ={"SITELORE_USER_AGENT": "x\n"}) is None

    @given(
        store=st.one_of(st.none(), st.text(max_size=8)),
        links=st.sampled_from(["inline", "reference", "none", "bogus", 3]),
        model=st.sampled_from(["minilm", "", None]),
        env_db=st.sampled_from(["", "env.db"]),
    )
    def test_agrees_with_full_validation(
        self, store: str | None, links: object, model: str | None, env_db: str
    ) -> None:
        """Whenever it answers, full validation gives the same three settings."""
        lines = [f"links = {links!r}".replace("'", '"')]
        if model is not None:
            lines.append(f'semantic_model = "{model}"')
        text = "\n".join(lines) + "\n"
        environ = {"SITELORE_DB": env_db}
        found = read_settings(text, environ=environ, store=store)
        if found is not None:
            assert found == full(text, environ, store)
