"""Link styles of a document's Markdown: inline, reference (numbered, at the end), none."""

from __future__ import annotations

import pytest

from sitelore.core.convert import restyle_links

SAMPLE = (
    'See [`Eq`](https://x.test/eq "Eq") and [docs](https://x.test/d), [again](https://x.test/d).\n'
    "Code `[not](a link)`, ![img](https://x.test/i.png), [![ci](https://x.test/b.svg)](https://x.test/ci)."
    "\n\n```\n[in](code)\n```\n\n> quoted [q](https://x.test/q)"
)


@pytest.mark.parametrize(
    ("style", "expected"),
    [
        ("inline", SAMPLE),
        (
            "reference",
            "See [`Eq`][1] and [docs][2], [again][2].\n"
            "Code `[not](a link)`, ![img](https://x.test/i.png), [![ci](https://x.test/b.svg)][3]."
            "\n\n```\n[in](code)\n```\n\n> quoted [q][4]\n\n"
            '[1]: https://x.test/eq "Eq"\n[2]: https://x.test/d\n[3]: https://x.test/ci\n'
            "[4]: https://x.test/q\n",
        ),
        (
            "none",
            "See `Eq` and docs, again.\n"
            "Code `[not](a link)`, ![img](https://x.test/i.png), ![ci](https://x.test/b.svg)."
            "\n\n```\n[in](code)\n```\n\n> quoted q",
        ),
    ],
)
def test_link_styles(style: str, expected: str) -> None:
    assert restyle_links(SAMPLE, style) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "markdown",
    ["no links at all", "[escaped \\[brackets\\]](https://x.test/e)", "~~~\n[a](b)\n~~~"],
)
def test_reference_style_round_trips_the_link_text(markdown: str) -> None:
    out = restyle_links(markdown, "reference")
    if "](https" in markdown:
        assert out.startswith("[escaped \\[brackets\\]][1]")
        assert out.endswith("[1]: https://x.test/e\n")
    else:
        assert out == markdown
