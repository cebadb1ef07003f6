#!/usr/bin/env python3
"""Generate the Fortran example's model: a Lennard-Jones energy and its gradient, from JAX.

A simulation code asks a potential for two things at every step: the energy of the positions
and its gradient with respect to them (the forces, negated).  This script writes that function
as JAX writes it, exported with ``jax.export`` for the CPU with a symbolic number of atoms
(positions: f64[n, 3], ``n`` symbolic), and JAX's own answers at two system sizes:

    tests/data/fortran/jax-0.10.2/lennard_jones/model.jaxexport   (exp.serialize())
    tests/data/fortran/jax-0.10.2/lennard_jones/n4.txt            (n = 4 atoms)
    tests/data/fortran/jax-0.10.2/lennard_jones/n13.txt           (n = 13 atoms)

The model is ``f(positions) -> (energy: f64[], gradient: f64[n, 3])``:

    energy = sum over pairs i < j of 4 eps ((sigma / r_ij)^12 - (sigma / r_ij)^6)
    gradient = d energy / d positions            (jax.grad)

with eps = 1 and sigma = 1 (reduced units), in double precision (jax_enable_x64).

Each ``n<N>.txt`` is plain text that Fortran's list-directed ``read`` takes, every number
written with 17 significant digits (a double read back is the same double):

    N                       the number of atoms
    x y z                   N lines: the positions (row-major (N, 3): atom by atom)
    E                       JAX's energy, from the serialized artifact (export.deserialize, call)
    gx gy gz                N lines: JAX's gradient

The positions are a simple cubic lattice of spacing 1.12 (near the potential's minimum at
2^(1/6) sigma), cut to N atoms and moved by up to +-0.05 each (a seeded generator).

The script runs itself again in ``target/jax-venv-0.10.2`` (tools/jax_venv.py; made on first
use).  Rerun from the repository root with any python3:

    python3 tools/gen_fortran_testdata.py
"""

import os
import shutil
import sys

sys.dont_write_bytecode = True  # importing jax_venv leaves no tools/__pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jax_venv import REPO, reexec_in_venv  # noqa: E402

JAX_VERSION = "0.10.2"
reexec_in_venv(JAX_VERSION)

os.environ["JAX_PLATFORMS"] = "cpu"

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import export  # noqa: E402

jax.config.update("jax_enable_x64", True)
# Source locations in the module name files without the folders of the machine that made it.
jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/")

OUT = os.path.join(REPO, "tests", "data", "fortran", f"jax-{JAX_VERSION}", "lennard_jones")
SIZES = (4, 13)
EPSILON, SIGMA = 1.0, 1.0
SPACING, JITTER = 1.12, 0.05


def energy(positions):
    """The Lennard-Jones energy of positions: f64[n, 3], each pair counted once."""
    n = positions.shape[0]
    diff = positions[:, None, :] - positions[None, :, :]
    r2 = jnp.sum(diff * diff, axis=-1)
    pair = ~jnp.eye(n, dtype=bool)
    # The diagonal (an atom with itself) is left out; r2 = 1 there keeps its gradient finite.
    s6 = (SIGMA * SIGMA / jnp.where(pair, r2, 1.0)) ** 3
    return 0.5 * jnp.sum(jnp.where(pair, 4.0 * EPSILON * (s6 * s6 - s6), 0.0))


def energy_and_gradient(positions):
    return energy(positions), jax.grad(energy)(positions)


def lattice(n, rng):
    side = int(np.ceil(n ** (1 / 3)))
    points = np.array([(i, j, k) for i in range(side) for j in range(side) for k in range(side)], dtype=np.float64)
    return points[:n] * SPACING + rng.uniform(-JITTER, JITTER, size=(n, 3))


def write_text(path, positions, e, grad):
    with open(path, "w") as f:
        f.write(f"{positions.shape[0]}\n")
        for row in positions:
            f.write(" ".join(f"{v:.17g}" for v in row) + "\n")
        f.write(f"{float(e):.17g}\n")
        for row in grad:
            f.write(" ".join(f"{v:.17g}" for v in row) + "\n")


def main():
    (n,) = export.symbolic_shape("n")
    spec = jax.ShapeDtypeStruct((n, 3), np.float64)
    exp = export.export(jax.jit(energy_and_gradient), platforms=("cpu",))(spec)
    serialized = exp.serialize()
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    with open(os.path.join(OUT, "model.jaxexport"), "wb") as f:
        f.write(serialized)
    print(f"in_avals {exp.in_avals}, out_avals {exp.out_avals}")
    # The answers are the artifact's (JAX's own deserializer, then call); the exported object
    # and the function itself must agree with them.
    loaded = export.deserialize(serialized)
    rng = np.random.default_rng(57)
    for size in SIZES:
        positions = lattice(size, rng)
        e, grad = loaded.call(positions)
        e_direct, grad_direct = energy_and_gradient(positions)
        np.testing.assert_allclose(e, e_direct, rtol=1e-12)
        np.testing.assert_allclose(grad, grad_direct, rtol=1e-12, atol=1e-12)
        # The gradient is the energy's: a central difference agrees.
        h = 1e-6
        step = np.zeros_like(positions)
        step[0, 0] = h
        numeric = (float(energy(positions + step)) - float(energy(positions - step))) / (2 * h)
        np.testing.assert_allclose(numeric, grad[0, 0], rtol=1e-5)
        write_text(os.path.join(OUT, f"n{size}.txt"), positions, e, np.asarray(grad))
        print(f"n={size}: energy {float(e):.6f}, |gradient| {np.linalg.norm(grad):.6f}")


if __name__ == "__main__":
    main()
