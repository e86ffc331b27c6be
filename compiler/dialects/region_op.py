"""The shape every program-like op of the dialects shares: a name and one region of ops with
no terminator (`stat.program`, the HE layer's programs, `bool.circuit`). Not a dialect: the
dialects' ops inherit its fields."""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Block, Operation, Region
from xdsl.irdl import IRDLOperation, ParsePropInAttrDict, prop_def, region_def, traits_def
from xdsl.traits import NoTerminator


class SingleBlock:
    """The one block of an op's `body` region (mixed into ops that have one; no field of its
    own, which IRDL would take for the op's)."""

    def _body(self) -> Region:
        body = getattr(self, "body")  # noqa: B009 (the op's region_def, not declared here)
        assert isinstance(body, Region)
        return body

    @property
    def block(self) -> Block:
        # An empty region prints as `{}` and parses back without a block: add it on demand.
        body = self._body()
        if not body.blocks:
            body.add_block(Block())
        return body.blocks[0]

    def _ops(self) -> list[Operation]:
        body = self._body()
        return list(body.blocks[0].ops) if body.blocks else []


class NamedRegionOp(SingleBlock, IRDLOperation):
    """`OP "name" { ... }`: a symbol name and one single-block region."""

    sym_name = prop_def(StringAttr)
    body = region_def()

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name $body attr-dict"
    traits = traits_def(NoTerminator())

    def __init__(self, sym_name: str, body: Region | None = None):
        super().__init__(
            properties={"sym_name": StringAttr(sym_name)}, regions=[body or Region(Block())]
        )


__all__ = ["NamedRegionOp", "SingleBlock"]
