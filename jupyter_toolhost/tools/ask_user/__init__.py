"""AskUserQuestion, and the `QuestionAsker` seam a front end implements to answer it.

A front end (the notebook's widgets, a terminal) puts an object with
`async ask_questions(questions) -> answers` into `context.options.question_asker`.
Without one (nbclient, nbval, scripts) the call fails with a clear is_error result, so a
run never waits for a person who is not there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ...core.context import ToolUseContext
from ...core.tool import Tool, build_tool
from ...core.types import ToolError, ToolInputError
from .prompt import ANSWERED, DESCRIPTION, NAME, NO_USER


class QuestionOption(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(description="The choice, 1-5 words.")
    description: str = Field(description="What choosing it means.")


class Question(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="The full question, ending with '?'.")
    header: str = Field(max_length=12, description="A very short label (max 12 chars).")
    options: list[QuestionOption] = Field(min_length=2, max_length=4)
    multiSelect: bool = Field(default=False, description="Whether several may be chosen.")


class AskUserQuestionInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    questions: list[Question] = Field(min_length=1, max_length=4)


@runtime_checkable
class QuestionAsker(Protocol):
    """Shows questions to a person and returns their answers, keyed by question text.

    An answer is the chosen option's label, several labels joined by ", " for a
    multiSelect question, or the person's own words.
    """

    async def ask_questions(self, questions: Sequence[Question]) -> Mapping[str, str]: ...


async def ask_user(input: AskUserQuestionInput, context: ToolUseContext) -> dict[str, object]:
    asker = context.options.question_asker
    if asker is None:
        raise ToolError(NO_USER)
    if not isinstance(asker, QuestionAsker):
        raise ToolError(f"The attached question asker ({type(asker).__name__}) cannot ask.")
    texts = [q.question for q in input.questions]
    if len(set(texts)) != len(texts):
        raise ToolInputError("Each question must be different (answers are keyed by question).")
    with context.waiting_for_person("your answer"):
        answers = dict(await asker.ask_questions(input.questions))
    missing = [text for text in texts if not str(answers.get(text, "")).strip()]
    if len(missing) == len(texts):
        raise ToolError("The user dismissed the questions without answering.")
    return {"questions": [q.model_dump() for q in input.questions], "answers": answers}


def _result(output: object) -> str:
    answers = output["answers"] if isinstance(output, dict) else {}
    pairs = ", ".join(f"{json.dumps(q)}={json.dumps(a)}" for q, a in answers.items())
    return ANSWERED.format(answers=pairs)


def make_tool() -> Tool[AskUserQuestionInput]:
    """A fresh AskUserQuestion tool."""
    return build_tool(
        name=NAME,
        input_model=AskUserQuestionInput,
        call=ask_user,
        description=DESCRIPTION,
        read_only=True,
        map_result=_result,
        render_tool_use=lambda input: "; ".join(q.header for q in input.questions),
        search_hint="ask the user a multiple choice question",
    )


TOOL = make_tool()
