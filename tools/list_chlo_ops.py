#!/usr/bin/env python3
"""The CHLO ops JAX emits on CPU, and for which element types: pjrt-stablehlo's `chlo` lowering
covers this list (its crate doc names it).

Lowers every public function of jax.lax, jax.numpy and jax.scipy.special (called with one to
three arrays of each floating, complex and integer dtype, and the few that need another
argument, such as lax.top_k's k, by hand) with jax.jit(...).lower(...) on CPU, collects the
`chlo.*` ops of the StableHLO text and the element type of each one's first operand, and writes
tests/data/chlo/jax-<version>.json:

    {"jax": "0.10.2", "ops": {"chlo.erf": {"dtypes": ["bf16", "f16", "f32", "f64"],
                                          "from": ["jax.lax.erf", ...]}, ...}}

Run it with a JAX venv (tools/jax_venv.py makes target/jax-venv-<version> on first use):

    python3 tools/list_chlo_ops.py 0.10.2
    python3 tools/list_chlo_ops.py 0.12.0.1
"""

import json
import os
import re
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_venv  # noqa: E402

VERSION = sys.argv[1] if len(sys.argv) > 1 else "0.10.2"
jax_venv.reexec_in_venv(VERSION)

os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax.scipy.special  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_enable_x64", True)
warnings.simplefilter("ignore")

DTYPES = [jnp.float16, jnp.bfloat16, jnp.float32, jnp.float64, jnp.complex64, jnp.complex128,
          jnp.int8, jnp.int32, jnp.int64, jnp.uint8, jnp.uint32, jnp.bool_]

OP = re.compile(r'(?:"(chlo\.[a-z_]+)"\(|\b(chlo\.[a-z_]+)\b)')
ELEMENT = re.compile(r"tensor<(?:[0-9?]+x)*([a-z0-9]+(?:<[a-z0-9]+>)?)>")


def shaped(dtype, shape=(4,)):
    return jax.ShapeDtypeStruct(shape, dtype)


def by_hand():
    """Functions that need more than arrays of one dtype: (name, function, argument specs)."""
    out = []
    for d in DTYPES:
        x = shaped(d, (3, 5))
        out.append(("jax.lax.top_k", lambda a: lax.top_k(a, 2), [x]))
        out.append(("jax.numpy.argsort", lambda a: jnp.argsort(a), [x]))
        out.append(("jax.scipy.special.polygamma", lambda a: jax.scipy.special.polygamma(1, a), [x]))
        out.append(("jax.scipy.special.zeta", lambda a: jax.scipy.special.zeta(a, a), [x]))
        out.append(("jax.scipy.special.betainc", lambda a: jax.scipy.special.betainc(a, a, a), [x]))
        out.append(("jax.lax.bessel_i1e", lambda a: lax.bessel_i1e(a), [x]))
        out.append(("jax.numpy.i0", lambda a: jnp.i0(a), [x]))
    return out


def functions():
    """(qualified name, function) of every public callable of the three modules."""
    for module, prefix in [(lax, "jax.lax"), (jnp, "jax.numpy"), (jax.scipy.special, "jax.scipy.special")]:
        for name in sorted(dir(module)):
            f = getattr(module, name)
            if name.startswith("_") or not callable(f) or isinstance(f, type):
                continue
            yield f"{prefix}.{name}", f


def chlo_ops(f, specs):
    """The (op, element type) pairs of f's lowering, or none when f does not take these."""
    try:
        # A lambda: jax.jit inspects what it wraps, and some of the modules' callables crash it.
        text = jax.jit(lambda *a: f(*a)).lower(*specs).as_text()
    except Exception:  # noqa: BLE001 (most functions do not take every signature)
        return []
    found = []
    for line in text.splitlines():
        m = OP.search(line)
        if not m:
            continue
        op = m.group(1) or m.group(2)
        types = line.split(" : ", 1)[1] if " : " in line else ""
        e = ELEMENT.search(types)
        found.append((op, e.group(1) if e else "?"))
    return found


def main():
    ops = {}

    def add(name, pairs):
        for op, dtype in pairs:
            entry = ops.setdefault(op, {"dtypes": set(), "from": set()})
            entry["dtypes"].add(dtype)
            entry["from"].add(name)

    for name, f in functions():
        for d in DTYPES:
            for arity in (1, 2, 3):
                pairs = chlo_ops(f, [shaped(d)] * arity)
                if pairs:
                    add(name, pairs)
                    break
    for name, f, specs in by_hand():
        add(name, chlo_ops(f, specs))
    out = {"jax": jax.__version__, "ops": {op: {"dtypes": sorted(e["dtypes"]), "from": sorted(e["from"])}
                                          for op, e in sorted(ops.items())}}
    path = os.path.join(jax_venv.REPO, "tests", "data", "chlo", f"jax-{VERSION}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    for op, e in out["ops"].items():
        print(op, " ".join(e["dtypes"]))


if __name__ == "__main__":
    main()
