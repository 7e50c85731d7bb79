"""Annotation operators are identities: value and type pass through unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import rand, run_op

from relay_ref.ir.types import ANY, FuncType, IncompleteType, TensorType, TupleType
from relay_ref.ops.registry import NOT_YET, AttrError, RelationError, get_op, make_attrs

NAMES = ["annotation.stop_fusion", "annotation.checkpoint", "annotation.compiler_begin",
         "annotation.compiler_end", "stop_gradient", "on_device", "device_copy"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
def test_identity_value(name: str, dtype: str) -> None:
    x = rand((2, 3), dtype)
    out = run_op(name, [x])
    np.testing.assert_array_equal(out, x)
    assert out.dtype == x.dtype


@pytest.mark.parametrize("name", NAMES)
def test_identity_type_and_tuples(name: str) -> None:
    op = get_op(name)
    at = make_attrs(name, {})
    t = TensorType((ANY, 3), "float16")
    assert op.relation([t], at) == t
    tup = TupleType((t, TensorType((), "int32")))
    assert op.relation([tup], at) == tup
    assert op.relation([IncompleteType()], at) is NOT_YET
    with pytest.raises(RelationError):
        op.relation([FuncType((t,), t)], at)
    x, y = rand((2,)), rand((3, 1), "int32")
    out = op.reference([(x, y)], at)
    np.testing.assert_array_equal(out[0], x)
    np.testing.assert_array_equal(out[1], y)


def test_printed_attr_spellings() -> None:
    assert make_attrs("annotation.compiler_begin", {"compiler": "dnnl"}).compiler == "dnnl"
    a = make_attrs("on_device", {"virtual_device": "VirtualDevice(device_type=2)",
                                 "constrain_result": True, "constrain_body": False})
    assert a.constrain_result and not a.constrain_body
    assert make_attrs("on_device", {"device_type": 2, "is_fixed": True}).device_type == 2
    b = make_attrs("device_copy", {"src_dev_type": 1, "dst_dev_type": 2})
    assert (b.src_dev_type, b.dst_dev_type) == (1, 2)
    c = make_attrs("device_copy", {"src_virtual_device": "cpu", "dst_virtual_device": "gpu"})
    assert c.dst_virtual_device == "gpu"
    d = make_attrs("device_copy", {"src_se_scope": "GPU", "dst_se_scope": "CPU"})
    assert d.src_se_scope == "GPU"
    assert make_attrs("on_device", {"se_scope": "GPU", "is_fixed": True}).is_fixed
    with pytest.raises(AttrError):
        make_attrs("device_copy", {"src_device": 1})


def test_printed_program_parses_and_runs() -> None:
    import relay_ref

    src = '''#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %s: Tensor[(2), int64]) {
  %0 = qnn.quantize(%x, 0.5f, 3, out_dtype="uint8", axis=1);
  %1 = qnn.dequantize(%0, 0.5f, 3);
  %2 = on_device(%1, constrain_result=True);
  %3 = annotation.stop_fusion(%2);
  %4 = device_copy(%3, src_dev_type=1, dst_dev_type=2);
  dyn.reshape(%4, %s, newshape=[])
}
'''
    x = np.arange(6, dtype="float32").reshape(2, 3)
    out = relay_ref.evaluate(relay_ref.parse(src), x, np.array([3, 2]))
    np.testing.assert_array_equal(np.asarray(out), x.reshape(3, 2))


DIFF_TESTED = set(NAMES)
