"""JSON answers encoded by orjson (compact UTF-8, several times faster than the json module on
a page of hits). The bytes parse to the same values as Starlette's JSONResponse gives; the one
difference, NaN written as null, cannot arise: scores and times are finite."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import JSONResponse


class JSON(JSONResponse):
    """A JSON response rendered by orjson."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)
