"""Screenshots on notes (issue #30 item 4) in Chromium, on Material and on the plain theme: taken
in the note's popup or afterwards from the panel, the overlay absent from the image, at device
pixel ratio 1, the 1 MB limit, and gone with the note."""

from __future__ import annotations

import base64
from typing import Any

from playwright.sync_api import Browser, Page, expect

import annotate

from .conftest import MaterialServer, Server, annotate_selection, open_page, select_text

# The highlight of an open note (overlay/annotate.css) over a white page: a yellow no text,
# link or page colour of these fixtures has.
YELLOWISH = "(r, g, b) => r > 200 && g > 180 && b < 190 && r - b > 60"


def pixels(page: Page, webp: bytes) -> dict[str, Any]:
    """The image's size and how many of its pixels have the highlight's yellow, decoded by the
    browser."""
    return page.evaluate(
        """async ([data, test]) => {
          const img = new Image();
          img.src = 'data:image/webp;base64,' + data;
          await img.decode();
          const c = document.createElement('canvas');
          c.width = img.width; c.height = img.height;
          const g = c.getContext('2d'); g.drawImage(img, 0, 0);
          const px = g.getImageData(0, 0, c.width, c.height).data;
          const yellow = eval(test);
          let n = 0;
          for (let i = 0; i < px.length; i += 4) if (yellow(px[i], px[i + 1], px[i + 2])) n++;
          return {width: img.width, height: img.height, yellow: n};
        }""",
        [base64.b64encode(webp).decode(), YELLOWISH],
    )


def region_pixels(page: Page, selector: str) -> dict[str, Any]:
    """The same count over Chromium's own screenshot of an element: what the reviewer sees."""
    return pixels(page, _as_webp(page, page.locator(selector).screenshot()))


def _as_webp(page: Page, png: bytes) -> bytes:
    data = page.evaluate(
        """async (png) => {
          const img = new Image(); img.src = 'data:image/png;base64,' + png; await img.decode();
          const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
          c.getContext('2d').drawImage(img, 0, 0);
          const blob = await new Promise((r) => c.toBlob(r, 'image/webp', 1));
          const b = new Uint8Array(await blob.arrayBuffer()); let s = '';
          for (const x of b) s += String.fromCharCode(x);
          return btoa(s);
        }""",
        base64.b64encode(png).decode(),
    )
    return base64.b64decode(data)


def shots(server: Server) -> dict[str, annotate.screenshots.Screenshot]:
    with annotate.open(server.project) as store:
        return {k: store.screenshots.get(k) for k in store.screenshots.list()}


def test_material_screenshot_from_the_panel_leaves_the_overlay_out(
    page: Page, material_server: MaterialServer
) -> None:
    open_page(page, material_server.url)
    annotate_selection(page, "lighthouses and their keepers", "Say who keeps them.")
    # The note is painted on the page: Chromium's own picture of the paragraph shows it.
    paragraph = "article > p:last-of-type"
    assert region_pixels(page, paragraph)["yellow"] > 50
    page.get_by_role("button", name="Review panel").click()
    row = page.locator("#annotate-list li").filter(has_text="Say who keeps them.")
    # The overlay's host is hidden while the page is drawn (whatever the capture library would
    # draw of it), and shown again after.
    page.evaluate(
        """() => { window.seen = []; const host = document.getElementById('annotate-host');
             new MutationObserver(() => seen.push(host.style.visibility))
               .observe(host, {attributes: true, attributeFilter: ['style']}); }"""
    )
    row.get_by_role("button", name="Screenshot").click()
    expect(page.locator("#annotate-host .toast")).to_contain_text("Screenshot attached")
    assert page.evaluate("() => seen") == ["hidden", ""]
    [(note_id, shot)] = shots(material_server).items()
    [note] = annotate.open(material_server.project).list_annotations()
    assert note_id == note.id
    seen = pixels(page, shot.data)
    # The passage with a margin, not the page; and without the highlight (nor the panel).
    assert (seen["width"], seen["height"]) == (shot.width, shot.height)
    assert 100 < shot.width < 400 and 15 < shot.height < 60
    assert seen["yellow"] == 0
    # Once taken, the page shows its highlights again.
    assert region_pixels(page, paragraph)["yellow"] > 50


def test_plain_theme_attach_in_the_popup_at_pixel_ratio_1_then_gone_with_the_note(
    browser: Browser, plain_server: Server
) -> None:
    context = browser.new_context(device_scale_factor=2)
    page = context.new_page()
    open_page(page, plain_server.url)
    select_text(page, "a unique sentence about lighthouses")
    page.get_by_role("button", name="Annotate").click()
    page.get_by_label("Note", exact=True).fill("Shorter, please.")
    page.get_by_role("button", name="Attach screenshot").click()
    dialog = page.get_by_role("dialog", name="New note")
    expect(dialog).to_contain_text("Screenshot attached")
    # The capture's code came on first use, from the overlay's route.
    assert page.evaluate(
        "() => performance.getEntriesByType('resource').some(e => /overlay\\/capture\\.js/.test(e.name))"
    )
    page.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    [(note_id, shot)] = shots(plain_server).items()
    # Device pixel ratio 1 on a 2x screen: as wide as the passage in CSS pixels, plus margins.
    width = page.evaluate(
        """() => { const p = [...document.querySelectorAll('p')].find(
             (x) => x.textContent.includes('lighthouses')); const r = document.createRange();
             const t = p.firstChild; const at = t.data.indexOf('a unique sentence about lighthouses');
             r.setStart(t, at); r.setEnd(t, at + 35); return r.getBoundingClientRect().width; }"""
    )
    assert abs(shot.width - (width + 16)) <= 2
    assert pixels(page, shot.data)["yellow"] == 0
    # Deleted with the note, from the panel.
    page.get_by_role("button", name="Review panel").click()
    row = page.locator("#annotate-list li").filter(has_text="Shorter, please.")
    row.get_by_role("button", name="Delete").click()
    row.get_by_role("button", name="Delete").click()
    expect(row).to_be_hidden()
    assert shots(plain_server) == {}
    assert note_id
    context.close()


def test_a_screenshot_over_1_mb_is_refused_with_a_clear_error(
    page: Page, plain_server: Server
) -> None:
    open_page(page, plain_server.url)
    # Noise does not compress: 2,000 × 2,000 of it is several MB as WebP.
    page.evaluate(
        """() => { const c = document.createElement('canvas'); c.id = 'noise';
             c.width = 2000; c.height = 2000; c.style.display = 'block';
             const g = c.getContext('2d'); const img = g.createImageData(2000, 2000);
             for (let i = 0; i < img.data.length; i++) img.data[i] = Math.random() * 256 | 0;
             g.putImageData(img, 0, 0); document.querySelector('main').prepend(c); }"""
    )
    page.keyboard.down("Alt")
    page.locator("#noise").click(position={"x": 100, "y": 100})
    page.keyboard.up("Alt")
    page.get_by_label("Note", exact=True).fill("Too big to picture.")
    page.get_by_role("button", name="Attach screenshot").click()
    toast = page.locator("#annotate-host .toast.error")
    expect(toast).to_contain_text("over the 1 MB limit", timeout=30_000)
    dialog = page.get_by_role("dialog", name="New note")
    expect(dialog).not_to_contain_text("Screenshot attached")
    page.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    assert shots(plain_server) == {}
