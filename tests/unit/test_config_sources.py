"""Settings files with named sources: strict values, precedence, the schema, the TOML writer."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field, create_model

from sitelore.core.config import (
    Settings,
    SourceSpec,
    check_user_agent,
    load_settings,
    parse_refresh,
    settings_json_schema,
)
from sitelore.core.config_toml import append_source, source_table, toml_key, toml_value
from sitelore.core.errors import ConfigError, UsageError

SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "sitelore.schema.json"

GOOD = """
user_agent = "docsbot/1.0 (+https://example.org/bot)"
allow_private = ["127.0.0.1"]
store = "sqlite:///data/s.db"

[limits]
max_pages = 50
deadline_seconds = 120

[sources.docs]
url = "https://docs.example.com/"
max_pages = 40
max_depth = 3
same_domain = false
path_prefix = "/en/"
exclude = ["*/changelog*"]
respect_robots = true
delay = 0.5
sitemap = true
refresh = "6h"

[sources."py.docs"]
url = "https://docs.python.org/3/"
"""


class TestSources:
    def test_a_full_file_loads_every_source_and_option(self) -> None:
        settings = load_settings(GOOD, source="s.toml")
        assert set(settings.sources) == {"docs", "py.docs"}
        docs = settings.sources["docs"]
        assert docs.refresh_seconds == 6 * 3600
        options = docs.crawl_options()
        assert (options.max_pages, options.max_depth, options.same_domain) == (40, 3, False)
        assert options.path_prefix == "/en/"
        assert options.exclude_patterns == ("*/changelog*",)
        assert (options.delay, options.sitemap, options.respect_robots) == (0.5, True, True)
        assert settings.limits.max_pages == 50
        assert settings.allow_private == ("127.0.0.1",)

    def test_unset_options_keep_the_crawl_defaults(self) -> None:
        spec = load_settings(GOOD).sources["py.docs"]
        options = spec.crawl_options()
        assert (options.max_pages, options.max_depth, options.delay) == (25, 2, 1.0)
        assert options.sitemap is False
        assert spec.refresh == "1d"

    @pytest.mark.parametrize(
        ("text", "key"),
        [
            (
                '[sources.d]\nurl = "https://x.test/"\nrespect_robots = "no"',
                "sources.d.respect_robots",
            ),
            (
                '[sources.d]\nurl = "https://x.test/"\nrespect_robots = 1',
                "sources.d.respect_robots",
            ),
            ('[sources.d]\nurl = "https://x.test/"\nsitemap = "yes"', "sources.d.sitemap"),
            ('[sources.d]\nurl = "https://x.test/"\nmax_pages = "5"', "sources.d.max_pages"),
            ('[sources.d]\nurl = "https://x.test/"\nmax_pages = 0', "sources.d.max_pages"),
            ('[sources.d]\nurl = "https://x.test/"\ndelay = true', "sources.d.delay"),
            ('[sources.d]\nurl = "https://x.test/"\ndelay = 61', "sources.d.delay"),
            ('[sources.d]\nurl = "https://x.test/"\nrefresh = "6"', "sources.d.refresh"),
            ('[sources.d]\nurl = "https://x.test/"\nrefresh = 3600', "sources.d.refresh"),
            ('[sources.d]\nurl = "https://x.test/"\nexclude = "*/a"', "sources.d.exclude"),
            ('[sources.d]\nurl = "https://x.test/"\nexclude = [1]', "sources.d.exclude.0"),
            ('[sources.d]\nurl = "https://x.test/"\nmax_page = 3', "sources.d.max_page"),
            ('[sources.d]\nurl = "ftp://x.test/"', "sources.d.url"),
            ("[sources.d]\nmax_pages = 3", "sources.d.url"),
            ('[sources."a b"]\nurl = "https://x.test/"', "sources.a b"),
            ('[limits]\nmax_pages = "5"', "limits.max_pages"),
            ("[limits]\nmax_depth = 2.0", "limits.max_depth"),
            ("[limits]\ndeadline_seconds = false", "limits.deadline_seconds"),
            ('allow_private = "127.0.0.1"', "allow_private"),
            ("sources = 3", "sources"),
        ],
    )
    def test_a_loose_value_is_a_config_error_naming_the_key_and_file(
        self, text: str, key: str
    ) -> None:
        with pytest.raises(ConfigError) as caught:
            load_settings(text, source="conf/sitelore.toml")
        message = str(caught.value)
        assert message.startswith(f"conf/sitelore.toml: {key}")
        assert "\n" not in message
        assert caught.value.exit_code == 78

    def test_an_integer_is_a_valid_float(self) -> None:
        """TOML writes ``delay = 1``; a whole number is a number, not a guess."""
        spec = load_settings('[sources.d]\nurl = "https://x.test/"\ndelay = 1').sources["d"]
        assert spec.delay == 1.0

    @pytest.mark.parametrize(
        ("text", "seconds"),
        [("45s", 45), ("30m", 1800), ("6h", 21600), ("1d", 86400), ("2w", 1_209_600)],
    )
    def test_refresh_intervals(self, text: str, seconds: int) -> None:
        assert parse_refresh(text) == seconds

    @pytest.mark.parametrize("text", ["6", "h", "1.5h", "1 d", "1D", "-1d", "1y", ""])
    def test_refresh_without_a_known_unit_is_refused(self, text: str) -> None:
        with pytest.raises(ValueError, match="not an interval"):
            parse_refresh(text)


class TestPrecedence:
    def test_environment_beats_the_file_and_flags_beat_both(self) -> None:
        text = 'store = "file.db"\nuser_agent = "filebot"\n'
        env = {"SITELORE_DB": "env.db", "SITELORE_USER_AGENT": "envbot"}
        assert load_settings(text).store == "file.db"
        from_env = load_settings(text, environ=env)
        assert (from_env.store, from_env.user_agent) == ("env.db", "envbot")
        flagged = load_settings(text, environ=env, overrides={"store": "flag.db"})
        assert (flagged.store, flagged.user_agent) == ("flag.db", "envbot")

    def test_a_bad_flag_is_a_usage_error_naming_the_flag(self) -> None:
        """Flags are validated with the file, not copied over it unchecked."""
        with pytest.raises(UsageError) as caught:
            load_settings(
                'user_agent = "filebot"\n',
                source="s.toml",
                overrides={"user_agent": "Foo\r\nX-Evil: 1"},
                flags={"user_agent": "--user-agent"},
            )
        assert str(caught.value) == (
            "--user-agent: must be printable ASCII; found '\\r' at position 3"
        )

    def test_a_bad_value_from_the_environment_names_the_variable(self) -> None:
        with pytest.raises(ConfigError, match=r"^SITELORE_USER_AGENT \(environment\): "):
            load_settings(None, source="s.toml", environ={"SITELORE_USER_AGENT": "a\nb"})

    def test_a_bad_value_of_the_file_names_the_file_even_with_good_flags(self) -> None:
        with pytest.raises(ConfigError, match=r"^s\.toml: user_agent: must be printable"):
            load_settings(
                'user_agent = "a\\tb"\n',
                source="s.toml",
                overrides={"store": "x.db"},
                flags={"store": "--db", "user_agent": "--user-agent"},
            )

    def test_defaults_apply_without_a_file(self) -> None:
        settings = load_settings(None)
        assert settings.sources == {}
        assert settings.limits.max_pages == 200


class TestSchema:
    def test_the_committed_schema_is_current(self) -> None:
        """Regenerate with: python scripts/gen_config_schema.py"""
        assert SCHEMA.read_text(encoding="utf-8") == settings_json_schema(), (
            "schemas/sitelore.schema.json is stale; run: python scripts/gen_config_schema.py"
        )

    def test_a_new_setting_makes_the_committed_schema_stale(self) -> None:
        """The check above would fail if someone added a setting and did not regenerate."""
        grown = create_model(
            "Settings",
            __base__=Settings,
            proxy=(str | None, Field(default=None, description="An outgoing proxy.")),
        )
        assert settings_json_schema(grown) != SCHEMA.read_text(encoding="utf-8")

    def test_the_schema_describes_sources(self) -> None:
        text = settings_json_schema()
        for key in ("respect_robots", "refresh", "sitemap", "max_pages", "allow_private"):
            assert f'"{key}"' in text


class TestTomlWriter:
    def test_appending_keeps_the_file_and_reads_back(self) -> None:
        before = "# operator settings\nstore = 'x.db'  # keep me\n"
        spec = SourceSpec.model_validate(
            {"url": "https://docs.test/", "max_pages": 5, "sitemap": True, "refresh": "6h"}
        )
        text, settings = append_source(before, "docs", spec, source="s.toml")
        assert text.startswith(before)
        assert "# keep me" in text
        assert settings.sources["docs"] == spec
        assert settings.store == "x.db"

    def test_only_the_values_set_are_written(self) -> None:
        spec = SourceSpec.model_validate({"url": "https://docs.test/", "max_depth": 0})
        assert source_table("docs", spec) == (
            '[sources.docs]\nurl = "https://docs.test/"\nmax_depth = 0\n'
        )

    def test_a_name_taken_is_a_usage_error(self) -> None:
        spec = SourceSpec(url="https://docs.test/")
        text, _ = append_source("", "docs", spec, source="s.toml")
        with pytest.raises(UsageError, match=r"sources\.docs already exists"):
            append_source(text, "docs", spec, source="s.toml")

    def test_a_broken_file_is_not_appended_to(self) -> None:
        with pytest.raises(ConfigError, match=r"s\.toml: not valid TOML"):
            append_source("store = \n", "docs", SourceSpec(url="https://d.test/"), source="s.toml")

    @pytest.mark.parametrize(
        ("value", "text"),
        [
            (True, "true"),
            (3, "3"),
            (0.5, "0.5"),
            (1e-05, "1e-05"),
            ('a"b\\c\n\x01', '"a\\"b\\\\c\\n\\u0001"'),
            (("x", "y"), '["x", "y"]'),
        ],
    )
    def test_values(self, value: object, text: str) -> None:
        assert toml_value(value) == text

    @given(
        name=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,20}", fullmatch=True),
        prefix=st.text(min_size=1, max_size=30),
        excludes=st.lists(st.text(max_size=20), max_size=4),
    )
    def test_any_name_and_strings_round_trip(
        self, name: str, prefix: str, excludes: list[str]
    ) -> None:
        spec = SourceSpec.model_validate(
            {"url": "https://docs.test/", "path_prefix": prefix, "exclude": tuple(excludes)}
        )
        text, settings = append_source("", name, spec, source="s.toml")
        assert tomllib.loads(text)["sources"][name]["path_prefix"] == prefix
        assert settings.sources[name] == spec

    def test_keys_are_quoted_only_when_needed(self) -> None:
        assert toml_key("docs_v2-x") == "docs_v2-x"
        assert toml_key("py.docs") == '"py.docs"'


class TestUserAgent:
    @pytest.mark.parametrize(
        "agent",
        ["sitelore/0.1 (+https://example.org/bot)", "FooBot", "a b ~ !"],
    )
    def test_printable_ascii_is_accepted(self, agent: str) -> None:
        assert check_user_agent(agent) == agent
        assert Settings(user_agent=agent).user_agent == agent

    @pytest.mark.parametrize(
        ("agent", "reason"),
        [
            ("", "must not be empty"),
            ("   ", "must not be empty"),
            ("Foo\r\nX-Evil: 1", "'\\r' at position 3"),
            ("tab\there", "'\\t' at position 3"),
            ("nul\x00", "'\\x00' at position 3"),
            ("del\x7f", "'\\x7f' at position 3"),
            ("caf\u00e9", "'é' at position 3"),
        ],
    )
    def test_control_characters_and_non_ascii_are_refused(self, agent: str, reason: str) -> None:
        with pytest.raises(ValueError, match=re.escape(reason)):
            check_user_agent(agent)
        with pytest.raises(ConfigError, match="user_agent"):
            load_settings(None, overrides={"user_agent": agent})
