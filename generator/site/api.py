"""The regenerate API of `python -m transformer_trace serve`: request bodies and fields turned into a build request
(generator/build_request.py, the CLI's own), the build run as the CLI runs it, the CLI's one-line refusals as 400
answers, and /api/status.

See generator/site/server.py for the endpoints and their answers; the rules on which fields and values the API
takes are in generator/site/forms.py.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformer_trace.build_request import BuildRequest, checked_model
from transformer_trace.errors import UserError, file_error, one_line
from transformer_trace.options import OptionRefused, option_value
from transformer_trace.site.forms import SiteForms

if TYPE_CHECKING:
    from transformer_trace.build import BuildResult
    from transformer_trace.catalogue import Report

MAX_UPLOAD = 20 * 1024 * 1024  # bytes of request body (an image upload), checked before reading
MAX_BODIES = 4  # request bodies arriving at once (read before the regeneration lock is taken): at most 4 x 20 MB held
MAX_NAME_BYTES = 120  # of an upload's file name as stored (file systems allow 255)
BUSY = "a regeneration is already running"


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class IncompleteBody(ApiError):
    def __init__(self, message: str, missing: int) -> None:
        super().__init__(400, message)
        self.missing = missing


@dataclass
class Upload:
    filename: str
    data: bytes


# ----------------------------------------------------------------------------- fields -> a build request


def build_request(fields: Mapping[str, Any], docs: Path, upload_paths: Mapping[str, Path] | None = None,
                  config: Path | None = None, *, forms: SiteForms) -> BuildRequest:
    """The build request of API ``fields`` (and the uploads stored at ``upload_paths``), each value read by its
    option's parser as the CLI reads the flag: a refusal is ApiError(400) with the CLI's one line."""
    if "model" not in fields or fields["model"] in (None, ""):
        raise ApiError(400, f"the field 'model' is required: {' or '.join(forms.by_report)}")
    model = fields["model"]
    if not isinstance(model, str):
        raise ApiError(400, "the field 'model' must be text")
    try:
        checked_model(model, forms.by_report)
    except OptionRefused as exc:
        raise ApiError(400, str(exc)) from None
    allowed, restricted, uploads = forms.options_for(model), forms.restricted_values(model), forms.file_fields()
    force = False
    texts: dict[str, str] = {}  # API field -> the value's text, every field's shape checked before any value is read
    for name, value in fields.items():
        if name == "model":
            continue
        if name == "force":  # overwrite generated files edited by hand, as the CLI's --force
            if value not in (True, False, None, "true", "false", "on", ""):
                raise ApiError(400, "the field 'force' must be true or false")
            force = value in (True, "true", "on")
            continue
        if name not in allowed:
            raise ApiError(400, f"unknown field {name!r} for {model}; the fields are: {', '.join([*allowed, 'force'])}")
        if name in uploads:
            raise ApiError(400, f"the field {name!r} is a file: upload it as multipart/form-data")
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ApiError(400, f"the field {name!r} must be text or a number")
        # the same answer whether or not a file of that name exists
        if name in restricted and str(value) not in restricted[name]:
            raise ApiError(400, _refused_value(name, allowed[name], restricted[name]))
        texts[name] = str(value)
    for name, path in (upload_paths or {}).items():
        if name not in allowed or name not in uploads:
            raise ApiError(400, f"unknown file field {name!r} for {model}")
        texts[name] = str(path)
    given = {}
    for name, text in texts.items():
        option = forms.option_field(model, name)
        try:
            given[option.name] = option_value(option, text)
        except OptionRefused as exc:
            raise ApiError(400, str(exc)) from None
    return BuildRequest(model=model, given=given, out=docs, config=config, force=force, quiet=True)


def _api_message(exc: UserError) -> str:
    """The CLI's message, with what to do said for the API (which has no --force flag, but a force field)."""
    from transformer_trace.docs_folder.staging import HandEdits

    if isinstance(exc, HandEdits):
        return (f"{exc.summary}; move your edits out of the report folder and regenerate, or send \"force\": true "
                "(a force field) to overwrite them")
    return str(exc)


def _refused_value(name: str, flag: str, values: tuple[str, ...]) -> str:
    """One line for a value outside the option's api_values; it never says whether a file of that name exists."""
    here = f"{name} can only be {' or '.join(values)} here" if values else f"{name} cannot be set here"
    return (f"the API cannot name server-side files or download weights, so {here}; "
            f"the CLI can: python -m transformer_trace build {flag} ...")


# ----------------------------------------------------------------------------- request bodies


def _safe_filename(name: str | None) -> str:
    """The base name of an upload, printable and whole characters only, at most MAX_NAME_BYTES of UTF-8 (the end
    of a long name is kept: it holds the extension)."""
    base = re.split(r"[\\/]", name or "")[-1]
    base = "".join(ch for ch in base if ch.isprintable() and not 0xD800 <= ord(ch) <= 0xDFFF).strip()
    base = base.encode("utf-8")[-MAX_NAME_BYTES:].decode("utf-8", "ignore").strip()  # a cut character is dropped
    return base if base not in ("", ".", "..") else "upload"


class _RepeatedField(Exception):
    pass


def _object_without_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different (json.loads would keep the last of a repeated key silently)."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _RepeatedField(key)
        data[key] = value
    return data


def parse_body(content_type: str, body: bytes, forms: SiteForms) -> tuple[dict[str, Any], dict[str, Upload]]:
    """JSON object, or multipart/form-data fields and files (the upload fields of ``forms``)."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == "application/json":
        try:
            data = json.loads(body.decode("utf-8"), object_pairs_hook=_object_without_repeats)
        except _RepeatedField as exc:
            raise ApiError(400, f"the field {exc.args[0]!r} is given twice") from None
        except RecursionError:
            raise ApiError(400, "the request body is nested too deeply; send a flat JSON object of fields") from None
        except (UnicodeDecodeError, ValueError) as exc:
            raise ApiError(400, f"the request body is not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ApiError(400, "the request body must be a JSON object of fields")
        return data, {}
    if kind == "multipart/form-data":
        return _parse_multipart(content_type, body, forms)
    raise ApiError(415, "send application/json or multipart/form-data")


def _parse_multipart(content_type: str, body: bytes, forms: SiteForms) -> tuple[dict[str, Any], dict[str, Upload]]:
    import email.parser
    import email.policy
    import email.utils

    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body)
    if not message.is_multipart():
        raise ApiError(400, "the multipart body could not be read")
    fields: dict[str, Any] = {}
    files: dict[str, Upload] = {}
    uploads = forms.file_fields()
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, tuple):  # an RFC 2231 parameter (charset, language, value)
            name = email.utils.collapse_rfc2231_value(name)
        if not name:
            continue
        payload = part.get_payload(decode=True) or b""
        if not isinstance(payload, bytes):  # decoded, a part is bytes (None for a nested multipart, read as empty)
            raise ApiError(400, f"the field {name!r} could not be read")
        if name in fields or name in files:  # one value per field, as in JSON: never "the last one wins"
            raise ApiError(400, f"the field {name!r} is given twice")
        if part.get_filename() is not None or name in uploads:
            if payload or part.get_filename():  # an empty file input sends an empty part: no file chosen
                files[name] = Upload(_safe_filename(part.get_filename()), payload)
            continue
        try:
            fields[name] = payload.decode("utf-8")
        except UnicodeDecodeError:
            raise ApiError(400, f"the field {name!r} is not UTF-8 text") from None
    return fields, files


# ----------------------------------------------------------------------------- the build and the status


def generate(fields: Mapping[str, Any], files: Mapping[str, Upload], docs: Path, config: Path, progress,
             forms: SiteForms, reports: Mapping[str, Report]) -> BuildResult:
    """Regenerate the report(s) of ``reports`` that ``fields`` ask for by the CLI's own code path (uploads stored in a
    temporary folder meanwhile); its BuildResult, or ApiError(400) with the CLI's one line for input it refuses."""
    from transformer_trace.build_request import run_build
    from transformer_trace.options import UPLOADED

    tmp: Path | None = None  # made for the first upload
    uploaded = None
    try:
        paths = {}
        for name, upload in files.items():
            if name not in forms.file_fields():
                raise ApiError(400, f"unknown file field {name!r}")
            if tmp is None:
                tmp = Path(tempfile.mkdtemp(prefix="tt-upload-"))
            paths[name] = tmp / name / upload.filename  # one folder per field: two names never collide
            try:
                paths[name].parent.mkdir()
                paths[name].write_bytes(upload.data)
            except OSError as exc:  # the server's disk, not the user's input: say so without its paths
                raise ApiError(
                    500, f"the server could not store the upload ({exc.strerror or type(exc).__name__})"
                ) from None
        request = build_request(fields, docs, paths, config, forms=forms)
        uploaded = UPLOADED.set({str(path): files[name].filename for name, path in paths.items()})
        try:
            return run_build(request, reports, progress)
        except BaseException as exc:
            refused = file_error(exc) if isinstance(exc, OSError) else exc  # None: an OSError of the server's own
            if not isinstance(refused, UserError):
                raise
            message = _api_message(refused)
            for name, path in paths.items():  # the file as the user named it, not the server's copy
                message = message.replace(str(path), files[name].filename)
            raise ApiError(400, one_line(message)) from None
    finally:
        if uploaded is not None:
            UPLOADED.reset(uploaded)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def status(docs: Path, busy: bool, forms: SiteForms) -> dict[str, Any]:
    """The /api/status answer: each report of ``forms`` with its form fields and the values of its current run."""
    models = []
    for key, form in forms.by_report.items():
        try:
            data = json.loads((docs / key / "snapshots.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        inputs = data.get("inputs") or {}
        fields = []
        for f in form["fields"]:
            source = f.get("current", f["name"])
            fields.append({**{k: v for k, v in f.items() if k != "current"},
                           "value": inputs.get(source, data.get(source))})
        models.append({"key": key, "title": data.get("title", key), "generated": bool(data), "fields": fields})
    return {"app": "transformer-trace", "busy": busy, "max_upload": MAX_UPLOAD, "models": models}
