"""Images for the vision labels, through the real `openai` client against the simulated
arena: a real PNG file under the image root reaches the endpoint as a data URL with its
bytes intact; a missing image fails that conversation's vision labels with the reason and
nothing else; no image root with an endpoint that cannot read references is one line
before any call."""

from __future__ import annotations

import hashlib
import struct
import zlib

import pytest

from arena_assets.labels import LabelConfig, label_conversations
from arena_assets.labels.prompt_sets import ANCHOR_STYLE, load_prompt_set
from arena_assets.llm import LLMEndpointError, LLMTask
from arena_assets.simulator import start_endpoint
from arena_assets_tests.test_labels import conversations_frame


def png_bytes_of(width: int, height: int, seed: int) -> bytes:
    """A real PNG (8-bit RGB, one IDAT), written out by hand."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(
        b"\x00" + bytes((x * 7 + y * 13 + seed) % 256 for x in range(width * 3))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@pytest.fixture(scope="module")
def endpoint():
    ep = start_endpoint(seed=7)
    yield ep
    ep.stop()


def _task(ep) -> LLMTask:
    return LLMTask(
        model="sim-labeler-large",
        base_url=ep.base_url,
        api_key="sim",
        max_concurrency=4,
        max_retries=1,
    )


def test_a_real_png_reaches_the_endpoint_as_a_data_url(endpoint, tmp_path) -> None:
    from PIL import Image

    root = tmp_path / "images"
    root.mkdir()
    png = png_bytes_of(24, 16, 3)
    sha = hashlib.sha256(png).hexdigest()
    (root / f"{sha}.png").write_bytes(png)
    assert Image.open(root / f"{sha}.png").size == (24, 16)  # a PNG any reader opens
    conv = conversations_frame(
        [
            ("c1", "What does the sign in this photo say?", [sha], ["It says STOP."]),
            ("c2", "Write a haiku about rain", [], ["Rain on the roof..."]),
        ]
    )
    endpoint.reset_counts()
    labels, _report = label_conversations(
        conv,
        _task(endpoint),
        month="2024-01",
        cache_root=str(tmp_path / "c"),
        cfg=LabelConfig(image_root=str(root)),
    )
    by = {r["conv_id"]: r for r in labels.iter_rows(named=True)}
    assert by["c1"]["vision_status"] == "ok" and by["c1"]["vision_error"] is None
    assert by["c2"]["vision_status"] == "not_applicable"
    # the tasks that look at the image (the default set's two: ocr and humor with the
    # text, homework and diagram alone) got the file's own bytes, as a data URL; the
    # anchor-style set's four image tasks likewise
    assert endpoint.images_seen() == {("data", sha): 2}
    endpoint.reset_counts()
    anchor = LabelConfig(image_root=str(root), prompt_set=load_prompt_set(ANCHOR_STYLE))
    labels, _ = label_conversations(
        conv, _task(endpoint), month="2024-01", cache_root=str(tmp_path / "c"), cfg=anchor
    )
    assert labels["vision_status"].to_list() == ["ok", "not_applicable"]
    assert endpoint.images_seen() == {("data", sha): 4}  # ocr, humor, homework, diagram


def test_a_missing_image_fails_that_conversation_only(endpoint, tmp_path) -> None:
    root = tmp_path / "images"
    root.mkdir()
    present = png_bytes_of(8, 8, 1)
    sha_ok, sha_gone = (
        hashlib.sha256(present).hexdigest(),
        hashlib.sha256(b"never uploaded").hexdigest(),
    )
    (root / f"{sha_ok}.png").write_bytes(present)
    conv = conversations_frame(
        [
            ("c1", "Read the text in this image", [sha_ok], ["Hello"]),
            ("c2", "What is funny in this picture?", [sha_gone], ["The cat."]),
            ("c3", "Explain photosynthesis", [], ["Plants..."]),
        ]
    )
    labels, report = label_conversations(
        conv,
        _task(endpoint),
        month="2024-01",
        cache_root=str(tmp_path / "c"),
        cfg=LabelConfig(image_root=str(root)),
    )
    by = {r["conv_id"]: r for r in labels.iter_rows(named=True)}
    assert labels.height == 3  # the month is labelled: nothing aborts on one image
    assert by["c1"]["vision_status"] == "ok" and by["c3"]["criteria_status"] == "ok"
    assert by["c2"]["vision_status"] == "failed"
    assert sha_gone in by["c2"]["vision_error"] and "ARENA_IMAGE_ROOT" in by["c2"]["vision_error"]
    assert by["c2"]["criteria_status"] == "ok"  # its text labels do not need the image
    assert by["c2"]["vision_ocr"] is None and by["c2"]["category_tag"]["ocr_v0.1"] is None
    # no call for the image that is not there (one call per image task: c1's); failed is
    # not cached, so the next run asks again once the image is uploaded. The task shown
    # the text alone needs no image: both answered
    for name in ("vision-image-tags", "vision-image-only-tags"):
        vision = report.batches[name]
        assert vision.statuses == {"ok": 1, "parse_failed": 0, "failed": 1}, name
        assert vision.calls == 1, name
    text = report.batches["vision-text-tags"]
    assert text.statuses == {"ok": 2, "parse_failed": 0, "failed": 0} and text.calls == 2


def test_no_image_root_for_an_endpoint_that_cannot_read_references_is_one_line(
    endpoint, tmp_path
) -> None:
    conv = conversations_frame([("c1", "Describe this picture", ["a" * 64], ["A dog."])])
    endpoint.reset_counts()
    with pytest.raises(LLMEndpointError, match=r"ARENA_IMAGE_ROOT is empty.*sha256:") as err:
        label_conversations(
            conv,
            _task(endpoint),
            month="2024-01",
            cache_root=str(tmp_path / "c"),
            cfg=LabelConfig(image_refs=False),
        )
    assert "\n" not in str(err.value) and endpoint.call_count() == 0
    # a month without images needs no image root
    text = conversations_frame([("c1", "Explain photosynthesis", [], ["Plants..."])])
    labels, _ = label_conversations(
        text,
        _task(endpoint),
        month="2024-01",
        cache_root=str(tmp_path / "c"),
        cfg=LabelConfig(image_refs=False),
    )
    assert labels["criteria_status"].to_list() == ["ok"]
    # another endpoint (not a simulated arena) without image root: refused, no chat call
    from arena_assets_tests.labelling_server import LabellingServer

    with LabellingServer() as srv:
        other = LLMTask(model="labeler-strong", base_url=srv.base_url, api_key="test-key")
        with pytest.raises(LLMEndpointError, match="ARENA_IMAGE_ROOT is empty"):
            label_conversations(conv, other, month="2024-01", cache_root=str(tmp_path / "c"))
        assert srv.calls == 0
        from arena_assets.labels.images import reference_reader

        assert not reference_reader(other)  # its models are not the simulated arena's
    # the simulated arena, met by URL like any endpoint, is known by its model list
    assert reference_reader(_task(endpoint))
    labels, _ = label_conversations(
        conv, _task(endpoint), month="2024-01", cache_root=str(tmp_path / "c2")
    )
    assert labels["vision_status"].to_list() == ["ok"]


def test_a_corrupt_data_url_is_refused_by_the_simulated_endpoint(endpoint) -> None:
    import openai

    client = openai.OpenAI(base_url=endpoint.base_url, api_key="sim", max_retries=0)
    content = [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,bm90IGFuIGltYWdl"}},
    ]
    with pytest.raises(openai.BadRequestError, match="not an image"):
        client.chat.completions.create(
            model="sim-labeler-large",
            messages=[
                {"role": "system", "content": "task: ocr_v0.1"},
                {"role": "user", "content": content},
            ],
        )


@pytest.mark.parametrize("reask", [False, True])
def test_an_unreadable_label_reply_is_kept_unless_reasking_is_on(endpoint, tmp_path, reask) -> None:
    """LMArena's labeller stores an unreadable reply as it is (the tag's default); asking
    again is this project's departure, off unless ``reask_unreadable`` is set."""
    from arena_assets.simulator.endpoint import Faults

    conv = conversations_frame([("c1", "Explain photosynthesis to a child", [], [])])
    endpoint.reset_counts()
    endpoint.set_faults(Faults(script=["garbage"]))  # the first reply holds no tag
    try:
        labels, report = label_conversations(
            conv,
            _task(endpoint),
            month="2024-01",
            cache_root=str(tmp_path / f"c{reask}"),
            cfg=LabelConfig(reask_unreadable=reask),
        )
    finally:
        endpoint.set_faults(Faults())
    calls = endpoint.call_count(route="chat/completions")
    if reask:
        assert calls == 2 and labels["criteria_status"].to_list() == ["ok"]
    else:
        assert calls == 1 and labels["criteria_status"].to_list() == ["parse_failed"]
        assert report.unparsed["criteria_v0.1"] == 1
        assert labels["category_tag"][0]["criteria_v0.1"] == dict.fromkeys(
            labels["category_tag"][0]["criteria_v0.1"], False
        )
