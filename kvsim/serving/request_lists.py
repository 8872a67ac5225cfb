"""Request lists: read from a file (one prompt per line, a JSON list of strings, or a JSON object with a
shared system prompt) and turned into token ids through the model's chat template.

A JSON object may carry a title, a system prompt every request shares and, for continuous batching,
the scheduler step each request arrives at::

    {"title": "…", "system": "You are …", "prompts": ["…", "…"], "arrivals": [0, 3]}

Without ``system`` the chat template's own default applies (SmolLM2's puts the same system prompt
in front of every request, which is what prefix caching reuses). A model without a chat template
gets ``system + "\\n\\n" + prompt``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..core.sampling import SimulationError
from ..models.chat_template import render_chat_template
from ..models.tokenizer import Tokenizer, check_prompt_text

MAX_REQUESTS = 64
MAX_FILE_BYTES = 1_000_000
MAX_ARRIVAL_STEP = 1_000_000


@dataclass(frozen=True)
class RequestList:
    prompts: tuple[str, ...]
    system: str | None = None
    title: str | None = None
    arrivals: tuple[int, ...] | None = None  # the step each request arrives at (continuous batching)


@dataclass(frozen=True)
class RequestInput:
    """One request as the engine takes it: token ids, and the text they came from (if any)."""

    prompt_ids: tuple[int, ...]
    text: str | None = None


def check_prompts(prompts: list, where: str) -> tuple[str, ...]:
    if not prompts:
        raise SimulationError(f"{where}: no requests (give at least one prompt)")
    if len(prompts) > MAX_REQUESTS:
        raise SimulationError(f"{where}: {len(prompts)} requests, more than {MAX_REQUESTS}")
    for i, p in enumerate(prompts, 1):
        if not isinstance(p, str):
            raise SimulationError(f"{where}: request {i} is not a string ({type(p).__name__})")
        if not p.strip():
            raise SimulationError(f"{where}: request {i} is an empty prompt")
    return tuple(prompts)


def parse_requests(text: str, where: str = "requests") -> RequestList:
    """A request list from a file's text: JSON (a list, or an object with "prompts") or one prompt a line."""
    body = text.removeprefix("\ufeff").strip()  # a byte-order mark is not part of the JSON or the first prompt
    if not body:
        raise SimulationError(f"{where} is empty: write one prompt per line, or a JSON list of strings")
    if body[0] in "[{":
        try:
            data = json.loads(body)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise SimulationError(f"{where} is not valid JSON: {str(exc).splitlines()[0][:200]}") from None
        if isinstance(data, list):
            return RequestList(check_prompts(data, where))
        if not isinstance(data, dict) or not isinstance(data.get("prompts"), list):
            raise SimulationError(f'{where}: a JSON request file is a list of strings or an object with "prompts": [...]')
        system, title = data.get("system"), data.get("title")
        if system is not None and (not isinstance(system, str) or not system.strip()):
            raise SimulationError(f'{where}: "system" must be a non-empty string')
        if title is not None and not isinstance(title, str):
            raise SimulationError(f'{where}: "title" must be a string')
        prompts = check_prompts(data["prompts"], where)
        return RequestList(prompts, system, title, _arrivals(data.get("arrivals"), len(prompts), where))
    return RequestList(check_prompts([line.strip() for line in body.splitlines() if line.strip()], where))


def _arrivals(value: object, n: int, where: str) -> tuple[int, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != n:
        raise SimulationError(f'{where}: "arrivals" must be a list of {n} step numbers, one per prompt')
    for i, a in enumerate(value, 1):
        if type(a) is not int or not 0 <= a <= MAX_ARRIVAL_STEP:
            raise SimulationError(f'{where}: "arrivals" of request {i} must be a whole number from 0 to {MAX_ARRIVAL_STEP}')
    return tuple(value)


def load_requests(path: str | Path) -> RequestList:
    """Read a request file; every problem is one ``SimulationError`` line."""
    p = Path(path)
    try:
        if not p.is_file():
            raise SimulationError(f"{path}: no such file (or not a regular file)")
        if p.stat().st_size > MAX_FILE_BYTES:
            raise SimulationError(f"{path} is {p.stat().st_size:,} bytes: too large for a request list")
        text = p.read_text(encoding="utf-8-sig")  # a byte-order mark (Windows editors write one) is not text
    except UnicodeDecodeError:
        raise SimulationError(f"{path} is not UTF-8 text") from None
    except OSError as exc:
        raise SimulationError(f"{path} cannot be read: {exc.strerror or exc}") from None
    return parse_requests(text, str(path))


def demo_request_files() -> list[Path]:
    """The bundled demo request lists (resources/requests/*.json)."""
    from ..models.base import resources_dir

    folder = resources_dir() / "requests"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def format_request(tokenizer: Tokenizer, prompt: str, system: str | None = None, chat: bool = True) -> str:
    """``prompt`` as one user turn (behind ``system`` when given) in the model's chat template."""
    template = getattr(tokenizer, "chat_template", None) if chat else None
    if system is None or not template:
        text = tokenizer.format_prompt(prompt, chat=chat)
        return f"{system}\n\n{text}" if system is not None else text
    check_prompt_text(prompt)
    check_prompt_text(system)
    bos, eos = getattr(tokenizer, "bos_id", None), getattr(tokenizer, "eos_id", None)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
    return render_chat_template(
        template,
        messages=messages,
        add_generation_prompt=True,
        bos_token=tokenizer.token_text(bos) if bos is not None else "",
        eos_token=tokenizer.token_text(eos) if eos is not None else "",
    )


def encode_requests(tokenizer: Tokenizer, requests: RequestList, chat: bool = True) -> list[RequestInput]:
    """Token ids of every request (the chat template applied unless ``chat`` is False)."""
    out = []
    for prompt in requests.prompts:
        text = format_request(tokenizer, prompt, requests.system, chat)
        out.append(RequestInput(tuple(tokenizer.encode(text)), prompt))
    return out
