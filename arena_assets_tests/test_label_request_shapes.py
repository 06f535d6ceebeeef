"""What each vision label's request holds, against FastChat's classifier
(``fastchat/serve/monitor/classify/category.py``, its OpenAI-format ``pre_process``):
captioning, entity recognition and creative writing are sent the user's text alone; ocr and
humor the text, then the image; homework and diagram the image alone (an empty text part,
then the image). Both shipped prompt sets, over HTTP, against the stand-in labelling server
(no simulator): every request recorded as it arrived."""

from __future__ import annotations

import pytest

from arena_assets.labels import LabelConfig, label_conversations
from arena_assets.labels.prompt_sets import ANCHOR_STYLE, DEFAULT, load_prompt_set
from arena_assets.llm import LLMTask
from arena_assets_tests.labelling_server import LabellingServer
from arena_assets_tests.test_labels import conversations_frame

# FastChat's pre_process, per tag, written out: the user message is the template alone
# (a string), a list of [the template's text, the image], or [an empty text, the image]
FASTCHAT_SHAPE = {
    "captioning_v0.1": "text",
    "entity_recognition_v0.1": "text",
    "creative_writing_vision_v0.1": "text",
    "ocr_v0.1": "text, image",
    "humor_v0.1": "text, image",
    "homework_v0.1": "image",
    "diagram_v0.1": "image",
}
FIRST, SECOND = "a" * 64, "b" * 64


def _shape(user: str | list, prompt: str) -> str:
    if isinstance(user, str):
        assert prompt in user  # the request's text, in the set's template
        return "text"
    kinds = [p["type"] for p in user]
    assert kinds == ["text", "image_url"], kinds  # text first, then the image, as FastChat
    assert user[1]["image_url"]["url"] == f"sha256:{FIRST}"  # the first image of the turn
    if user[0]["text"] == "":
        return "image"
    assert prompt in user[0]["text"]
    return "text, image"


@pytest.mark.parametrize("path", [DEFAULT, ANCHOR_STYLE], ids=["default", "anchor_style"])
def test_each_vision_tag_is_sent_what_fastchat_sends_it(path, tmp_path) -> None:
    ps = load_prompt_set(path)
    prompt = "What does the sign in this photo say?"
    conv = conversations_frame([("c1", prompt, [FIRST, SECOND], ["It says STOP."])])
    with LabellingServer() as srv:
        task = LLMTask(model="labeler-strong", base_url=srv.base_url, api_key="test-key")
        cfg = LabelConfig(prompt_set=ps, image_refs=True, label_refusals=False)
        labels, _ = label_conversations(
            conv, task, month="2024-01", cache_root=str(tmp_path), cfg=cfg
        )
        bodies = list(srv.bodies)
    assert labels["vision_status"].to_list() == ["ok"]
    by_task = {lt.id: lt for lt in ps.by_scope("image")}
    shapes: dict[str, str] = {}
    for body in bodies:
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        task_id = next((t for t in by_task if f"task: {t}\n" in system + "\n"), None)
        if task_id is None:
            continue  # a prompt-tag call
        for tag in by_task[task_id].tags:
            assert tag not in shapes, tag  # each vision tag asked once
            shapes[tag] = _shape(user, prompt)
    assert shapes == FASTCHAT_SHAPE
    # and the labels the image-alone tags got are the server's answer for the image
    from arena_assets_tests.labelling_server import expected_answer

    want = expected_answer("vision-v1", f"sha256:{FIRST}")
    row = labels.row(0, named=True)
    assert (row["vision_homework"], row["vision_diagram"]) == (want["homework"], want["diagram"])


def test_an_empty_user_message_is_for_an_image_task(tmp_path) -> None:
    bad = tmp_path / "set.yaml"
    bad.write_text(
        "name: s\ntasks:\n  - id: t\n    scope: image\n    output: decision\n"
        "    tags: [homework_v0.1]\n    system: 'task: t'\n    user: ''\n"
    )
    with pytest.raises(ValueError, match="an empty user message is for an image task"):
        load_prompt_set(bad)
