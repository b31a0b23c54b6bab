"""The attention explorer: the page's embedded data, that it requests nothing, and how it behaves in Chromium."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
import torch
from helpers import fork_zoo, watched_page
from helpers.tiny_captioner import GRID, caption_model, caption_task

import zoo
from zoo import registry
from zoo.model import Seq2Seq
from zoo.registry import discovery
from zoo.viz.attention_maps import SentenceAttention, sentence_attention
from zoo.viz.explorer import EXPLORER_FILE, explorer_data, render_explorer, write_attention_explorer

discovery.discover()

SENTENCE = "the dog sat on a mat"
LAYERS, HEADS = 2, 3
KINDS = ["encoder_self", "decoder_self", "cross"]


def tiny_model(task, encoder="transformer", decoder="transformer", attention="scaled_dot"):
    """A real, untrained model: LAYERS x HEADS where it has attention layers."""
    names = {"frontend": "tokens", "posenc": "none", "encoder": encoder, "decoder": decoder, "attention": attention}
    small = {
        "dim": 12,
        "hidden_size": 12,
        "embed_dim": 12,
        "d_model": 4 * HEADS,
        "heads": HEADS,
        "layers": LAYERS,
        "ff_dim": 16,
    }
    cfg = {}
    for kind, name in names.items():
        defaults = registry.default_config(kind, name)
        cfg[kind] = {**defaults, **{k: v for k, v in small.items() if k in defaults}}
    torch.manual_seed(0)
    return Seq2Seq(cfg, task.source_description(), task.target_vocab_size)


@pytest.fixture(scope="module")
def caption_page(tmp_path_factory):
    """The explorer of a tiny untrained captioner's caption of one scene, and the data it embeds."""
    task, image = caption_task()
    path = write_attention_explorer(caption_model(task), task, image, tmp_path_factory.mktemp("caption"))
    return path, embedded_data(path.read_text(encoding="utf-8"))


def embedded_data(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="attention-data">(.*?)</script>', page, re.S)
    return json.loads(match.group(1))


# --------------------------------------------------------------------------- the page as a file
def test_page_embeds_every_kind_layer_head_and_token(task, tmp_path):
    model = tiny_model(task)
    path = write_attention_explorer(model, task, SENTENCE, tmp_path / "maps")
    assert path == tmp_path / "maps" / EXPLORER_FILE
    data = embedded_data(path.read_text(encoding="utf-8"))
    attention = sentence_attention(model, task, SENTENCE)

    assert data["source"] == SENTENCE and data["output"] == attention.output
    assert data["components"]["encoder"] == "transformer" and data["components"]["attention"] == "scaled_dot"
    assert [kind["name"] for kind in data["kinds"]] == KINDS
    tokens = SENTENCE.split()
    for kind in data["kinds"]:
        assert kind["absent"] is None
        assert (kind["queries"], kind["keys"]) == attention.axes(kind["name"])
        assert len(kind["layers"]) == LAYERS and all(len(layer) == HEADS for layer in kind["layers"])
        for layer, weights in zip(kind["layers"], attention.maps[kind["name"]]):
            torch.testing.assert_close(torch.tensor(layer, dtype=torch.float32), weights, atol=6e-4, rtol=0)
    assert data["kinds"][0]["queries"] == tokens and data["kinds"][2]["keys"] == tokens
    assert data["kinds"][1]["queries"][0] == "<s>" and data["kinds"][2]["queries"][-1] == "</s>"


class Resources(HTMLParser):
    """The elements of a page that name something to load (a src or href attribute)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.found += [(tag, name) for name, _ in attrs if name in ("src", "href")]


def test_page_requests_nothing(task, caption_page, tmp_path):
    translation = write_attention_explorer(tiny_model(task), task, SENTENCE, tmp_path).read_text(encoding="utf-8")
    for page in (translation, caption_page[0].read_text(encoding="utf-8")):
        assert "http://" not in page and "https://" not in page
        assert not re.search(r"<(link|img|iframe|object|embed)\b", page)
        parser = Resources()
        parser.feed(page)
        assert parser.found == []
        assert not re.search(r"\bimport\b|\bfetch\(|XMLHttpRequest|WebSocket|EventSource|url\(", page)
        assert page.count("<script") == 2  # the data and the inline script, neither with a src
    image = embedded_data(caption_page[0].read_text(encoding="utf-8"))["image"]["src"]
    assert image.startswith("data:image/png;base64,"), "the image travels inside the page"


def test_absent_kinds_are_named_with_their_reason(task, tmp_path):
    rnn = embedded_data(
        write_attention_explorer(
            tiny_model(task, "gru", "rnn", "additive"), task, SENTENCE, tmp_path / "rnn"
        ).read_text()
    )
    present = [kind for kind in rnn["kinds"] if not kind["absent"]]
    assert (
        [kind["name"] for kind in present] == ["cross"]
        and len(present[0]["layers"]) == 1
        and len(present[0]["layers"][0]) == 1
    )
    reasons = {kind["name"]: kind["absent"] for kind in rnn["kinds"] if kind["absent"]}
    assert reasons == {
        "encoder_self": "the encoder 'gru' has no self-attention",
        "decoder_self": "the decoder 'rnn' has no self-attention",
    }

    none = embedded_data(
        write_attention_explorer(tiny_model(task, "gru", "rnn", "none"), task, SENTENCE, tmp_path / "none").read_text()
    )
    assert all(kind["absent"] for kind in none["kinds"]) and "attention=none" in none["kinds"][2]["absent"]


def test_labels_cannot_close_the_script_element():
    labels = {"source": ["</script>"], "target_in": [], "target_out": ["<!--"]}
    tricky = SentenceAttention("</script><b>x", "y", {"cross": [torch.tensor([[[1.0]]])]}, labels)
    page = render_explorer(explorer_data(tricky))
    assert page.count("</script>") == 2 and "<!--" not in page
    data = embedded_data(page)
    assert (
        data["source"] == "</script><b>x"
        and data["kinds"][2]["keys"] == ["</script>"]
        and data["kinds"][2]["queries"] == ["<!--"]
    )


def test_page_is_logged_to_wandb(task, tmp_path):
    import wandb

    logged = []

    class FakeRun:
        def log(self, data):
            logged.append(data)

    write_attention_explorer(tiny_model(task, "gru", "rnn", "additive"), task, SENTENCE, tmp_path, wandb_run=FakeRun())
    assert list(logged[0]) == ["attention/explorer"] and isinstance(logged[0]["attention/explorer"], wandb.Html)


@pytest.mark.slow
def test_cli_writes_the_explorer_into_the_run_and_prints_its_path(trained_run, tmp_path):
    out = fork_zoo("attention", str(trained_run), "the dog sees the cat", "--html", cwd=tmp_path).stdout
    path = trained_run / "attention" / "the_dog_sees_the_cat" / EXPLORER_FILE
    assert out.strip() == str(path)
    data = embedded_data(path.read_text(encoding="utf-8"))
    assert data["kinds"][0]["absent"] and data["kinds"][2]["keys"] == ["the", "dog", "sees", "the", "cat"]
    assert zoo.load(trained_run).attention_explorer("the dog sees the cat") == path  # the same from Python


def test_caption_page_embeds_the_image_and_names_the_grid_cells(caption_page):
    _, data = caption_page
    rows, columns = GRID
    assert data["source"].startswith("image scenes-") and data["output"] == "big big are are are"
    assert (data["image"]["rows"], data["image"]["columns"]) == GRID
    kinds = {kind["name"]: kind for kind in data["kinds"]}
    cross = kinds["cross"]
    assert cross["grid"] and cross["key_axis"] == "image cells"
    assert cross["keys"] == [f"r{r}c{c}" for r in range(rows) for c in range(columns)]
    assert cross["queries"] == [*data["output"].split(), "</s>"]
    assert all(len(row) == rows * columns for layer in cross["layers"] for head in layer for row in head)
    assert not kinds["decoder_self"]["grid"] and kinds["encoder_self"]["absent"]


# --------------------------------------------------------------------------- the page in Chromium (conftest's
# `chromium`)
def open_page(browser, path):
    """The page at ``path`` once drawn, with the lists its console errors and requests go to."""
    page = watched_page(browser, path.as_uri())
    page.wait_for_selector("body[data-ready]")
    return page


def lines(page) -> list[dict]:
    return page.eval_on_selector_all(
        "line.link",
        "ls => ls.map(l => ({head: l.dataset.head === 'mean' ? 'mean' : +l.dataset.head, query: +l.dataset.query, "
        "key: +l.dataset.key, "
        "weight: +l.dataset.weight, opacity: +l.getAttribute('stroke-opacity'), colour: l.getAttribute('stroke')}))",
    )


@pytest.mark.slow
def test_explorer_in_chromium_hover_select_and_screenshot(chromium, task, tmp_path):
    path = write_attention_explorer(tiny_model(task), task, SENTENCE, tmp_path)
    data = embedded_data(path.read_text(encoding="utf-8"))
    encoder = data["kinds"][0]
    page = open_page(chromium, path)

    assert page.locator("#kinds button:not([disabled])").count() == 3
    assert page.locator("#heads-grid .thumb canvas").count() == LAYERS * (HEADS + 1)  # and each layer's average
    assert page.locator(".token.query").all_text_contents() == SENTENCE.split()
    assert page.locator(".token.key").all_text_contents() == SENTENCE.split()
    before = lines(page)  # nothing hovered: every line of layer 1, head 1
    assert {(link["query"], link["key"]) for link in before} == {
        (i, j) for i, row in enumerate(encoder["layers"][0][0]) for j, w in enumerate(row) if w >= 0.01
    }
    assert all(link["head"] == 0 and link["opacity"] == link["weight"] for link in before)

    page.hover(".token.query[data-index='1']")
    hovered = lines(page)
    row = encoder["layers"][0][0][1]
    assert {link["query"] for link in hovered} == {1}
    assert {link["key"]: link["weight"] for link in hovered} == {j: w for j, w in enumerate(row) if w >= 0.01}
    assert page.locator(".token.query.focus").text_content() == "dog"
    assert page.locator(".weight-label").all_text_contents() == [f"{w:.2f}" for w in row]
    page.hover(".token.key[data-index='4']")
    assert {link["key"] for link in lines(page)} == {4} and page.locator(".weight-label").count() == len(
        SENTENCE.split()
    )

    page.click("#heads-grid .thumb[data-layer='1'][data-head='2']")  # layer 2, head 3
    assert "layer 2 of 2 · head 3 of 3" in page.inner_text("#view-title")
    assert page.locator("#heads-grid .thumb.selected").get_attribute("data-head") == "2"
    page.hover(".token.query[data-index='0']")
    assert [link["weight"] for link in lines(page)] == [w for w in encoder["layers"][1][2][0] if w >= 0.01]

    page.check("#all-heads")  # the mouse left the token: every line of every head of layer 2
    every = lines(page)
    assert {link["head"] for link in every} == set(range(HEADS)) and len({link["colour"] for link in every}) == HEADS
    assert len(every) == sum(w >= 0.01 for head in encoder["layers"][1] for row in head for w in row)
    page.hover(".token.query[data-index='0']")
    assert page.locator(".weight-box").count() == HEADS * len(SENTENCE.split())

    page.click("#kinds button[data-kind='cross']")
    cross = data["kinds"][2]
    assert page.locator(".token.query").all_text_contents() == cross["queries"] and cross["queries"][-1] == "</s>"
    page.hover(".token.query[data-index='0']")
    screenshot = tmp_path / "explorer.png"
    page.screenshot(path=str(screenshot), full_page=True)
    assert screenshot.read_bytes().startswith(b"\x89PNG") and screenshot.stat().st_size > 20_000

    assert page.errors == []
    assert page.requests == [path.as_uri()]  # the page itself, nothing else
    page.close()


@pytest.mark.slow
def test_models_without_some_kinds_in_chromium(chromium, task, tmp_path):
    rnn = open_page(
        chromium, write_attention_explorer(tiny_model(task, "gru", "rnn", "additive"), task, SENTENCE, tmp_path / "rnn")
    )
    assert rnn.locator("#kinds button[disabled]").all_inner_texts() == [
        "Encoder self-attention",
        "Decoder self-attention",
    ]
    assert "decoder self-attention — the decoder 'rnn' has no self-attention" in rnn.inner_text("#absent")
    assert rnn.locator("#heads-grid .thumb").count() == 1 and rnn.locator("#all-heads").is_disabled()
    rnn.hover(".token.key[data-index='0']")
    assert {link["key"] for link in lines(rnn)} == {0}

    none = open_page(
        chromium, write_attention_explorer(tiny_model(task, "gru", "rnn", "none"), task, SENTENCE, tmp_path / "none")
    )
    assert none.locator("#kinds button[disabled]").count() == 3
    assert none.locator("#explorer").is_hidden() and none.locator("#empty").is_visible()
    assert rnn.errors == [] and none.errors == []
    rnn.close()
    none.close()


def focused(page) -> str:
    """The focused element, as these tests name it: 'tab cross', 'chip mean', 'query 1', 'word 0', an id, ..."""
    return page.evaluate(
        """() => { const e = document.activeElement;
        if (e.matches('[role=tab]')) return 'tab ' + e.dataset.kind;
        if (e.matches('.chip')) return 'chip ' + e.dataset.head;
        if (e.matches('.token')) return (e.classList.contains('query') ? 'query ' : 'key ') + e.dataset.index;
        if (e.matches('.word')) return 'word ' + e.dataset.index;
        if (e.matches('.thumb')) return 'thumb ' + e.dataset.layer + ' ' + e.dataset.head;
        return e.id || e.tagName.toLowerCase(); }"""
    )


def tab_through(page, presses: int) -> list[str]:
    order = []
    for _ in range(presses):
        page.keyboard.press("Tab")
        order.append(focused(page))
    return order


def canvas_colours(page, selector: str) -> int:
    """How many colours the canvas at ``selector`` shows (1: blank)."""
    return page.eval_on_selector(
        selector,
        """canvas => { const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
        const seen = new Set();
        for (let k = 0; k < pixels.length; k += 4) seen.add((pixels[k] << 16) | (pixels[k + 1] << 8) | pixels[k + 2]);
        return seen.size; }""",
    )


@pytest.mark.slow
def test_the_keyboard_reaches_every_control_and_walks_the_tokens(chromium, task, tmp_path):
    path = write_attention_explorer(tiny_model(task), task, SENTENCE, tmp_path)
    cross = embedded_data(path.read_text(encoding="utf-8"))["kinds"][2]
    page = open_page(chromium, path)

    assert tab_through(page, 1) == ["tab encoder_self"]
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")  # the arrow keys move between the kinds' tabs and select them
    assert focused(page) == "tab cross"
    assert page.locator("#kinds [aria-selected='true']").get_attribute("data-kind") == "cross"
    assert tab_through(page, 8) == [
        "layer", "chip 0", "chip 1", "chip 2", "chip mean", "all-heads", "query 0", "key 0"
    ]  # fmt: skip
    assert page.eval_on_selector(".token.key[data-index='0'] rect", "r => getComputedStyle(r).stroke") != "none"
    assert tab_through(page, 1) == ["thumb 0 0"]

    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")  # back to the first output token: focusing it shows its attention
    page.keyboard.press("ArrowDown")
    assert focused(page) == "query 1" and page.locator(".token.query.focus").get_attribute("data-index") == "1"
    assert page.locator(".weight-label").all_text_contents() == [f"{w:.2f}" for w in cross["layers"][0][0][1]]
    page.keyboard.press("End")
    assert focused(page) == f"query {len(cross['queries']) - 1}"
    page.keyboard.press("ArrowRight")
    assert focused(page).startswith("key ") and page.locator(".token.key.focus").count() == 1

    page.focus("#head-chips .chip[data-head='mean']")
    page.keyboard.press("Enter")
    assert focused(page) == "chip mean", "the chosen chip keeps the focus"
    assert page.eval_on_selector(".chip[data-head='mean']", "c => getComputedStyle(c).outlineStyle") == "solid"
    assert "average of 3 heads" in page.inner_text("#view-title")
    assert page.errors == []
    page.close()


@pytest.mark.slow
def test_head_average_lines_are_the_mean_of_the_heads(chromium, task, tmp_path):
    path = write_attention_explorer(tiny_model(task), task, SENTENCE, tmp_path)
    cross = embedded_data(path.read_text(encoding="utf-8"))["kinds"][2]
    page = open_page(chromium, path)
    page.click("#kinds button[data-kind='cross']")
    page.hover(".token.query[data-index='2']")
    one = lines(page)
    page.click("#head-chips .chip[data-head='mean']")
    page.hover(".token.query[data-index='2']")
    averaged = lines(page)
    mean = torch.tensor(cross["layers"][0], dtype=torch.float64).mean(0)[2]
    assert {link["head"] for link in averaged} == {"mean"}
    assert {link["key"]: link["weight"] for link in averaged} == pytest.approx(
        {j: float(w) for j, w in enumerate(mean) if w >= 0.01}, abs=1e-9
    )
    assert averaged != one
    assert page.locator("#heads-grid .thumb.selected").get_attribute("data-head") == "mean"
    page.close()


@pytest.mark.slow
def test_caption_explorer_draws_the_image_and_averages_heads(chromium, caption_page):
    path, data = caption_page
    cross = next(kind for kind in data["kinds"] if kind["name"] == "cross")
    page = open_page(chromium, path)
    assert page.locator("#kinds button[aria-selected='true']").get_attribute("data-kind") == "cross"
    assert page.locator("#lines-view").is_hidden() and page.locator("#image-view").is_visible()
    assert page.locator("#words .word").all_text_contents() == cross["queries"]
    panel = "#image-panels canvas"
    assert page.eval_on_selector(panel, "c => c.width * c.height") > 0 and canvas_colours(page, panel) > 50
    # It opens as the PNG pictures draw a caption: the last layer, its heads averaged, on 0..the caption's highest.
    assert "layer 2 of 2 · average of 3 heads" in page.inner_text("#view-title")
    assert page.locator("#image-panels .panel").get_attribute("data-head") == "mean"
    mean = torch.tensor(cross["layers"][-1], dtype=torch.float64).mean(0)
    assert float(page.inner_text("#scale-top")) == pytest.approx(float(mean.max()), abs=1e-3)
    averaged = page.eval_on_selector(panel, "c => c.toDataURL()")

    page.click("#head-chips .chip[data-head='0']")
    assert page.locator("#image-panels .panel").get_attribute("data-head") == "0"
    head = torch.tensor(cross["layers"][-1][0], dtype=torch.float64)
    assert page.inner_text("#scale-top") == f"{head.max():.3f}"
    assert page.eval_on_selector(panel, "c => c.toDataURL()") != averaged
    assert page.locator("#heads-grid .thumb.selected").get_attribute("data-head") == "0"
    page.check("#all-heads")
    assert page.locator("#image-panels .panel").count() == HEADS
    assert page.errors == [] and page.requests == [path.as_uri()]
    page.close()


@pytest.mark.slow
def test_the_keyboard_walks_along_the_caption(chromium, caption_page):
    path, data = caption_page
    words = next(kind for kind in data["kinds"] if kind["name"] == "cross")["queries"]
    page = open_page(chromium, path)
    assert tab_through(page, 8) == [
        "tab cross", "layer", "chip 0", "chip 1", "chip 2", "chip mean", "all-heads", "word 0"
    ]  # fmt: skip
    first = page.eval_on_selector("#image-panels canvas", "c => c.toDataURL()")
    page.keyboard.press("ArrowRight")
    assert focused(page) == "word 1" and page.locator("#words .word.focus").get_attribute("data-index") == "1"
    assert page.locator("#words .word[aria-pressed='true']").get_attribute("data-index") == "1"
    page.keyboard.press("End")
    assert focused(page) == f"word {len(words) - 1}" and "\u201c</s>\u201d" in page.inner_text("#image-readout")
    assert page.eval_on_selector("#image-panels canvas", "c => c.toDataURL()") != first
    assert page.eval_on_selector("#words .word:focus", "w => getComputedStyle(w).outlineStyle") == "solid"
    assert page.errors == []
    page.close()
