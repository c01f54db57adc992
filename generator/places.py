"""Record names built from the model's declarations, never spelled: a ``Place`` in the model and its declared points.

A catalogue names the tensors it shows and checks through the module that records them:

    enc_self_attn = Place("{enc}.self_attn", MultiHeadAttention)
    enc_self_attn.Q  # Ref("{enc}.self_attn.q"): the point MultiHeadAttention.Q declares, at that place

The record name comes from the ``Point`` itself (``Ref.at``), so renaming a point in the model renames every reference
to it, and a point the module class does not declare (removed, renamed attribute, wrong class) is an error at import
that names it. The place keeps the catalogue's placeholders for the traced layer (``{enc}``, ``{block}``; see
``RunOptions.places``); which class sits at a place is checked against a built model by tests/test_record_names.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from transformer_trace.sources import ModuleRef, Ref
from transformer_trace.models.recording import Point, Role, points_of

__all__ = ["Place", "Role", "layer_pattern"]  # Role: what a place's module is (``Place.role``)


@dataclass(frozen=True)
class Place:
    """The module of class ``module`` at ``path`` in the model ("" for the model itself); its declared points, by their
    attribute names, are references to the tensors recorded there. ``role``: what the module at this place is, where a
    class serves in several (the encoder–decoder's attention, as self- and cross-attention); every reference built
    here carries it."""

    path: str
    module: type
    role: Role | None = None

    def __getattr__(self, attribute: str) -> Ref:
        if attribute.startswith("_"):  # copy, pickle and friends probe for dunder methods
            raise AttributeError(attribute)
        point = getattr(self.module, attribute, None)
        if not isinstance(point, Point):
            declared = ", ".join(attr for cls in self.module.__mro__ for attr, value in vars(cls).items()
                                 if isinstance(value, Point)) or "none"
            raise AttributeError(f"{self.module.__name__} declares no record point {attribute} "
                                 f"(its points: {declared}); used at {self.path or 'the model'}")
        return Ref.at(self.path, point, self._roles)

    @property
    def _roles(self) -> frozenset[Role]:
        return frozenset({self.role} if self.role is not None else ())

    def submodule(self, attribute: str) -> ModuleRef:
        """The module the one at this place holds as ``attribute`` (its ``W_k``), carrying this place's role."""
        return ModuleRef(f"{self.path}.{attribute}" if self.path else attribute, self._roles)

    def points(self) -> tuple[Point, ...]:
        """Every point the module class declares."""
        return points_of(self.module)


def layer_pattern(ref: Ref, placeholder: str) -> str:
    """A regular expression matching ``ref``'s record name at every layer, the layer's number as group 1:
    ``blocks\\.(\\d+)\\.attn\\.probs`` for ``Place("blocks.{layer}.attn", SelfAttention).PROBS`` and "layer"."""
    escaped = re.escape(ref.template)
    hole = re.escape("{" + placeholder + "}")
    if hole not in escaped:
        raise ValueError(f"{ref.template!r} has no placeholder {{{placeholder}}}")
    return escaped.replace(hole, r"(\d+)")
