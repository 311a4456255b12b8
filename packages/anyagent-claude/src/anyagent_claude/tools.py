"""Claude's tool calls as anyagent values: kinds, titles, typed inputs, results, diffs, plans, questions.

In: the ``tool_use`` blocks of ``assistant`` frames, the ``tool_result`` blocks (and
``tool_use_result``) of ``user`` frames, ``TodoWrite`` and ``AskUserQuestion`` inputs.
Out: ``ToolUpdate`` snapshots, ``PlanEntry`` lists and ``Question`` lists. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from anyagent import (
    FileDiff,
    McpTool,
    PlanEntry,
    PlanEntryStatus,
    Question,
    QuestionChoice,
    ToolInput,
    ToolKind,
    ToolKindValue,
    ToolLocation,
    ToolStatus,
    ToolUpdate,
)
from anyagent import jsonread as j
from anyagent.seam import OUTPUT_CAP

__all__ = [
    "QUESTION_TOOL",
    "PLAN_TOOL",
    "cap",
    "plan_entries",
    "questions_of",
    "result_text",
    "tool_finished",
    "tool_kind",
    "tool_started",
]

QUESTION_TOOL = "AskUserQuestion"
"""claude's tool that asks the user a question; surfaced as a `QuestionRequest`, not a tool call."""
PLAN_TOOL = "TodoWrite"
"""claude's to-do tool; its input becomes a `PlanUpdated` event."""

_KINDS: Mapping[str, ToolKind] = {
    "Bash": ToolKind.EXECUTE,
    "BashOutput": ToolKind.EXECUTE,
    "KillShell": ToolKind.EXECUTE,
    "KillBash": ToolKind.EXECUTE,
    "Monitor": ToolKind.EXECUTE,
    "Read": ToolKind.READ,
    "NotebookRead": ToolKind.READ,
    "LS": ToolKind.READ,
    "Edit": ToolKind.EDIT,
    "MultiEdit": ToolKind.EDIT,
    "Write": ToolKind.EDIT,
    "NotebookEdit": ToolKind.EDIT,
    "Glob": ToolKind.SEARCH,
    "Grep": ToolKind.SEARCH,
    "WebSearch": ToolKind.SEARCH,
    "ToolSearch": ToolKind.SEARCH,
    "WebFetch": ToolKind.FETCH,
    "Task": ToolKind.SUBAGENT,
    "Agent": ToolKind.SUBAGENT,
    "ExitPlanMode": ToolKind.THINK,
    "EnterPlanMode": ToolKind.THINK,
}


def cap(text: str, limit: int = OUTPUT_CAP) -> str:
    """``text`` cut to ``limit`` characters, marking the cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit} more characters]"


def tool_kind(name: str) -> ToolKindValue:
    """The kind of Claude tool ``name``; ``mcp__server__tool`` names become ``McpTool``."""
    if name.startswith("mcp__"):
        server, _, tool = name[len("mcp__") :].partition("__")
        if server and tool:
            return McpTool(server, tool)
    return _KINDS.get(name, ToolKind.OTHER)


def _typed_input(name: str, args: Mapping[str, Any]) -> ToolInput:
    path = j.nonempty(args.get("file_path")) or j.nonempty(args.get("notebook_path")) or j.nonempty(args.get("path"))
    pattern = j.nonempty(args.get("pattern")) or (
        j.nonempty(args.get("query")) if name in ("WebSearch", "ToolSearch") else None
    )
    description = j.nonempty(args.get("description"))
    if description is None and name in ("Task", "Agent"):
        description = j.nonempty(args.get("prompt"))
    return ToolInput(
        command=j.nonempty(args.get("command")),
        path=path,
        pattern=pattern,
        url=j.nonempty(args.get("url")),
        description=description,
        arguments=dict(args),
    )


def _title(name: str, kind: ToolKindValue, typed: ToolInput) -> str:
    if isinstance(kind, McpTool):
        return f"{kind.server}: {kind.tool}"
    if kind is ToolKind.EXECUTE and typed.command:
        return typed.command
    if name in ("Task", "Agent"):
        return typed.description or name
    subject = typed.path or typed.pattern or typed.url
    return f"{name} {subject}" if subject else name


def tool_started(tool_id: str, name: str, args: object) -> ToolUpdate:
    """The snapshot of a ``tool_use`` block: the tool is running."""
    arguments = j.obj(args)
    kind = tool_kind(name)
    typed = _typed_input(name, arguments)
    path = typed.path
    return ToolUpdate(
        id=tool_id,
        kind=kind,
        title=_title(name, kind, typed),
        status=ToolStatus.RUNNING,
        input=typed,
        diffs=_proposed_diffs(name, arguments),
        locations=(ToolLocation(path),) if path else (),
        raw={"name": name, "input": dict(arguments)},
    )


def _proposed_diffs(name: str, arguments: Mapping[str, Any]) -> tuple[FileDiff, ...]:
    """The edits an ``Edit``/``MultiEdit`` call asks to make, so a permission prompt can show them
    before they happen (the result's diffs replace them; a failed edit drops them)."""
    path = j.nonempty(arguments.get("file_path"))
    if path is None:
        return ()
    if name == "Edit" and isinstance(arguments.get("new_string"), str):
        return (FileDiff(path, arguments["new_string"], j.text(arguments.get("old_string"), "")),)
    if name == "MultiEdit":
        edits = [j.obj(edit) for edit in j.arr(arguments.get("edits"))]
        return tuple(
            FileDiff(path, edit["new_string"], j.text(edit.get("old_string"), ""))
            for edit in edits
            if isinstance(edit.get("new_string"), str)
        )
    return ()


def result_text(content: object) -> str:
    """The text of a ``tool_result`` block's content (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in j.arr(content):
        block = j.obj(block)
        kind = block.get("type")
        if kind == "text":
            parts.append(j.text(block.get("text"), ""))
        elif kind == "image":
            parts.append("[image]")
    return "\n".join(parts)


def _diffs(result: object) -> tuple[FileDiff, ...]:
    """File edits described by a ``tool_use_result`` (Write create/update, Edit, MultiEdit)."""
    data = j.obj(result)
    path = j.nonempty(data.get("filePath"))
    if path is None:
        return ()
    if isinstance(data.get("newString"), str):
        old = data.get("oldString")
        return (FileDiff(path, data["newString"], old if isinstance(old, str) else None),)
    if isinstance(data.get("content"), str) and data.get("type") in ("create", "update"):
        original = data.get("originalFile")
        return (FileDiff(path, data["content"], original if isinstance(original, str) else None),)
    edits = [j.obj(edit) for edit in j.arr(data.get("edits"))]
    return tuple(
        FileDiff(path, j.text(edit.get("new_string"), ""), j.text(edit.get("old_string"), ""))
        for edit in edits
        if isinstance(edit.get("new_string"), str)
    )


def tool_finished(
    previous: ToolUpdate, block: Mapping[str, Any], use_result: object, *, background: bool = False
) -> ToolUpdate:
    """The snapshot after a ``tool_result``: completed or failed, with output and diffs.

    A tool that went to the background (``background``, a ``backgroundTaskId``, an async agent)
    stays running: it completes on the task's notification.
    """
    output = cap(result_text(block.get("content")))
    failed = j.flag(block.get("is_error"))
    details = j.obj(use_result)
    background = background or j.nonempty(details.get("backgroundTaskId")) is not None or j.flag(details.get("isAsync"))
    status = ToolStatus.RUNNING if background else ToolStatus.FAILED if failed else ToolStatus.COMPLETED
    diffs = () if failed else (_diffs(use_result) or previous.diffs)
    return attrs.evolve(previous, status=status, output=output or None, diffs=diffs)


def plan_entries(args: object) -> tuple[PlanEntry, ...]:
    """``TodoWrite``'s ``todos`` as plan entries (``content`` + ``status``)."""
    entries: list[PlanEntry] = []
    for todo in j.arr(j.obj(args).get("todos")):
        todo = j.obj(todo)
        content = j.text(todo.get("content"), "") or j.text(todo.get("activeForm"), "")
        if not content:
            continue
        status_name = j.text(todo.get("status"), "")
        if status_name in ("in_progress", "inProgress"):
            status = PlanEntryStatus.IN_PROGRESS
        elif status_name == "completed":
            status = PlanEntryStatus.COMPLETED
        else:
            status = PlanEntryStatus.PENDING
        entries.append(PlanEntry(content, status, j.nonempty(todo.get("priority"))))
    return tuple(entries)


def _choice_ids(labels: list[str]) -> list[str]:
    """Choice ids: the label itself, made unique when two options share a label."""
    ids: list[str] = []
    for index, label in enumerate(labels):
        choice_id = label or f"option {index + 1}"
        while choice_id in ids:
            choice_id = f"{choice_id} ({index + 1})"
        ids.append(choice_id)
    return ids


def questions_of(args: object) -> tuple[Question, ...]:
    """``AskUserQuestion``'s ``questions`` as anyagent questions (free text is always allowed)."""
    questions: list[Question] = []
    for index, item in enumerate(j.arr(j.obj(args).get("questions"))):
        item = j.obj(item)
        text = j.text(item.get("question"), "")
        if not text:
            continue
        options = [j.obj(option) for option in j.arr(item.get("options"))]
        labels = [j.text(option.get("label"), "") for option in options]
        choices = tuple(
            QuestionChoice(choice_id, label or choice_id, j.nonempty(option.get("description")))
            for choice_id, label, option in zip(_choice_ids(labels), labels, options, strict=True)
        )
        questions.append(
            Question(
                id=f"q{index + 1}",
                text=text,
                header=j.nonempty(item.get("header")),
                choices=choices,
                multi_select=j.flag(item.get("multiSelect")),
                allows_free_text=True,
            )
        )
    return tuple(questions)
