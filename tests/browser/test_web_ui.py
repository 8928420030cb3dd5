"""The web UI in a real browser: crawl from the form, search, read, delete, update, cancel.

Each page is screenshotted at desktop and phone widths (``test-output/ui``) and checked
with axe-core (from the axe-playwright-python package: no download at run time) for
serious or critical accessibility violations.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Dialog, Page, expect

from tests.browser.conftest import WIDTHS
from tests.browser.ui_support import API_KEY, INJECTED_TITLE, UIServer, ui_server

pytestmark = pytest.mark.slow
_CRAWL_TIMEOUT_MS = 60_000


def look(page: Page, shots: Path, name: str) -> None:
    """Screenshot the page at both widths and assert axe finds nothing serious."""
    for width, (w, h) in WIDTHS.items():
        page.set_viewport_size({"width": w, "height": h})
        page.screenshot(path=str(shots / f"{name}-{width}.png"))
    page.set_viewport_size({"width": 1280, "height": 800})
    results = Axe().run(page)
    bad = [
        (v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert bad == [], f"{name}: accessibility violations {bad}"


def start_crawl(page: Page, ui: UIServer, url: str, *, max_pages: int = 50) -> None:
    page.goto(f"{ui.url}/crawls")
    page.get_by_label("Start URL").fill(url)
    page.get_by_label("Pages at most").fill(str(max_pages))
    page.get_by_role("button", name="Start crawl").click()
    expect(page).to_have_url(re.compile(r"/crawls/[0-9a-f]{32}$"))


def test_crawl_search_read_delete(page: Page, ui: UIServer, shots: Path) -> None:
    """Crawl the example site from the form, watch it finish, search, open, delete."""
    page.goto(f"{ui.url}/crawls")
    look(page, shots, "crawls-form")
    start_crawl(page, ui, f"{ui.site}/")
    expect(page.locator("#p-status")).to_have_text("done", timeout=_CRAWL_TIMEOUT_MS)
    expect(page.get_by_role("heading", name="Summary")).to_be_visible()
    assert int(page.locator("#p-indexed").inner_text()) >= 10
    expect(page.get_by_role("cell", name="robots", exact=True)).to_be_visible()
    look(page, shots, "crawl-done")

    page.goto(ui.url + "/")
    box = page.get_by_label("Search the stored documents")
    box.fill("install")
    box.press("Enter")
    expect(page.locator(".result").first).to_be_visible()
    look(page, shots, "search")
    # Keyboard: ArrowDown from the box focuses the first result, Enter opens it.
    page.get_by_label("Search the stored documents").focus()
    page.keyboard.press("ArrowDown")
    first = page.locator(".result-link").first
    expect(first).to_be_focused()
    href = first.get_attribute("href") or ""
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/documents/[^/?#]+"))
    if "#" in href:  # the store gave a section: the page opens there
        target = page.locator(f"[id='{href.split('#', 1)[1]}']")
        expect(target).to_be_in_viewport()
    look(page, shots, "document")

    page.get_by_role("link", name="Markdown").click()
    expect(page.locator("pre.raw")).to_be_visible()
    look(page, shots, "markdown")
    page.get_by_role("link", name="Provenance").click()
    expect(page.get_by_text("Content hash")).to_be_visible()
    expect(page.locator("code.hash")).to_have_text(re.compile(r"^[0-9a-f]{16,}$"))
    look(page, shots, "provenance")

    doc_url = page.url.split("?")[0]
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete").click()
    expect(page.get_by_role("status")).to_have_text("The document was deleted.")
    assert page.goto(doc_url).status == 404  # type: ignore[union-attr]
    page.goto(f"{ui.url}/documents")
    look(page, shots, "documents")
    page.goto(f"{ui.url}/documents?removed=removed")
    expect(page.get_by_text("No documents match these filters.")).to_be_visible()


def test_source_update(page: Page, ui: UIServer, shots: Path) -> None:
    """Run a source update from its page; the change report appears."""
    page.goto(f"{ui.url}/sources")
    look(page, shots, "sources")
    page.get_by_role("link", name="example").click()
    page.get_by_role("button", name="Update now").click()
    expect(page.locator("#source-state")).to_have_text("ok", timeout=_CRAWL_TIMEOUT_MS)
    expect(page.locator(".report").first).to_contain_text("pages crawled")
    look(page, shots, "source")


def test_cancel_a_running_crawl(page: Page, ui: UIServer, shots: Path) -> None:
    """A crawl whose page never answers is running until Cancel stops it."""
    start_crawl(page, ui, f"{ui.trap}/slow/", max_pages=1)
    expect(page.locator("#p-status")).to_have_text("running")
    look(page, shots, "crawl-running")
    page.get_by_role("button", name="Cancel crawl").click()
    expect(page.locator("#p-status")).to_have_text("cancelled")


def test_hostile_pages_render_inert(page: Page, ui: UIServer, shots: Path) -> None:
    """Scripts, handlers, javascript:/data: links and a Markdown-injection title do nothing."""
    dialogs: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    start_crawl(page, ui, f"{ui.trap}/xss/", max_pages=1)
    expect(page.locator("#p-status")).to_have_text("done", timeout=_CRAWL_TIMEOUT_MS)
    page.locator("#p-rows a").first.click()
    expect(page.locator("h1.doc-title")).to_contain_text("Release notes")
    look(page, shots, "hostile-document")
    pages = [page.url, f"{ui.url}/documents/{ui.hostile_id}"]
    page.goto(pages[1] + "#sec-top")
    expect(page.locator("#sec-top")).to_have_text("Raw hostile Markdown")
    expect(page.locator("h1.doc-title")).to_have_text(INJECTED_TITLE)
    look(page, shots, "hostile-markdown")
    for url in pages:
        page.goto(url)
        article = page.locator("article.markdown")
        active = "script, iframe, img, [onerror], [onmouseover], [onclick]"
        assert article.locator(active).count() == 0
        for link in article.locator("a").all():
            assert re.match(r"^(https?:|mailto:|/|#)", link.get_attribute("href") or "#"), link
        for link in article.locator("a").all():
            link.hover()
    page.goto(f"{ui.url}/?q=hostile")
    expect(page.locator(".result-title").first).to_have_text(INJECTED_TITLE)
    page.goto(f"{ui.url}/documents")
    page.wait_for_load_state("networkidle")
    assert dialogs == []
    assert ui.hits == [], f"the UI made the browser request {ui.hits}"


def test_reading_and_searching_work_without_javascript(
    browser: Browser, ui: UIServer, shots: Path
) -> None:
    """With scripts off, the search form and the document pages still work."""
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(ui.url + "/")
        page.get_by_label("Search the stored documents").fill("hostile")
        page.get_by_role("button", name="Search").click()
        expect(page).to_have_url(re.compile(r"\?q=hostile$"))
        page.locator(".result-link").first.click()
        expect(page.locator("#sec-top")).to_be_visible()
        page.get_by_role("link", name="Provenance").click()
        expect(page.get_by_text("Content hash")).to_be_visible()
    finally:
        context.close()


def test_a_key_protected_server_asks_for_the_key_once(
    browser: Browser, tmp_path: Path, shots: Path
) -> None:
    """The login form keeps the key's proof in an HttpOnly, SameSite=Strict cookie."""
    with ui_server(tmp_path / "key.db", api_key=API_KEY) as served:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(f"{served.url}/documents")
            expect(page).to_have_url(re.compile(r"/login\?next=/documents$"))
            look(page, shots, "login")
            page.get_by_label("API key").fill("not the key at all")
            page.get_by_role("button", name="Log in").click()
            expect(page.get_by_role("alert")).to_have_text("That is not this server's API key.")
            page.get_by_label("API key").fill(API_KEY)
            page.get_by_role("button", name="Log in").click()
            expect(page).to_have_url(f"{served.url}/documents")
            session = {c["name"]: c for c in context.cookies()}["sitelore_session"]
            assert session.get("httpOnly") is True
            assert session.get("sameSite") == "Strict"
            assert API_KEY not in session.get("value", "")
            page.goto(f"{served.url}/sources")
            expect(page.get_by_role("heading", name="Sources")).to_be_visible()
            page.get_by_role("button", name="Log out").click()
            page.goto(f"{served.url}/sources")
            expect(page).to_have_url(re.compile(r"/login"))
        finally:
            context.close()
