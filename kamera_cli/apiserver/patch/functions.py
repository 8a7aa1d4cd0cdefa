"""Patch semantics of the simulated API server, as pure functions (the interface ``apicore`` calls).

JSON Patch and merge patch live in ``patch_json``, strategic merge patch in ``patch_strategic``,
server-side apply and managedFields in ``managed_fields`` (walks in ``patch_ssa``, FieldsV1 in
``patch_fieldsv1``), the per-field metadata in ``fieldmeta``.
Every function returns new values and never mutates its inputs; results share untouched subtrees
with the inputs, so callers must treat both as immutable.  docs/patching.md says exactly how each
behaves and where it differs from the real apiserver.
"""

from __future__ import annotations

from kamera_cli.apiserver.patch.errors import PatchError
from kamera_cli.apiserver.patch.fieldmeta import FieldLookup, FieldMeta, builtin_field_lookup, openapi_field_lookup
from kamera_cli.apiserver.patch.fieldsv1 import decode_fields_v1, encode_fields_v1, path_string
from kamera_cli.apiserver.patch.json_patch import (
    create_merge_patch,
    json_equal,
    json_patch,
    merge_patch,
    merge_patch_value,
)
from kamera_cli.apiserver.patch.managed_fields import (
    applied_memo_key,
    remember_configuration,
    remembered_configuration,
    server_side_apply,
    update_managed_fields,
)
from kamera_cli.apiserver.patch.strategic import strategic_merge_patch

__all__ = [
    "FieldLookup",
    "FieldMeta",
    "PatchError",
    "applied_memo_key",
    "builtin_field_lookup",
    "create_merge_patch",
    "decode_fields_v1",
    "encode_fields_v1",
    "json_equal",
    "json_patch",
    "merge_patch",
    "merge_patch_value",
    "openapi_field_lookup",
    "path_string",
    "remember_configuration",
    "remembered_configuration",
    "server_side_apply",
    "strategic_merge_patch",
    "update_managed_fields",
]
