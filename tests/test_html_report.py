"""report.html: a self-contained page built from a realistic report and the demo data, opened in headless
chromium (skipped when there is none) to check what its scripts leave in the DOM and how it renders."""
from __future__ import annotations

import html
import io
import re
import shutil
import struct
import subprocess
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from rescorer import read_nbest
from rescorer.changes import changed
from rescorer.report.html import html_page, write_html
from rescorer.metrics import NBestStats, WER, paired_bootstrap

DEMO = Path(__file__).resolve().parent.parent / "recipes" / "demo" / "data"
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
needs_browser = pytest.mark.skipif(BROWSER is None, reason="no chromium or chromium-browser binary on PATH (Debian: apt-get install chromium)")
HOSTILE = 'A <script>alert("x")</script> & "QUOTED" \'WORDS\''


def demo_set(name: str, switched: int):
    """The demo set's report entry and changes when the first ``switched`` utterances take their second
    hypothesis instead of the first."""
    nbest = read_nbest(DEMO / name, refs=DEMO / name / "ref.trn")
    stats = NBestStats.compute(nbest, WER())
    base = stats.baseline_ranks()
    ranks = np.array([1 if u < switched and len(utt.hyps) > 1 else 0 for u, utt in enumerate(nbest)])
    ci = paired_bootstrap(stats, base, ranks, samples=200, seed=0)
    entry = {"format": nbest.fmt, "utterances": len(nbest), "hypotheses": nbest.num_hypotheses,
             "baseline": {"wer": 100 * stats.score(base)}, "rescored": {"wer": 100 * stats.score(ranks)},
             "oracle": {"wer": 100 * stats.score(stats.oracle_ranks())},
             "ci95": {"of": "rescored - baseline wer", "low": 100 * ci["low"], "high": 100 * ci["high"]},
             "changed_1best": int((ranks != base).sum()), "change": significance(ci["low"], ci["high"])}
    utts = nbest.utterances
    return entry, changed([u.id for u in utts], [u.hyps[0].text for u in utts],
                          [u.hyps[r].text for u, r in zip(utts, ranks)], [u.ref for u in utts], "wer")


def significance(low: float, high: float) -> str:
    """The change in words as a rescoring report gives it for WER."""
    return "no significant change" if low <= 0 <= high else f"significantly {'worse' if low > 0 else 'better'}"


def curve_png() -> bytes:
    from rescorer.report.plots import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(figsize=(6, 3.5))
    xs = np.linspace(0, 1, 21)
    axes.plot(xs, 4.6 - 1.2 * xs + 1.5 * xs ** 2, marker=".")
    axes.axvline(0.4, color="r", linestyle="--")
    axes.set(xlabel="λ lm", ylabel="dev WER (%)")
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def page_parts():
    dev, dev_changes = demo_set("dev_other", 40)
    test, test_changes = demo_set("test_clean", 25)
    dev["tuned_on_this_set"], dev["change"] = True, dev["change"] + " (tuned here)"
    blind_changes = changed(["blind-1", "blind-2"], ["A B C", HOSTILE], ["A B D", "A SCRIPT"], None, "wer")
    report = {"task": "rescore", "data": "demo", "metric": "wer", "units": "percent", "tuned_on": "dev_other",
              "weights": {"lm": 0.35, "lp": 0.5},
              "signature": "rescorer:0.1|wer|transform:default|jiwer:4.0.0|base:asr|lm:0.35/lp:0|search:fast",
              "sets": {"dev_other": dev, "test_clean": test, "blind": {"utterances": 2, "changed_1best": 2}}}
    return report, {"dev_other": dev_changes, "test_clean": test_changes, "blind": blind_changes}, curve_png()


@pytest.fixture(scope="module")
def page(page_parts):
    return html_page(*page_parts)


def test_the_page_fetches_nothing(page, page_parts):
    assert not re.search(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//""", page, re.IGNORECASE)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert 'src="data:image/png;base64,' in page
    assert html_page(page_parts[0], page_parts[1], None).count("<img") == 0


def test_the_page_escapes_every_text(page):
    assert "<script>alert" not in page and HOSTILE in html.unescape(page)  # shown as text
    assert page.count("<script>") == 2  # the page's own two scripts


def test_each_set_gets_the_numbers_it_has(page, page_parts):
    report = page_parts[0]
    tables = re.findall(r'<section class="set" id="set-([^"]+)">.*?<table class="numbers">(.*?)</table>', page, re.S)
    headers = {name: re.findall(r"<th[^>]*>([^<]*)</th>", table) for name, table in tables}
    assert headers["dev_other"] == ["utterances", "before", "after", "best possible (oracle)",
                                    "95% interval of after − before", "change", "1-best changed"]
    assert headers["blind"] == ["utterances", "1-best changed"]
    assert page.count("<caption>WER in percent, lower is better</caption>") == 2
    assert f'{report["sets"]["dev_other"]["baseline"]["wer"]:.2f}' in page
    assert re.search(r'<td class=words>significantly worse \(tuned here\)</td>', page)
    assert "weights tuned on this set" in page and "lm = 0.35, lp = 0.5" in page


def test_every_changed_utterance_is_listed_with_its_verdict(page, page_parts):
    changes = page_parts[1]
    for name, items in changes.items():
        for change in items:
            assert f'<span class="id">{change.id}</span><span class="badge {change.verdict}">' in page
    verdicts = [c.verdict for c in changes["dev_other"]]
    assert {"better", "worse"} <= set(verdicts)
    assert f'better ({verdicts.count("better")})' in page and f'worse ({verdicts.count("worse")})' in page
    assert page.count('<li class="change') == sum(map(len, changes.values()))


def test_words_are_marked_by_how_they_differ(page_parts):
    one = changed(["u"], ["FRANCIS XAVIOUR WAS BORN IN"], ["FRANCIS XAVIER BORN"], ["FRANCIS XAVIER WAS BORN"])
    page = html_page({"metric": "wer", "sets": {}}, {"s": one}, None)
    before = 'FRANCIS <span class="sub" title="reference: XAVIER">XAVIOUR</span> WAS BORN ' \
             '<ins class="ins" title="added">IN</ins>'
    after = 'FRANCIS XAVIER <del class="del" title="left out">WAS</del> BORN'
    assert before in page and after in page and "word errors 2 → 1" in page


def test_write_html_writes_the_page_in_one_step(tmp_path, page_parts, page):
    path = write_html(tmp_path / "out" / "report.html", *page_parts)
    assert path.read_text(encoding="utf-8") == page
    assert sorted(p.name for p in path.parent.iterdir()) == ["report.html"]


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """Headless chromium with a fresh profile; virtual time so scripts finish without waiting on the clock."""
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    command = [BROWSER, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
               "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--virtual-time-budget=5000",
               "--enable-logging=stderr", "--v=0", *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def dumped(tmp_path: Path, page: str, fragment: str = "") -> tuple[str, str]:
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    result = chromium(tmp_path, "--dump-dom", path.as_uri() + fragment)
    return result.stdout, result.stderr


@needs_browser
def test_chromium_runs_the_page_without_errors(tmp_path, page_parts, page):
    dom, log = dumped(tmp_path, page)
    root = re.search(r"<html[^>]*>", dom).group(0)
    assert 'data-ready="yes"' in root and "data-errors" not in root
    assert "Uncaught" not in log
    assert '<table class="numbers">' in dom and "best possible (oracle)" in dom
    first = page_parts[1]["dev_other"][0]
    assert f'<span class="id">{first.id}</span>' in dom
    total = len(page_parts[1]["dev_other"])
    assert f'<span class="shown">showing {total} of {total}</span>' in dom


@needs_browser
def test_chromium_records_a_script_error_in_the_dom(tmp_path, page):
    dom, _ = dumped(tmp_path, page.replace("</main>", "</main><script>noSuchFunction();</script>"))
    assert "noSuchFunction" in re.search(r"<html[^>]*>", dom).group(0)


@needs_browser
def test_the_filter_shows_one_verdict(tmp_path, page_parts, page):
    dom, _ = dumped(tmp_path, page, "#show=worse")
    worse = [c for c in page_parts[1]["dev_other"] if c.verdict == "worse"]
    total = len(page_parts[1]["dev_other"])
    assert f'showing {len(worse)} of {total}' in dom
    assert re.search(r'<div class="changes" data-filter="worse">', dom)
    assert re.search(r'<button type="button" data-show="worse" aria-pressed="true">', dom)


@needs_browser
def test_chromium_renders_a_screenshot(tmp_path, page):
    (tmp_path / "report.html").write_text(page, encoding="utf-8")
    shot = tmp_path / "shot.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,1600", "--hide-scrollbars",
             (tmp_path / "report.html").as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", data[16:24]) == (1280, 1600)
    assert len(data) > 50_000


def test_an_apply_report_says_what_it_is_and_offers_no_verdicts_it_cannot_give():
    from rescorer.changes import changed
    from rescorer.report.html import html_page

    report = {"task": "apply", "data": "new", "metric": "wer", "tuned": "exp/tuned/tuned.yaml", "tuned_on": "dev",
              "sets": {"test": {"utterances": 2, "changed_1best": 1, "references": False}}}
    page = html_page(report, {"test": changed(["u1", "u2"], ["a b", "c"], ["a c", "c"], None)}, None)
    assert "<title>Apply report: new</title>" in page
    assert "the tuned rescorer exp/tuned/tuned.yaml" in page and "Words before → after" in page
    assert "Words against the reference" not in page
    assert 'data-show="better"' not in page and 'data-show="unknown"' in page  # nothing to judge by


def test_a_value_the_page_lacks_is_an_error_not_a_blank():
    from jinja2 import UndefinedError

    from rescorer.report.html import environment

    with pytest.raises(UndefinedError, match="'meta' is undefined"):
        environment().get_template("report.html.j2").render(title="t", signature="", judged=True, plot="", sets=[])


def test_the_templates_mark_no_text_as_safe_markup():
    templates = list((resources.files("rescorer.report") / "templates").iterdir())
    assert any(path.name == "report.html.j2" for path in templates)
    for path in templates:
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"\|\s*safe\b|autoescape\s+false|\bMarkup\b", source), path.name


def test_a_list_of_the_first_changes_says_how_many_there_were_in_all(page):
    """A set whose changes were kept in part (the first ones) says so; one kept whole does not."""
    from rescorer.changes import changed

    kept = changed(["u1", "u2"], ["a b", "c"], ["a c", "d"], None)
    report = {"task": "apply", "data": "new", "metric": "wer", "tuned": "t.yaml", "tuned_on": "dev",
              "sets": {"test": {"utterances": 90000, "changed_1best": 41223, "references": False}}}
    assert "The first 2 of the 41,223 changed 1-bests" in html_page(report, {"test": kept}, None)
    assert "changed 1-bests\nare listed" not in page
